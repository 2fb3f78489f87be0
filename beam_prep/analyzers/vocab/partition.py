"""Hash partitioning of vocabulary tables, identical in every process.

Tokens are spread over ``num_partitions`` partitions by a 64-bit hash of their UTF-8 bytes
(not Python's salted ``hash()``), so every worker sends a token to the same partition and
partitions hold disjoint tokens.

Example:
    >>> import pyarrow as pa
    >>> stable_partition(pa.array(["a", "b", "a"]), 4).tolist()[0] == \\
    ...     stable_partition(pa.array(["a"]), 4).tolist()[0]
    True
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from beam_prep.analyzers.vocab.strings import string_buffers

__all__ = ["BYTES_PER_PARTITION", "MAX_PARTITIONS", "MIN_PARTITIONS", "auto_partitions",
           "split_by_partition", "stable_partition", "token_hashes"]

#: Input bytes per vocabulary partition when the count is chosen from the input size.
BYTES_PER_PARTITION = 16 << 20
#: Bounds of the automatic partition count (below 16 parallelism is lost for nothing;
#: above 1024 the per-partition overhead outweighs its memory gain).
MIN_PARTITIONS = 16
MAX_PARTITIONS = 1024

_HASH_MULT = np.uint64(0x100000001B3)  # FNV-1a 64-bit prime, used as polynomial base
_MIX = np.uint64(0xBF58476D1CE4E5B9)
_WORD_MULT = np.uint64(0xC2B2AE3D27D4EB4F)
_BYTE_MASKS = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [(1 << 64) - 1],
                       dtype=np.uint64)


def token_hashes(tokens: pa.Array) -> np.ndarray:
    """64-bit hash of each token's UTF-8 bytes, vectorised over the Arrow buffers.

    The bytes are read 8 at a time (little-endian words, zero past the token's end) and
    mixed with the length, one numpy pass per word position over the tokens that reach
    it. Pure numpy (no Python string per token) and the same in every process, unlike
    Python's salted ``hash()``.
    """
    n = len(tokens)
    offsets, data = string_buffers(tokens)
    lengths = np.diff(offsets)
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[:len(data)] = data
    words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    with np.errstate(over="ignore"):
        h = lengths.astype(np.uint64) * _HASH_MULT
        idx = np.flatnonzero(lengths > 0)
        w = 0
        while idx.size:
            remaining = np.minimum(lengths[idx] - 8 * w, 8)
            word = words[offsets[idx] + 8 * w] & _BYTE_MASKS[remaining]
            g = (h[idx] ^ word) * _WORD_MULT
            h[idx] = g ^ (g >> np.uint64(29))
            w += 1
            idx = idx[lengths[idx] > 8 * w]
        h ^= h >> np.uint64(31)
        h *= _MIX
        h ^= h >> np.uint64(29)
    return h if n else np.zeros(0, dtype=np.uint64)


def auto_partitions(total_bytes: int) -> int:
    """Partitions per vocabulary for an input of ``total_bytes`` (deterministic).

    One partition per :data:`BYTES_PER_PARTITION` of input, clamped to
    [:data:`MIN_PARTITIONS`, :data:`MAX_PARTITIONS`]: the distinct tokens of a partition,
    which one worker holds while summing it, grow at most like the input bytes. Artifacts do
    not depend on the count, only memory and parallelism do.

    Example:
        >>> auto_partitions(0), auto_partitions(1 << 30), auto_partitions(1 << 40)
        (16, 64, 1024)
    """
    if total_bytes < 0:
        raise ValueError(f"`total_bytes` must be >= 0. Received: total_bytes={total_bytes}")
    wanted = -(-total_bytes // BYTES_PER_PARTITION)
    return int(min(MAX_PARTITIONS, max(MIN_PARTITIONS, wanted)))


def stable_partition(tokens: pa.Array, num_partitions: int) -> np.ndarray:
    """Partition index per token from a hash that is the same in every process."""
    if num_partitions == 1 or len(tokens) == 0:
        return np.zeros(len(tokens), dtype=np.int64)
    return (token_hashes(tokens) % np.uint64(num_partitions)).astype(np.int64)


def split_by_partition(table: pa.Table, num_partitions: int) -> list[tuple[int, pa.Table]]:
    """Splits a table into compact per-partition tables (empty partitions omitted).

    ``take`` (not ``slice``) on purpose: a pickled slice would carry its parent's buffers.
    """
    if table.num_rows == 0:
        return []
    part = stable_partition(table.column("token").combine_chunks(), num_partitions)
    if num_partitions == 1:
        return [(0, table.combine_chunks())]
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(num_partitions + 1))
    return [(p, table.take(pa.array(order[bounds[p]:bounds[p + 1]])))
            for p in range(num_partitions) if bounds[p + 1] > bounds[p]]
