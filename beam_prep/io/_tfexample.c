/*
 * Columnar tf.Example decoding and TFRecord framing for beam_prep (optional native part).
 *
 * decode(buf, starts, lengths, keys) reads a batch of serialized tf.Example records that
 * lie in one byte buffer and returns, for each requested feature, flat value buffers and
 * a value count per decoded record (-1 = feature absent).  Records outside the canonical
 * encoding (unknown fields, a key twice, malformed wire data) are not guessed at: they
 * are flagged for the caller's reference decoder (tfx-bsl).  A feature seen with two
 * value kinds in one batch stops the batch (mixed = True): the reference decides.
 *
 * frame(buf, check_data) walks TFRecord framing and verifies every length CRC (masked
 * CRC-32C, as TFRecord defines it) and, when check_data is true, every payload CRC.
 * crc32c(buf) is the plain CRC-32C (see _crc32c.c).
 *
 * The Python side is beam_prep/io/inputs/example_decoder.py (decode; without this module it falls
 * back to tfx-bsl for every record, with the same results) and beam_prep/io/tfrecord_framing.py
 * (frame and crc32c; without this module their pure-Python versions run).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_crc32c.h"

static inline uint32_t rd_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

enum { KIND_NONE = 0, KIND_BYTES = 1, KIND_FLOAT = 2, KIND_INT64 = 3 };

/* A read-only buffer that owns malloc'ed memory: results leave without a copy. */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len;
} Owned;

static void owned_dealloc(Owned *self) {
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int owned_getbuffer(Owned *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : (char *)"",
                             self->len, 1, flags);
}

static PyBufferProcs owned_as_buffer = {(getbufferproc)owned_getbuffer, NULL};

static PyTypeObject OwnedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "beam_prep.io._tfexample.Owned",
    .tp_basicsize = sizeof(Owned),
    .tp_dealloc = (destructor)owned_dealloc,
    .tp_as_buffer = &owned_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory returned by decode()/frame() (buffer protocol, read-only).",
};

/* Hands p (malloc'ed, may be NULL) to a new Owned object; frees p on failure. */
static PyObject *owned_from(void *p, size_t n) {
    Owned *o = PyObject_New(Owned, &OwnedType);
    if (!o) {
        free(p);
        return NULL;
    }
    o->data = (char *)p;
    o->len = (Py_ssize_t)n;
    return (PyObject *)o;
}

typedef struct {
    char *p;
    size_t n, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->n + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) cap *= 2;
    char *q = (char *)realloc(b->p, cap);
    if (!q) return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, size_t k) {
    if (buf_reserve(b, k)) return -1;
    memcpy(b->p + b->n, src, k);
    b->n += k;
    return 0;
}

/* Reads a varint; 0 on malformed or truncated input. */
static inline int rd_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    int shift = 0;
    while (p < end) {
        uint8_t b = *p++;
        if (shift == 63 && (b & 0xFE)) return 0;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 1;
        }
        shift += 7;
        if (shift > 63) return 0;
    }
    return 0;
}

/* Reads a length prefix and checks the payload fits before end. */
static inline int rd_len(const uint8_t **pp, const uint8_t *end, const uint8_t **payload,
                         const uint8_t **payload_end) {
    uint64_t n;
    if (!rd_varint(pp, end, &n)) return 0;
    if (n > (uint64_t)(end - *pp)) return 0;
    *payload = *pp;
    *payload_end = *pp + n;
    *pp = *payload_end;
    return 1;
}

typedef struct {
    int kind;
    int all_one;  /* every present row holds exactly one value */
    Buf values;   /* bytes data, float32 or int64 values */
    Buf offsets;  /* int64 end offset of every bytes value */
    uint8_t *present; /* per decoded row: 1 = the feature has a (possibly empty) list */
    int32_t *counts;  /* per decoded row: number of values */
    int64_t cur;  /* count in the current record, -1 = absent */
    int64_t seen; /* last record that had this key */
    size_t save_values, save_offsets;
} Column;

