/* Hashes and TFRecord framing of the transform job, over whole columns at a time.
 *
 * fingerprint64: FarmHash Fingerprint64 (farmhashna Hash64), the hash of TensorFlow's
 *     tf.strings.to_hash_bucket_fast, tf.fingerprint and tf.sparse.cross_hashed.
 * siphash: SipHash-2-4 with a 128-bit key, the hash of tf.strings.to_hash_bucket_strong.
 * frame: TFRecord framing (length, masked CRC-32C of the length, data, masked CRC-32C).
 *
 * Written from the published algorithm descriptions; tests/transform checks every function
 * against TensorFlow on strings of every length class.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../io/_crc32c.h"

static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v; /* little-endian hosts only (x86-64, aarch64) */
}

static inline uint32_t load32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t rotr(uint64_t v, int s) { return s == 0 ? v : (v >> s) | (v << (64 - s)); }
static inline uint64_t rotl(uint64_t v, int s) { return (v << s) | (v >> (64 - s)); }
static inline uint64_t mix47(uint64_t v) { return v ^ (v >> 47); }

#define K0 0xc3a5c85c97cb3127ULL
#define K1 0xb492b66fbe98f273ULL
#define K2 0x9ae16a3b2f90404fULL

static inline uint64_t len16(uint64_t u, uint64_t v, uint64_t mul) {
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t short0to16(const unsigned char *s, size_t n) {
    if (n >= 8) {
        uint64_t mul = K2 + n * 2;
        uint64_t a = load64(s) + K2;
        uint64_t b = load64(s + n - 8);
        uint64_t c = rotr(b, 37) * mul + a;
        uint64_t d = (rotr(a, 25) + b) * mul;
        return len16(c, d, mul);
    }
    if (n >= 4) {
        uint64_t mul = K2 + n * 2;
        uint64_t a = load32(s);
        return len16(n + (a << 3), load32(s + n - 4), mul);
    }
    if (n > 0) {
        uint8_t a = s[0], b = s[n >> 1], c = s[n - 1];
        uint32_t y = (uint32_t)a + ((uint32_t)b << 8);
        uint32_t z = (uint32_t)n + ((uint32_t)c << 2);
        return mix47(y * K2 ^ z * K0) * K2;
    }
    return K2;
}

static uint64_t short17to32(const unsigned char *s, size_t n) {
    uint64_t mul = K2 + n * 2;
    uint64_t a = load64(s) * K1, b = load64(s + 8);
    uint64_t c = load64(s + n - 8) * mul, d = load64(s + n - 16) * K2;
    return len16(rotr(a + b, 43) + rotr(c, 30) + d, a + rotr(b + K2, 18) + c, mul);
}

static uint64_t short33to64(const unsigned char *s, size_t n) {
    uint64_t mul = K2 + n * 2;
    uint64_t a = load64(s) * K2, b = load64(s + 8);
    uint64_t c = load64(s + n - 8) * mul, d = load64(s + n - 16) * K2;
    uint64_t y = rotr(a + b, 43) + rotr(c, 30) + d;
    uint64_t z = len16(y, a + rotr(b + K2, 18) + c, mul);
    uint64_t e = load64(s + 16) * mul, f = load64(s + 24);
    uint64_t g = (y + load64(s + n - 32)) * mul, h = (z + load64(s + n - 24)) * mul;
    return len16(rotr(e + f, 43) + rotr(g, 30) + h, e + rotr(f + a, 18) + g, mul);
}

typedef struct { uint64_t first, second; } pair64;

static inline pair64 weak32(const unsigned char *s, uint64_t a, uint64_t b) {
    uint64_t w = load64(s), x = load64(s + 8), y = load64(s + 16), z = load64(s + 24);
    a += w;
    b = rotr(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rotr(a, 44);
    pair64 out = {a + z, b + c};
    return out;
}

static uint64_t fingerprint64(const unsigned char *s, size_t n) {
    if (n <= 16) return short0to16(s, n);
    if (n <= 32) return short17to32(s, n);
    if (n <= 64) return short33to64(s, n);
    const uint64_t seed = 81;
    uint64_t x = seed, y = seed * K1 + 113, z = mix47(y * K2 + 113) * K2, t;
    pair64 v = {0, 0}, w = {0, 0};
    x = x * K2 + load64(s);
    const unsigned char *end = s + ((n - 1) / 64) * 64;
    const unsigned char *last64 = end + ((n - 1) & 63) - 63;
    do {
        x = rotr(x + y + v.first + load64(s + 8), 37) * K1;
        y = rotr(y + v.second + load64(s + 48), 42) * K1;
        x ^= w.second;
        y += v.first + load64(s + 40);
        z = rotr(z + w.first, 33) * K1;
        v = weak32(s, v.second * K1, x + w.first);
        w = weak32(s + 32, z + w.second, y + load64(s + 16));
        t = z; z = x; x = t;
        s += 64;
    } while (s != end);
    uint64_t mul = K1 + ((z & 0xff) << 1);
    s = last64;
    w.first += ((n - 1) & 63);
    v.first += w.first;
    w.first += v.first;
    x = rotr(x + y + v.first + load64(s + 8), 37) * mul;
    y = rotr(y + v.second + load64(s + 48), 42) * mul;
    x ^= w.second * 9;
    y += v.first * 9 + load64(s + 40);
    z = rotr(z + w.first, 33) * mul;
    v = weak32(s, v.second * mul, x + w.first);
    w = weak32(s + 32, z + w.second, y + load64(s + 16));
    t = z; z = x; x = t;
    return len16(len16(v.first, w.first, mul) + mix47(y) * K0 + z,
                 len16(v.second, w.second, mul) + x, mul);
}

#define SIPROUND                                                             \
    do {                                                                     \
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);            \
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                               \
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                               \
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);            \
    } while (0)

