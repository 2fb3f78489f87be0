"""TensorFlow's string hashes over whole Arrow columns (no TensorFlow imported).

* ``tf.strings.to_hash_bucket_fast``: FarmHash Fingerprint64 ``% num_buckets``
  (:func:`fingerprint64`);
* ``tf.strings.to_hash_bucket_strong``: SipHash-2-4 keyed ``[k0, k1]`` (:func:`siphash`);
* ``tf.sparse.cross_hashed``: a ``FingerprintCat64`` chain from the key ``0xDECAFCAFFE``
  (:func:`fingerprint_cat64`).

The C part (``_hashes.c``) runs over the Arrow data and offsets buffers with the GIL released;
:func:`frame_records` frames serialized records as TFRecords (masked CRC-32C) in one call.
Tests compare every function with TensorFlow on strings of every length class.

Example:
    >>> fingerprint64(pa.array(["a", "b"])).dtype
    dtype('uint64')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.errors import ArtifactError

try:
    from beam_prep.transform import _hashes as _native
except ImportError as e:  # the build had no C compiler: say how to get it
    _native = None
    _IMPORT_ERROR: ImportError | None = e
else:
    _IMPORT_ERROR = None

#: ``tf.sparse.cross_hashed``'s default hash key.
CROSS_HASH_KEY = 0xDECAFCAFFE
_CAT_MUL = np.uint64(0xC6A4A7935BD1E995)


def require() -> None:
    """Raises ArtifactError naming the fix when the C extension was not built."""
    if _native is None:
        raise ArtifactError(
            "The transform job needs the C extension beam_prep.transform._hashes, which this "
            f"install lacks ({_IMPORT_ERROR}). Fix: install a C compiler and reinstall "
            "beam-prep (pip install --force-reinstall --no-deps .).")


def native() -> Any:
    """The C extension module (call :func:`require` first)."""
    return _native


def string_buffers(arr: pa.Array) -> tuple[memoryview | bytes, np.ndarray]:
    """``(data, int64 offsets of len + 1)`` of a string/binary array (nulls are empty)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.null_count:
        arr = pc.fill_null(arr, "")
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], np.int64 if large else np.int32,
                            count=len(arr) + 1, offset=arr.offset * (8 if large else 4))
    data = buffers[2] if buffers[2] is not None else b""
    return memoryview(data), offsets.astype(np.int64)


def fingerprint64(arr: pa.Array) -> np.ndarray:
    """FarmHash Fingerprint64 of each string (a null hashes like ``""``), as uint64."""
    require()
    data, offsets = string_buffers(arr)
    return np.frombuffer(_native.fingerprint64(data, offsets), np.uint64)


def siphash(arr: pa.Array, key: tuple[int, int]) -> np.ndarray:
    """SipHash-2-4 of each string with the 128-bit ``key`` (TensorFlow's ``key=[k0, k1]``)."""
    require()
    data, offsets = string_buffers(arr)
    return np.frombuffer(_native.siphash(data, offsets, int(key[0]), int(key[1])), np.uint64)


def fingerprint_cat64(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """TensorFlow's ``FingerprintCat64`` of two uint64 arrays, element-wise."""
    with np.errstate(over="ignore"):
        result = first ^ _CAT_MUL
        mixed = second * _CAT_MUL
        result ^= (mixed ^ (mixed >> np.uint64(47))) * _CAT_MUL
        result *= _CAT_MUL
        result = (result ^ (result >> np.uint64(47))) * _CAT_MUL
        return result ^ (result >> np.uint64(47))


def frame_records(data: bytes | memoryview | np.ndarray, offsets: np.ndarray) -> bytes:
    """Records ``data[offsets[i]:offsets[i + 1]]`` framed as one TFRecord file body."""
    require()
    return _native.frame(data, np.ascontiguousarray(offsets, np.int64))