typedef struct {
    const char **keys;
    Py_ssize_t *key_len;
    Py_ssize_t ncols;
    int32_t *table;
    uint64_t mask;
} Keys;

static inline uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static inline int lookup(const Keys *k, const uint8_t *p, size_t n) {
    uint64_t slot = fnv1a(p, n) & k->mask;
    for (;;) {
        int32_t j = k->table[slot];
        if (j < 0) return -1;
        if ((size_t)k->key_len[j] == n) {
            const char *q = k->keys[j];
            size_t i = 0;
            while (i < n && (uint8_t)q[i] == p[i]) i++;
            if (i == n) return j;
        }
        slot = (slot + 1) & k->mask;
    }
}

/* Reads a field tag. Only the one-byte forms that serializers write for the fields of
 * tf.Example are accepted; anything else goes to the reference decoder. */
static inline int rd_tag(const uint8_t **pp, const uint8_t *end, unsigned *tag) {
    if (*pp >= end || **pp >= 0x80) return 0;
    *tag = **pp;
    (*pp)++;
    return 1;
}

/* Whether p[0:n] is valid UTF-8 (protobuf refuses map keys that are not). */
static int utf8_valid(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - i <= k) return 0; /* truncated sequence */
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + j] & 0x3F);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += k + 1;
    }
    return 1;
}

/* Reads one Feature's list and appends its values to col (col NULL: only checks it).
 * Returns the value count, -1 for data the reference decoder must judge, -2 for OOM. */
static int64_t read_list(Column *col, int kind, const uint8_t *p, const uint8_t *end) {
    int64_t count = 0;
    while (p < end) {
        unsigned tag;
        const uint8_t *a, *b;
        if (!rd_tag(&p, end, &tag)) return -1;
        if (kind == KIND_BYTES) {
            if (tag != 0x0A || !rd_len(&p, end, &a, &b)) return -1;
            if (col) {
                if (buf_put(&col->values, a, (size_t)(b - a))) return -2;
                int64_t off = (int64_t)col->values.n;
                if (buf_put(&col->offsets, &off, sizeof off)) return -2;
            }
            count++;
        } else if (kind == KIND_FLOAT) {
            if (tag == 0x0A) {
                if (!rd_len(&p, end, &a, &b) || (b - a) % 4) return -1;
                if (col && buf_put(&col->values, a, (size_t)(b - a))) return -2;
                count += (b - a) / 4;
            } else if (tag == 0x0D) {
                if (end - p < 4) return -1;
                if (col && buf_put(&col->values, p, 4)) return -2;
                p += 4;
                count++;
            } else {
                return -1;
            }
        } else {
            uint64_t v;
            if (tag == 0x0A) {
                if (!rd_len(&p, end, &a, &b)) return -1;
                while (a < b) {
                    if (!rd_varint(&a, b, &v)) return -1;
                    if (col && buf_put(&col->values, &v, 8)) return -2;
                    count++;
                }
            } else if (tag == 0x08) {
                if (!rd_varint(&p, end, &v)) return -1;
                if (col && buf_put(&col->values, &v, 8)) return -2;
                count++;
            } else {
                return -1;
            }
        }
    }
    return count;
}

/* Parses a Feature message: 0 = a list of *kind in [*ls, *le), 1 = empty (no kind set,
 * read as missing), -1 = anything else. */
static int parse_feature(const uint8_t *vs, const uint8_t *ve, int *kind, const uint8_t **ls,
                         const uint8_t **le) {
    unsigned tag;
    if (vs == ve) return 1;
    if (!rd_tag(&vs, ve, &tag) || (tag != 0x0A && tag != 0x12 && tag != 0x1A)) return -1;
    if (!rd_len(&vs, ve, ls, le) || vs != ve) return -1;
    *kind = (int)(tag >> 3);
    return 0;
}

enum { REC_OK = 0, REC_FALLBACK = 1, REC_MIXED = 2, REC_NOMEM = 3 };

/* Decodes one record into the columns; touched[] lists the columns it wrote. Features
 * that were not requested are checked (keys, wire format) but not stored, so a record
 * decodes here only if the reference decoder would accept it too. */