static uint64_t siphash24(uint64_t k0, uint64_t k1, const unsigned char *s, size_t n) {
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    size_t whole = n - (n % 8);
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load64(s + i);
        v3 ^= m;
        SIPROUND; SIPROUND;
        v0 ^= m;
    }
    uint64_t b = ((uint64_t)n) << 56;
    for (size_t i = 0; i < n % 8; i++) b |= ((uint64_t)s[whole + i]) << (8 * i);
    v3 ^= b;
    SIPROUND; SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND; SIPROUND; SIPROUND; SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* Parses (data, offsets[, ...]) where offsets is an int64 buffer of n + 1 entries. */
static int get_strings(PyObject *data_obj, PyObject *off_obj, Py_buffer *data, Py_buffer *offs,
                       Py_ssize_t *count) {
    if (PyObject_GetBuffer(data_obj, data, PyBUF_SIMPLE) < 0) return -1;
    if (PyObject_GetBuffer(off_obj, offs, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(data);
        return -1;
    }
    if (offs->len % 8 != 0 || offs->len < 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must be int64 with at least one entry");
        goto fail;
    }
    *count = offs->len / 8 - 1;
    const int64_t *o = (const int64_t *)offs->buf;
    for (Py_ssize_t i = 0; i < *count; i++) {
        if (o[i] < 0 || o[i + 1] < o[i] || o[i + 1] > data->len) {
            PyErr_SetString(PyExc_ValueError, "offsets out of range of the data");
            goto fail;
        }
    }
    return 0;
fail:
    PyBuffer_Release(data);
    PyBuffer_Release(offs);
    return -1;
}

static PyObject *hash_strings(PyObject *args, int strong) {
    PyObject *data_obj, *off_obj;
    unsigned long long k0 = 0, k1 = 0;
    if (strong) {
        if (!PyArg_ParseTuple(args, "OOKK", &data_obj, &off_obj, &k0, &k1)) return NULL;
    } else if (!PyArg_ParseTuple(args, "OO", &data_obj, &off_obj)) {
        return NULL;
    }
    Py_buffer data, offs;
    Py_ssize_t n;
    if (get_strings(data_obj, off_obj, &data, &offs, &n) < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 8);
    if (out != NULL) {
        uint64_t *h = (uint64_t *)PyBytes_AS_STRING(out);
        const unsigned char *buf = (const unsigned char *)data.buf;
        const int64_t *o = (const int64_t *)offs.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            const unsigned char *s = buf + o[i];
            size_t len = (size_t)(o[i + 1] - o[i]);
            h[i] = strong ? siphash24(k0, k1, s, len) : fingerprint64(s, len);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&offs);
    return out;
}

static PyObject *py_fingerprint64(PyObject *self, PyObject *args) { return hash_strings(args, 0); }
static PyObject *py_siphash(PyObject *self, PyObject *args) { return hash_strings(args, 1); }

static PyObject *py_frame(PyObject *self, PyObject *args) {
    PyObject *data_obj, *off_obj;
    if (!PyArg_ParseTuple(args, "OO", &data_obj, &off_obj)) return NULL;
    Py_buffer data, offs;
    Py_ssize_t n;
    if (get_strings(data_obj, off_obj, &data, &offs, &n) < 0) return NULL;
    const int64_t *o = (const int64_t *)offs.buf;
    Py_ssize_t total = (o[n] - o[0]) + 16 * n;
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out != NULL) {
        unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
        const unsigned char *buf = (const unsigned char *)data.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t len = (uint64_t)(o[i + 1] - o[i]);
            memcpy(p, &len, 8);
            uint32_t c = bp_crc32c_masked(bp_crc32c(0, p, 8, 0));
            memcpy(p + 8, &c, 4);
            memcpy(p + 12, buf + o[i], len);
            c = bp_crc32c_masked(bp_crc32c(0, buf + o[i], len, 0));
            memcpy(p + 12 + len, &c, 4);
            p += 16 + len;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&offs);
    return out;
}

