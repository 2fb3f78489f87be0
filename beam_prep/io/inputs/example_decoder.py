"""Columnar decoding of serialized ``tf.Example`` records, a batch at a time.

:class:`ExampleDecoder` turns a batch of records that lie in one byte buffer into an Arrow
record batch of the requested features, with the column types of tfx-bsl's
``ExamplesToRecordBatchDecoder``: ``large_list<large_binary>`` for ``bytes_list``,
``large_list<float>`` for ``float_list``, ``large_list<int64>`` for ``int64_list``; null
where a record lacks the feature or holds an empty ``Feature``, an empty list for an
empty list. Features that were not requested are checked but not stored.

The work is done by the optional native module ``beam_prep.io._tfexample`` (C, built at
install time): one pass over the wire bytes, values appended to flat per-feature buffers.
It decodes what protobuf serializers write; a record outside that (unknown fields, a key
twice, malformed wire data, tags in unusual encodings) is not guessed at but returned in
``fallback``; :func:`beam_prep.io.inputs.tfrecord_reader.iter_tfrecord` hands such records to
tfx-bsl, which also decides whether a record is valid at all. Without the native module
every record goes to tfx-bsl, with the same results (tested), about 5x slower.

Example:
    >>> rec = bytes.fromhex("0a0d0a0b0a016112060a040a023132")  # {"a": bytes_list ["12"]}
    >>> data = rec + rec
    >>> out = ExampleDecoder(["a", "b"]).decode(data, [0, len(rec)], [len(rec)] * 2)
    >>> out.batch.to_pydict() if native_available() else {"a": [[b"12"]] * 2, "b": [None] * 2}
    {'a': [[b'12'], [b'12']], 'b': [None, None]}
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

try:  # the C part is optional: an install without a compiler still works
    from beam_prep.io import _tfexample as _native
except ImportError:  # pragma: no cover - depends on the build
    _native = None

NO_NATIVE_ENV = "BEAM_PREP_NO_NATIVE"
_VALUE_TYPES = {1: pa.large_binary(), 2: pa.float32(), 3: pa.int64()}


def native_available() -> bool:
    """Whether the C decoder is built and not disabled by ``BEAM_PREP_NO_NATIVE=1``."""
    return _native is not None and os.environ.get(NO_NATIVE_ENV, "") in ("", "0")


@dataclasses.dataclass(frozen=True)
class DecodedBatch:
    """Result of :meth:`ExampleDecoder.decode`.

    Attributes:
        batch: The requested columns for the decoded records, in input order.
        decoded: Indices (into the input records) of the rows of ``batch``.
        fallback: Indices of the records left to the reference decoder.
    """

    batch: pa.RecordBatch
    decoded: np.ndarray
    fallback: np.ndarray


def _validity(present: np.ndarray) -> pa.Buffer | None:
    return None if present.all() else pa.array(present).buffers()[1]


def _column(kind: int, all_one: int, present_buf, counts_buf, values, offsets,
            flat_scalars: bool) -> pa.Array:
    present = np.frombuffer(present_buf, dtype=np.bool_)
    rows = len(present)
    if kind == 0 or not present.any():
        return pa.nulls(rows)
    value_type = _VALUE_TYPES[kind]
    if flat_scalars and all_one:
        # One value per present row: a flat array with nulls, one slot per row.
        if kind == 1:
            row_offsets = np.zeros(rows + 1, dtype=np.int64)
            row_offsets[1:][present] = np.frombuffer(offsets, dtype=np.int64)
            np.maximum.accumulate(row_offsets, out=row_offsets)
            return pa.Array.from_buffers(value_type, rows, [
                _validity(present), pa.py_buffer(row_offsets), pa.py_buffer(values)])
        dtype = np.float32 if kind == 2 else np.int64
        if present.all():
            return pa.Array.from_buffers(value_type, rows, [None, pa.py_buffer(values)])
        full = np.zeros(rows, dtype=dtype)
        full[present] = np.frombuffer(values, dtype=dtype)
        return pa.Array.from_buffers(value_type, rows, [_validity(present),
                                                        pa.py_buffer(full)])
    counts = np.frombuffer(counts_buf, dtype=np.int32)
    list_offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=list_offsets[1:])
    n = int(list_offsets[-1])
    if kind == 1:
        value_offsets = np.zeros(n + 1, dtype=np.int64)
        value_offsets[1:] = np.frombuffer(offsets, dtype=np.int64)
        flat = pa.Array.from_buffers(value_type, n, [
            None, pa.py_buffer(value_offsets), pa.py_buffer(values)])
    else:
        flat = pa.Array.from_buffers(value_type, n, [None, pa.py_buffer(values)])
    return pa.Array.from_buffers(pa.large_list(value_type), rows,
                                 [_validity(present), pa.py_buffer(list_offsets)],
                                 children=[flat])


class ExampleDecoder:
    """Decodes the named features of serialized ``tf.Example`` records.

    Args:
        columns: Feature names to decode (others are skipped).
        flat_scalars: Return a feature whose present rows all hold exactly one value as a
            flat array (nulls where absent) instead of a list array: the same values,
            less memory and work downstream. Off by default (tfx-bsl's layout).
    """

    def __init__(self, columns: Sequence[str], *, flat_scalars: bool = False) -> None:
        self.columns = list(columns)
        self._flat = flat_scalars
        unique = list(dict.fromkeys(self.columns))
        self._keys = [c.encode("utf-8") for c in unique]
        self._slot = [unique.index(c) for c in self.columns]

    def decode(self, buf: bytes | memoryview, starts: Sequence[int] | np.ndarray,
               lengths: Sequence[int] | np.ndarray) -> DecodedBatch:
        """Decodes records ``buf[starts[i]:starts[i] + lengths[i]]``.

        Without the native module nothing is decoded here: every record is returned in
        ``fallback``.
        """
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        n = len(starts)
        if not native_available():
            return DecodedBatch(pa.record_batch([]), np.zeros(0, np.int64),
                                np.arange(n, dtype=np.int64))
        flags, mixed, cols = _native.decode(buf, starts, lengths, self._keys)
        if mixed:  # one feature with two value kinds: the reference decoder decides
            return DecodedBatch(pa.record_batch([]), np.zeros(0, np.int64),
                                np.arange(n, dtype=np.int64))
        flag = np.frombuffer(flags, dtype=np.uint8)
        decoded = [_column(*c, self._flat) for c in cols]
        arrays = [decoded[i] for i in self._slot]
        batch = pa.RecordBatch.from_arrays(arrays, names=self.columns)
        return DecodedBatch(batch, np.flatnonzero(flag == 0), np.flatnonzero(flag != 0))