static int decode_record(const uint8_t *p, const uint8_t *end, int64_t r, const Keys *keys,
                         Column *cols, int32_t *touched, Py_ssize_t *ntouched) {
    int features_seen = 0;
    while (p < end) {
        unsigned tag;
        const uint8_t *fs, *fe;
        if (!rd_tag(&p, end, &tag) || tag != 0x0A || features_seen) return REC_FALLBACK;
        if (!rd_len(&p, end, &fs, &fe)) return REC_FALLBACK;
        features_seen = 1;
        while (fs < fe) {
            const uint8_t *es, *ee, *key = (const uint8_t *)"", *vs = NULL, *ve = NULL;
            const uint8_t *ls = NULL, *le = NULL;
            size_t key_len = 0;
            int has_key = 0, has_value = 0, kind = KIND_NONE;
            if (!rd_tag(&fs, fe, &tag) || tag != 0x0A) return REC_FALLBACK;
            if (!rd_len(&fs, fe, &es, &ee)) return REC_FALLBACK;
            while (es < ee) {
                const uint8_t *a, *b;
                if (!rd_tag(&es, ee, &tag)) return REC_FALLBACK;
                if (tag == 0x0A && !has_key) {
                    if (!rd_len(&es, ee, &a, &b)) return REC_FALLBACK;
                    key = a;
                    key_len = (size_t)(b - a);
                    has_key = 1;
                } else if (tag == 0x12 && !has_value) {
                    if (!rd_len(&es, ee, &vs, &ve)) return REC_FALLBACK;
                    has_value = 1;
                } else {
                    return REC_FALLBACK;
                }
            }
            int shape = has_value ? parse_feature(vs, ve, &kind, &ls, &le) : 1;
            if (shape < 0) return REC_FALLBACK;
            int j = lookup(keys, key, key_len);
            if (j < 0) { /* not requested: check it, store nothing */
                if (!utf8_valid(key, key_len)) return REC_FALLBACK;
                if (shape == 0 && read_list(NULL, kind, ls, le) < 0) return REC_FALLBACK;
                continue;
            }
            Column *c = &cols[j];
            if (c->seen == r) return REC_FALLBACK; /* key twice: protobuf keeps the last */
            c->seen = r;
            c->save_values = c->values.n;
            c->save_offsets = c->offsets.n;
            touched[(*ntouched)++] = j;
            if (shape == 1) continue; /* empty Feature: missing */
            if (c->kind == KIND_NONE) {
                c->kind = kind;
            } else if (c->kind != kind) {
                return REC_MIXED;
            }
            int64_t count = read_list(c, kind, ls, le);
            if (count == -2) return REC_NOMEM;
            if (count < 0) return REC_FALLBACK;
            c->cur = count;
        }
    }
    return REC_OK;
}

/* Gives the buffer's memory to a new Owned object (the Buf is left empty). */
static PyObject *take(Buf *b) {
    PyObject *o = owned_from(b->p, b->n);
    b->p = NULL;
    b->n = b->cap = 0;
    return o;
}

