"""Zero-copy byte views of Arrow string arrays, shared by the vocabulary modules.

Hashing, sorting and file writing all read token bytes straight from the Arrow buffers
instead of building one Python string per token.

Example:
    >>> import pyarrow as pa
    >>> offsets, data = string_buffers(pa.array(["ab", "", "c"]))
    >>> offsets.tolist(), data.tobytes()
    ([0, 2, 2, 3], b'abc')
    >>> [hex(k) for k in prefix_keys(pa.array(["a", ""]))]
    ['0x6100000000000000', '0x0']
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["prefix_keys", "string_buffers"]


def string_buffers(tokens: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets relative to the first token, data bytes) of a string array, zero-copy.

    Args:
        tokens: A string or large_string array (not chunked); nulls read as empty.

    Returns:
        ``len(tokens) + 1`` int64 offsets starting at 0, and the uint8 bytes they index.
    """
    tokens = tokens.cast(pa.large_string())
    n = len(tokens)
    offsets = np.frombuffer(tokens.buffers()[1], dtype=np.int64)[
        tokens.offset:tokens.offset + n + 1]
    data = (np.frombuffer(tokens.buffers()[2], dtype=np.uint8) if tokens.buffers()[2]
            else np.zeros(0, np.uint8))
    return offsets - offsets[0], data[int(offsets[0]):int(offsets[-1])]


def prefix_keys(tokens: pa.Array) -> np.ndarray:
    """The first 8 bytes of each token as a big-endian uint64 (zero padded).

    Comparing keys orders tokens as their bytes do, except that tokens sharing their first
    8 bytes compare equal: callers break those ties with a full comparison.
    """
    offsets, data = string_buffers(tokens)
    lengths = np.minimum(np.diff(offsets), 8)
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[:len(data)] = data
    words = np.ndarray((len(padded) - 7,), dtype=">u8", buffer=padded, strides=(1,))
    keys = words[offsets[:-1]].astype(np.uint64)
    shift = (8 * (8 - lengths)).astype(np.uint64)
    keep = np.where(lengths > 0, ~np.uint64(0) << np.minimum(shift, 63), np.uint64(0))
    keep[shift == 64] = 0
    return keys & keep