/* ---- tf.train.Example serialization of whole batches ---------------------------------- */

static inline size_t varint_size(uint64_t v) {
    /* 1 + floor(log2(v) / 7), from the position of the highest set bit. */
    int bits = 64 - __builtin_clzll(v | 1);
    return (size_t)((bits * 9 + 64) / 64);
}

static inline unsigned char *put_varint(unsigned char *p, uint64_t v) {
    while (v >= 0x80) { *p++ = (unsigned char)(v | 0x80); v >>= 7; }
    *p++ = (unsigned char)v;
    return p;
}

typedef struct {
    Py_buffer key, values, splits;
    int is_float;
    const int64_t *s;
} feat_t;

/* Bytes of the packed values of feature f in row r. */
static inline size_t payload_size(const feat_t *f, Py_ssize_t r) {
    int64_t a = f->s[r], b = f->s[r + 1];
    if (f->is_float) return (size_t)(b - a) * 4;
    const int64_t *v = (const int64_t *)f->values.buf;
    size_t n = 0;
    for (int64_t i = a; i < b; i++) n += varint_size((uint64_t)v[i]);
    return n;
}

/* Sizes of the nested messages of feature f in row r: list, Feature and map entry. */
static inline void feature_sizes(const feat_t *f, size_t payload, size_t *list, size_t *feat,
                                 size_t *entry) {
    *list = payload ? 1 + varint_size(payload) + payload : 0;
    *feat = 1 + varint_size(*list) + *list;
    size_t klen = (size_t)f->key.len;
    *entry = 1 + varint_size(klen) + klen + 1 + varint_size(*feat) + *feat;
}