static PyObject *py_decode(PyObject *self, PyObject *args) {
    Py_buffer data, starts, lengths;
    PyObject *key_seq;
    if (!PyArg_ParseTuple(args, "y*y*y*O", &data, &starts, &lengths, &key_seq)) return NULL;
    PyObject *result = NULL, *fast = NULL;
    Column *cols = NULL;
    Keys keys = {0};
    int32_t *touched = NULL;
    Buf flags = {0};
    int status = REC_OK;
    Py_ssize_t n = starts.len / 8;
    if (lengths.len != starts.len) {
        PyErr_SetString(PyExc_ValueError, "starts and lengths differ in size");
        goto done;
    }
    fast = PySequence_Fast(key_seq, "keys must be a sequence of bytes");
    if (!fast) goto done;
    Py_ssize_t ncols = PySequence_Fast_GET_SIZE(fast);
    keys.ncols = ncols;
    keys.keys = calloc((size_t)ncols + 1, sizeof(char *));
    keys.key_len = calloc((size_t)ncols + 1, sizeof(Py_ssize_t));
    uint64_t size = 8;
    while (size < (uint64_t)(4 * ncols)) size *= 2;
    keys.mask = size - 1;
    keys.table = malloc(size * sizeof(int32_t));
    cols = calloc((size_t)ncols + 1, sizeof(Column));
    touched = malloc(((size_t)ncols + 1) * sizeof(int32_t));
    if (!keys.keys || !keys.key_len || !keys.table || !cols || !touched) {
        PyErr_NoMemory();
        goto done;
    }
    for (uint64_t i = 0; i < size; i++) keys.table[i] = -1;
    for (Py_ssize_t j = 0; j < ncols; j++) {
        PyObject *k = PySequence_Fast_GET_ITEM(fast, j);
        char *s;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(k, &s, &len) < 0) goto done;
        keys.keys[j] = s;
        keys.key_len[j] = len;
        uint64_t slot = fnv1a((const uint8_t *)s, (size_t)len) & keys.mask;
        while (keys.table[slot] >= 0) slot = (slot + 1) & keys.mask;
        keys.table[slot] = (int32_t)j;
        cols[j].seen = -1;
        cols[j].cur = -1;
        cols[j].all_one = 1;
        cols[j].present = calloc((size_t)n + 1, 1);
        cols[j].counts = calloc((size_t)n + 1, sizeof(int32_t));
        if (!cols[j].present || !cols[j].counts) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (buf_reserve(&flags, (size_t)n + 1)) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *st = (const int64_t *)starts.buf, *ln = (const int64_t *)lengths.buf;
    const uint8_t *base = (const uint8_t *)data.buf;
    int bad_bounds = 0;
    Py_ssize_t row = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n && status != REC_MIXED && status != REC_NOMEM; r++) {
        if (st[r] < 0 || ln[r] < 0 || st[r] > data.len || ln[r] > data.len - st[r]) {
            bad_bounds = 1;
            break;
        }
        Py_ssize_t nt = 0;
        status = decode_record(base + st[r], base + st[r] + ln[r], r, &keys, cols, touched,
                               &nt);
        flags.p[flags.n++] = (char)(status == REC_OK ? 0 : 1);
        for (Py_ssize_t t = 0; t < nt; t++) {
            Column *c = &cols[touched[t]];
            if (status != REC_OK) { /* undo the record's values */
                c->values.n = c->save_values;
                c->offsets.n = c->save_offsets;
            } else if (c->cur >= 0) {
                c->present[row] = 1;
                c->counts[row] = (int32_t)c->cur;
                if (c->cur != 1) c->all_one = 0;
            }
            c->cur = -1;
        }
        if (status == REC_OK) row++;
    }
    Py_END_ALLOW_THREADS
    if (bad_bounds) {
        PyErr_SetString(PyExc_ValueError, "a record lies outside the buffer");
        goto done;
    }
    if (status == REC_NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *col_list = PyList_New(ncols);
    if (!col_list) goto done;
    for (Py_ssize_t j = 0; j < ncols; j++) {
        Column *c = &cols[j];
        PyObject *t = Py_BuildValue("(iiNNNN)", c->kind, c->all_one,
                                    owned_from(c->present, (size_t)row),
                                    owned_from(c->counts, (size_t)row * sizeof(int32_t)),
                                    take(&c->values), take(&c->offsets));
        c->present = NULL;
        c->counts = NULL;
        if (!t) {
            Py_DECREF(col_list);
            goto done;
        }
        PyList_SET_ITEM(col_list, j, t);
    }
    result = Py_BuildValue("(NON)", take(&flags),
                           status == REC_MIXED ? Py_True : Py_False, col_list);
done:
    if (cols) {
        for (Py_ssize_t j = 0; j < keys.ncols; j++) {
            free(cols[j].values.p);
            free(cols[j].offsets.p);
            free(cols[j].present);
            free(cols[j].counts);
        }
    }
    free(cols);
    free(touched);
    free(keys.keys);
    free(keys.key_len);
    free(keys.table);
    free(flags.p);
    Py_XDECREF(fast);
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&lengths);
    return result;
}

