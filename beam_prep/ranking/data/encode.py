"""Serialize tf.Example and ExampleListWithContext bytes without TensorFlow or protobuf objects.

The bytes parse to the same messages protobuf builds (tests check it) and follow the canonical
deterministic layout: map keys sorted bytewise (as C++ protobuf does), packed numeric lists,
fields in number order, the context always present.
Dense float features (LETOR) use a byte template filled with numpy, so the per-document cost
does not grow with the number of features in Python.

Wire layout used here::

    Example    { Features features = 1; }
    Features   { map<string, Feature> feature = 1; }       # entry: key = 1, value = 2
    Feature    { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; }
    ExampleListWithContext { repeated Example examples = 1; Example context = 2; }

Example:
    >>> enc = DenseFloatEncoder(["f1", "f2"], label_name="relevance", label_dtype="int64")
    >>> import numpy as np
    >>> exs = enc.encode(np.array([[1.0, 0.0]], np.float32), np.array([2.0]))
    >>> elwc = encode_elwc(exs, encode_features({}))
    >>> len(elwc) > 0
    True
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from beam_prep.errors import InputError

_FLOAT = struct.Struct("<f")
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_SMALL = [bytes((i,)) for i in range(0x80)]


def varint(n: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int (negative int64 → two's complement)."""
    if 0 <= n < 0x80:
        return _SMALL[n]
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _ld(tag: int, payload: bytes) -> bytes:
    """Length-delimited field."""
    return bytes((tag,)) + varint(len(payload)) + payload


def feature_bytes(dtype: str, values: Sequence[Any]) -> bytes:
    """Serialized ``Feature`` holding ``values`` (a list) as ``float``, ``int64`` or ``string``."""
    if dtype == "float":
        packed = np.asarray(values, dtype="<f4").tobytes()
        return _ld(0x12, _ld(0x0A, packed) if packed else b"")
    if dtype == "int64":
        packed = b"".join(varint(int(v)) for v in values)
        return _ld(0x1A, _ld(0x0A, packed) if packed else b"")
    if dtype == "string":
        items = b"".join(_ld(0x0A, v if isinstance(v, bytes) else str(v).encode("utf-8"))
                         for v in values)
        return _ld(0x0A, items)
    raise InputError(f"`dtype` must be float, int64 or string. Received: dtype={dtype!r}")


def encode_features(features: dict[str, tuple[str, Sequence[Any]]]) -> bytes:
    """Serialized ``Example`` from ``{name: (dtype, values)}``; keys sorted bytewise."""
    entries = []
    for key in sorted(features, key=lambda k: k.encode("utf-8")):
        dtype, values = features[key]
        value = _ld(0x12, feature_bytes(dtype, values))
        entries.append(_ld(0x0A, _ld(0x0A, key.encode("utf-8")) + value))
    body = b"".join(entries)
    return _ld(0x0A, body) if body else b""


def frame_example(example: bytes) -> bytes:
    """One serialized Example as an ELWC ``examples`` field (what :func:`encode_elwc` joins)."""
    return _ld(0x0A, example)


def encode_elwc(examples: Iterable[bytes], context: bytes) -> bytes:
    """Serialized ``ExampleListWithContext`` (context always present, possibly empty)."""
    return b"".join(_ld(0x0A, e) for e in examples) + _ld(0x12, context)


