"""Columnar ``tf.train.Example`` serialization: whole batches of encoded outputs to bytes.

Every row becomes one Example whose features are the encoded outputs in plan order (a
fixed order, so the bytes are deterministic): integer outputs as ``int64_list``, float
outputs as ``float_list``, packed (what ``SerializeToString`` of the proto3 message
writes). A fixed-width output of width ``w`` holds ``w`` values per row; a ragged one the
row's values (``tf.io.parse_example`` reads it with ``tf.io.RaggedFeature`` or
``VarLenFeature``). No per-row Python: every step is a numpy operation over the batch
(varints, lengths, one scatter per message segment).

Example:
    >>> data, offsets = serialize_examples(
    ...     [("a", Encoded("int64", np.array([[1], [300]])))], 2)
    >>> offsets.tolist()
    [0, 13, 27]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from beam_prep.transform.layers import Encoded

_SHIFTS = np.arange(10, dtype=np.uint64) * np.uint64(7)


def varint_lengths(values: np.ndarray) -> np.ndarray:
    """Bytes of each value's varint (negative int64 as its 64-bit two's complement: 10)."""
    v = values.astype(np.int64, copy=False).view(np.uint64)
    n = np.ones(len(v), np.int64)
    for k in range(1, 10):
        n += v >= (np.uint64(1) << np.uint64(7 * k))
    return n


def varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lengths, bytes)``: the varints of ``values``, concatenated."""
    v = values.astype(np.int64, copy=False).view(np.uint64)
    lengths = varint_lengths(v.view(np.int64))
    rep = np.repeat(v, lengths)
    starts = np.cumsum(lengths) - lengths
    pos = np.arange(len(rep), dtype=np.int64) - np.repeat(starts, lengths)
    out = ((rep >> _SHIFTS[pos]) & np.uint64(0x7F)).astype(np.uint8)
    out |= (pos < np.repeat(lengths, lengths) - 1).astype(np.uint8) << 7
    return lengths, out


class _Segments:
    """Per-row byte segments, concatenated in order for every row."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []

    def constant(self, data: bytes) -> None:
        self.parts.append((np.full(self.n, len(data), np.int64),
                           np.tile(np.frombuffer(data, np.uint8), self.n)))

    def varint(self, values: np.ndarray) -> None:
        self.parts.append(varints(values))

    def ragged(self, lengths: np.ndarray, data: np.ndarray) -> None:
        self.parts.append((lengths.astype(np.int64), data))

    def total(self) -> np.ndarray:
        out = np.zeros(self.n, np.int64)
        for lengths, _ in self.parts:
            out += lengths
        return out

    def join(self) -> tuple[np.ndarray, np.ndarray]:
        row_len = self.total()
        offsets = np.zeros(self.n + 1, np.int64)
        np.cumsum(row_len, out=offsets[1:])
        out = np.empty(int(offsets[-1]), np.uint8)
        at = offsets[:-1].copy()  # where each row's next segment goes
        for lengths, data in self.parts:
            src = np.cumsum(lengths) - lengths
            dest = np.repeat(at - src, lengths) + np.arange(len(data), dtype=np.int64)
            out[dest] = data
            at += lengths
        return out, offsets


def _payload(encoded: Encoded, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(bytes per row, bytes)`` of the packed values of one output."""
    if encoded.row_splits is not None:
        counts = np.diff(encoded.row_splits)
        flat = encoded.values
    else:
        width = encoded.values.shape[1] if encoded.values.ndim == 2 else 1
        counts = np.full(n, width, np.int64)
        flat = encoded.values.reshape(-1)
    if encoded.dtype == "float32":
        data = np.ascontiguousarray(flat, dtype="<f4").view(np.uint8)
        return counts * 4, data
    lengths, data = varints(np.asarray(flat, np.int64))
    row_of = np.repeat(np.arange(n, dtype=np.int64), counts)
    return np.bincount(row_of, weights=lengths, minlength=n).astype(np.int64), data


def serialize_examples(outputs: Sequence[tuple[str, Encoded]], n: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Serialized Examples of ``n`` rows: ``(bytes, n + 1 offsets)``.

    Args:
        outputs: ``(feature key, encoded output)`` in the order to write.
        n: Rows.
    """
    body = _Segments(n)
    for key, encoded in outputs:
        p_len, p_data = _payload(encoded, n)
        has = p_len > 0
        list_len = np.where(has, 1 + varint_lengths(p_len) + p_len, 0)
        feat_len = 1 + varint_lengths(list_len) + list_len
        kb = key.encode("utf-8")
        key_part = b"\x0a" + bytes(varints(np.array([len(kb)]))[1]) + kb
        entry_len = len(key_part) + 1 + varint_lengths(feat_len) + feat_len
        body.constant(b"\x0a")                      # Features.feature map entry
        body.varint(entry_len)
        body.constant(key_part + b"\x12")           # key, then the Feature value
        body.varint(feat_len)
        body.constant(b"\x12" if encoded.dtype == "float32" else b"\x1a")
        body.varint(list_len)
        tag_len, tag_data = varints(p_len[has])     # the packed field's tag and length
        lengths = np.zeros(n, np.int64)
        lengths[has] = 1 + tag_len
        tagged = np.empty(len(tag_data) + int(has.sum()), np.uint8)
        starts = np.cumsum(lengths[has]) - lengths[has]
        tagged[starts] = 0x0A
        mask = np.ones(len(tagged), bool)
        mask[starts] = False
        tagged[mask] = tag_data
        body.ragged(lengths, tagged)
        body.ragged(p_len, p_data)
    features_len = body.total()
    head = _Segments(n)
    head.constant(b"\x0a")
    head.varint(features_len)
    head.parts.extend(body.parts)
    return head.join()