/* frame(buf, check_data) -> (starts, lengths, consumed, pending, corrupt, bad_data).
 * Stops at the first header whose length CRC does not match (corrupt = True, consumed =
 * its offset): no length after it can be trusted. A payload whose CRC does not match is
 * still framed (its length was checked) and its index is listed in bad_data. */
static PyObject *py_frame(PyObject *self, PyObject *args) {
    Py_buffer data;
    int check_data = 1;
    if (!PyArg_ParseTuple(args, "y*|p", &data, &check_data)) return NULL;
    Buf starts = {0}, lengths = {0}, bad = {0};
    const uint8_t *base = (const uint8_t *)data.buf;
    int64_t pos = 0, total = (int64_t)data.len, index = 0;
    uint64_t pending = 0; /* length of a record that does not fit, if known */
    int has_pending = 0, corrupt = 0;
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    while (total - pos >= 12) {
        uint64_t len;
        memcpy(&len, base + pos, 8); /* little-endian hosts only (x86-64, arm64) */
        if (bp_crc32c_masked(bp_crc32c(0, base + pos, 8, 0)) != rd_u32(base + pos + 8)) {
            corrupt = 1;
            break;
        }
        if (total - pos < 16 || len > (uint64_t)(total - pos - 16)) {
            pending = len;
            has_pending = 1;
            break;
        }
        int64_t s = pos + 12, l = (int64_t)len;
        if (buf_put(&starts, &s, 8) || buf_put(&lengths, &l, 8)) {
            nomem = 1;
            break;
        }
        if (check_data && bp_crc32c_masked(bp_crc32c(0, base + s, (size_t)l, 0)) !=
                              rd_u32(base + s + l) &&
            buf_put(&bad, &index, 8)) {
            nomem = 1;
            break;
        }
        index++;
        pos += 16 + l;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    PyObject *out = NULL;
    if (nomem) {
        PyErr_NoMemory();
    } else {
        out = Py_BuildValue("(NNLNON)", take(&starts), take(&lengths), (long long)pos,
                            has_pending ? PyLong_FromUnsignedLongLong(pending)
                                        : PyLong_FromLong(-1),
                            corrupt ? Py_True : Py_False, take(&bad));
    }
    free(starts.p);
    free(lengths.p);
    free(bad.p);
    return out;
}

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    Py_buffer data;
    unsigned int crc = 0;
    int software = 0;
    if (!PyArg_ParseTuple(args, "y*|Ip", &data, &crc, &software)) return NULL;
    uint32_t v;
    Py_BEGIN_ALLOW_THREADS
    v = bp_crc32c((uint32_t)crc, (const uint8_t *)data.buf, (size_t)data.len, software);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(v);
}

static PyObject *py_crc32c_hardware(PyObject *self, PyObject *noargs) {
    return PyBool_FromLong(bp_crc32c_hardware());
}

static PyMethodDef methods[] = {
    {"decode", py_decode, METH_VARARGS,
     "decode(buf, starts, lengths, keys) -> (flags, mixed, [(kind, all_one, present, "
     "counts, values, offsets)])"},
    {"frame", py_frame, METH_VARARGS,
     "frame(buf, check_data=True) -> (starts, lengths, consumed, pending_length, corrupt, "
     "bad_data)"},
    {"crc32c", py_crc32c, METH_VARARGS,
     "crc32c(buf, crc=0, software=False) -> CRC-32C of buf, continuing from crc"},
    {"crc32c_hardware", py_crc32c_hardware, METH_NOARGS,
     "crc32c_hardware() -> whether crc32c uses the SSE4.2 instruction"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tfexample",
                                    "Native tf.Example decoding for beam_prep.", -1, methods};

PyMODINIT_FUNC PyInit__tfexample(void) {
    if (PyType_Ready(&OwnedType) < 0) return NULL;
    bp_crc32c_init();
    return PyModule_Create(&module);
}