class DenseFloatEncoder:
    """Encodes documents with the same dense scalar float features plus a label.

    Args:
        names: feature keys, in the column order of the matrices passed to :meth:`encode`.
        label_name: key of the label.
        label_dtype: ``"float"`` or ``"int64"``.
    """

    def __init__(self, names: Sequence[str], *, label_name: str, label_dtype: str) -> None:
        if label_name in names:
            raise InputError(f"label name {label_name!r} collides with a feature name; rename one.")
        self.label_name = label_name
        self.label_dtype = label_dtype
        keys = sorted([*names, label_name], key=lambda k: k.encode("utf-8"))
        self._label_pos = keys.index(label_name)
        col_of = {n: i for i, n in enumerate(names)}
        pre, post = bytearray(), bytearray()
        pre_off: list[tuple[int, int]] = []
        post_off: list[tuple[int, int]] = []
        for pos, key in enumerate(keys):
            if key == label_name:
                continue
            k = key.encode("utf-8")
            entry_head = _ld(0x0A, k) + b"\x12\x08\x12\x06\x0a\x04"
            entry = _ld(0x0A, entry_head + b"\x00\x00\x00\x00")
            buf, offs = (pre, pre_off) if pos < self._label_pos else (post, post_off)
            offs.append((col_of[key], len(buf) + len(entry) - 4))
            buf += entry
        self._pre = np.frombuffer(bytes(pre), np.uint8)
        self._post = np.frombuffer(bytes(post), np.uint8)
        self._pre_cols = np.array([c for c, _ in pre_off], np.int64)
        self._pre_offs = np.array([o for _, o in pre_off], np.int64)
        self._post_cols = np.array([c for c, _ in post_off], np.int64)
        self._post_offs = np.array([o for _, o in post_off], np.int64)
        self._label_key = _ld(0x0A, label_name.encode("utf-8"))
        self._label_cache: dict[str, bytes] = {}

    def _fill(self, template: np.ndarray, cols: np.ndarray, offs: np.ndarray,
              values: np.ndarray) -> np.ndarray:
        n = values.shape[0]
        out = np.broadcast_to(template, (n, template.size)).copy()
        if cols.size:
            raw = np.ascontiguousarray(values[:, cols], dtype="<f4").view(np.uint8)
            out[:, offs[:, None] + np.arange(4)] = raw.reshape(n, cols.size, 4)
        return out

    def _label_entry(self, label: float) -> bytes:
        key = label.hex()  # keeps -0.0 apart from 0.0
        cached = self._label_cache.get(key)
        if cached is None:
            cached = self._label_cache[key] = self._make_label_entry(label)
        return cached

    def _make_label_entry(self, label: float) -> bytes:
        if self.label_dtype == "float":
            with np.errstate(over="ignore"):
                fits = not np.isinf(np.float32(label))
            if not fits:
                raise InputError(f"label {label!r} does not fit a float32 label (|x| <= "
                                 f"{_FLOAT32_MAX:.8g}); rescale the labels.")
            feat = b"\x12\x06\x0a\x04" + _FLOAT.pack(label)
        else:
            if not -(2**63) <= label < 2**63:
                raise InputError(f"label {label!r} does not fit an int64 label; rescale the "
                                 "labels or use --label_dtype=float.")
            v = varint(int(label))
            feat = _ld(0x1A, _ld(0x0A, v))
        return _ld(0x0A, self._label_key + _ld(0x12, feat))

    def frame_examples(self, values: np.ndarray, labels: np.ndarray) -> np.ndarray | list[bytes]:
        """Each document as an ELWC ``examples`` field: tag, length, serialized Example.

        Concatenating the rows of a list and then ``encode_elwc([], context)`` gives the same
        bytes as ``encode_elwc(self.encode(values, labels), context)``.

        Returns:
            A uint8 matrix ``[n, width]`` when every row has the same length (float labels, or
            int64 labels whose varints have one length, e.g. all in ``[0, 127]``); otherwise a
            list of ``bytes``.
        """
        n = values.shape[0]
        labels = np.asarray(labels, dtype=np.float64)
        uniq, inverse = np.unique(labels.view(np.int64), return_inverse=True)
        entries = [self._label_entry(float(x)) for x in uniq.view(np.float64)]
        if n == 0 or len({len(e) for e in entries}) != 1:
            return [frame_example(e) for e in self.encode(values, labels)]
        lab_len = len(entries[0])
        body_len = self._pre.size + lab_len + self._post.size
        example = b"\x0a" + varint(body_len)
        head = b"\x0a" + varint(len(example) + body_len) + example
        h, pre_end = len(head), len(head) + self._pre.size
        post_start = pre_end + lab_len
        template = np.zeros(post_start + self._post.size, np.uint8)
        template[:h] = np.frombuffer(head, np.uint8)
        template[h:pre_end] = self._pre
        template[post_start:] = self._post
        out = np.broadcast_to(template, (n, template.size)).copy()
        cols = np.concatenate([self._pre_cols, self._post_cols])
        offs = np.concatenate([self._pre_offs + h, self._post_offs + post_start])
        if cols.size:  # one strided float32 view per feature slot (slots are not aligned)
            fields = np.dtype({"names": [f"c{j}" for j in range(cols.size)],
                               "formats": ["<f4"] * cols.size, "offsets": offs.tolist(),
                               "itemsize": template.size})
            slots = out.reshape(-1).view(fields)
            src = np.asarray(values, dtype=np.float32)
            for j, c in enumerate(cols.tolist()):
                slots[f"c{j}"] = src[:, c]
        table = np.frombuffer(b"".join(entries), np.uint8).reshape(len(entries), lab_len)
        out[:, pre_end:post_start] = table[inverse.reshape(-1)]
        return out

    def encode(self, values: np.ndarray, labels: np.ndarray) -> list[bytes]:
        """Serialized Examples for ``values`` ``[n, len(names)]`` float32 and ``labels`` ``[n]``."""
        pre = self._fill(self._pre, self._pre_cols, self._pre_offs, values)
        post = self._fill(self._post, self._post_cols, self._post_offs, values)
        out = []
        for i in range(values.shape[0]):
            body = b"".join((pre[i].tobytes(), self._label_entry(float(labels[i])),
                             post[i].tobytes()))
            out.append(b"\x0a" + varint(len(body)) + body)
        return out