static PyObject *py_serialize(PyObject *self, PyObject *args) {
    Py_ssize_t n;
    PyObject *specs;
    if (!PyArg_ParseTuple(args, "nO", &n, &specs)) return NULL;
    PyObject *seq = PySequence_Fast(specs, "features must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t nf = PySequence_Fast_GET_SIZE(seq);
    feat_t *fs = (feat_t *)PyMem_Calloc(nf ? nf : 1, sizeof(feat_t));
    size_t *sizes = NULL, *bodies = NULL;
    PyObject *data = NULL, *offsets = NULL, *result = NULL;
    Py_ssize_t got = 0;
    if (fs == NULL) { PyErr_NoMemory(); goto done; }
    for (; got < nf; got++) {
        PyObject *k, *v, *sp;
        int is_float;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, got), "OOOp", &k, &v, &sp,
                              &is_float)) goto done;
        feat_t *f = &fs[got];
        if (PyObject_GetBuffer(k, &f->key, PyBUF_SIMPLE) < 0) goto done;
        if (PyObject_GetBuffer(v, &f->values, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&f->key); goto done;
        }
        if (PyObject_GetBuffer(sp, &f->splits, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&f->key); PyBuffer_Release(&f->values); goto done;
        }
        f->is_float = is_float;
        f->s = (const int64_t *)f->splits.buf;
        Py_ssize_t width = is_float ? 4 : 8;
        if (f->splits.len != (n + 1) * 8 || f->s[0] < 0 || f->s[n] * width > f->values.len) {
            PyErr_SetString(PyExc_ValueError, "row splits do not match the values");
            got++;
            goto done;
        }
        for (Py_ssize_t r = 0; r < n; r++) {
            if (f->s[r + 1] < f->s[r]) {
                PyErr_SetString(PyExc_ValueError, "row splits must not decrease");
                got++;
                goto done;
            }
        }
    }
    /* Pass 1: each row's Features size. Float payloads are 4 bytes a value; int payloads
     * (varints) are measured once here and kept for pass 2. */
    sizes = (size_t *)PyMem_Malloc((size_t)(n ? n : 1) * (size_t)(nf ? nf : 1) * sizeof(size_t));
    bodies = (size_t *)PyMem_Malloc((size_t)(n ? n : 1) * sizeof(size_t));
    offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 8);
    if (sizes == NULL || bodies == NULL || offsets == NULL) {
        if (offsets != NULL) PyErr_NoMemory();
        goto done;
    }
    int64_t *off = (int64_t *)PyBytes_AS_STRING(offsets);
    off[0] = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        size_t body = 0;
        size_t *row_sizes = sizes + r * nf;
        for (Py_ssize_t j = 0; j < nf; j++) {
            size_t pl = payload_size(&fs[j], r), list, feat, entry;
            row_sizes[j] = pl;
            feature_sizes(&fs[j], pl, &list, &feat, &entry);
            body += 1 + varint_size(entry) + entry;
        }
        bodies[r] = body;
        off[r + 1] = off[r] + (int64_t)(1 + varint_size(body) + body);
    }
    Py_END_ALLOW_THREADS
    data = PyBytes_FromStringAndSize(NULL, off[n]);
    if (data == NULL) goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(data);
    /* Pass 2: write. */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        *p++ = 0x0a; /* Example.features */
        p = put_varint(p, bodies[r]);
        const size_t *row_sizes = sizes + r * nf;
        for (Py_ssize_t j = 0; j < nf; j++) {
            const feat_t *f = &fs[j];
            size_t pl = row_sizes[j], list, feat, entry;
            feature_sizes(f, pl, &list, &feat, &entry);
            *p++ = 0x0a;
            p = put_varint(p, entry);
            *p++ = 0x0a;
            p = put_varint(p, (uint64_t)f->key.len);
            memcpy(p, f->key.buf, (size_t)f->key.len);
            p += f->key.len;
            *p++ = 0x12;
            p = put_varint(p, feat);
            *p++ = f->is_float ? 0x12 : 0x1a;
            p = put_varint(p, list);
            if (pl) {
                *p++ = 0x0a;
                p = put_varint(p, pl);
                int64_t a = f->s[r], b = f->s[r + 1];
                if (f->is_float) {
                    memcpy(p, (const char *)f->values.buf + a * 4, (size_t)(b - a) * 4);
                    p += (b - a) * 4;
                } else {
                    const int64_t *v = (const int64_t *)f->values.buf;
                    for (int64_t i = a; i < b; i++) p = put_varint(p, (uint64_t)v[i]);
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(2, data, offsets);
done:
    for (Py_ssize_t j = 0; j < got && j < nf; j++) {
        if (fs[j].splits.buf) PyBuffer_Release(&fs[j].splits);
        if (fs[j].values.buf) PyBuffer_Release(&fs[j].values);
        if (fs[j].key.buf) PyBuffer_Release(&fs[j].key);
    }
    PyMem_Free(fs);
    PyMem_Free(sizes);
    PyMem_Free(bodies);
    Py_XDECREF(data);
    Py_XDECREF(offsets);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"fingerprint64", py_fingerprint64, METH_VARARGS,
     "fingerprint64(data, offsets) -> bytes of n uint64: FarmHash Fingerprint64 per string"},
    {"siphash", py_siphash, METH_VARARGS,
     "siphash(data, offsets, k0, k1) -> bytes of n uint64: SipHash-2-4 per string"},
    {"frame", py_frame, METH_VARARGS,
     "frame(data, offsets) -> the records data[offsets[i]:offsets[i+1]] framed as TFRecords"},
    {"serialize", py_serialize, METH_VARARGS,
     "serialize(n, [(key, values, row_splits, is_float)]) -> (data, int64 offsets): n "
     "tf.train.Example messages, values int64 or float32, row i = values[s[i]:s[i+1]]"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hashes",
                                    "Column hashes and TFRecord framing for beam_prep.transform.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__hashes(void) {
    bp_crc32c_init();
    return PyModule_Create(&module);
}
