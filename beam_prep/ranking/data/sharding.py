"""How many output shards make-elwc writes when ``--num_shards`` is not given.

A shard is built in memory by one worker (its compact blocks, then its encoded records, about
six times the size of sparse LETOR text), so the shard count follows the input size: one shard
per :data:`BYTES_PER_SHARD` of estimated uncompressed input, at least 1 and at most
:data:`MAX_AUTO_SHARDS`. The estimate is the stored size of every file, times its
:data:`COMPRESSED_RATIOS` entry for files Beam decompresses by extension (``.gz``, ``.bz2``,
...). It depends only on the file sizes (no file is opened), so the same input always gives the
same count (and the same bytes); ``--num_shards`` overrides it.

Example:
    >>> auto_num_shards(0), auto_num_shards(BYTES_PER_SHARD), auto_num_shards(BYTES_PER_SHARD + 1)
    (1, 1, 2)
    >>> auto_num_shards(10**15)
    1024
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from beam_prep.errors import InputError
from beam_prep.io import filesystem
from beam_prep.ranking.data.options import ElwcOptions

BYTES_PER_SHARD = 128 << 20
"""Estimated input bytes per automatic shard (about 0.8 GB of encoded records per shard)."""
MAX_AUTO_SHARDS = 1024
COMPRESSED_RATIOS: dict[str, int] = {
    ".gz": 5, ".gzip": 5, ".deflate": 5, ".zst": 5, ".zstd": 5, ".bz2": 9, ".xz": 9, ".lzma": 9}
"""Assumed expansion (uncompressed / compressed size) by file suffix, rounded up from measures.

Measured (Python's gzip/bz2/lzma, zstandard; uncompressed ÷ compressed bytes):

==============================================  ======  ======  ======  ====  ====  ======
input (``examples/data/...`` unless said)       gzip-1  gzip-6  gzip-9  bz2   xz    zstd-3
==============================================  ======  ======  ======  ====  ====  ======
LETOR ``letor/lightgbm/rank.train`` (2.5 MB)    3.19    4.73    4.95    9.17  8.00  4.48
LETOR ``letor/lightgbm/rank.test`` (0.65 MB)    3.17    4.70    4.91    8.88  7.72  4.50
CSV ``sample.csv`` (0.11 MB)                    3.35    4.55    4.61    7.87  5.39  4.07
LETOR, random 4-digit values (bench_elwc 8 MB)  2.21    2.65    2.70    3.71  3.33  2.57
==============================================  ======  ======  ======  ====  ====  ======

The former single ratio of 4 undercounted gzip at its default level 6 by 15% and bz2/xz by
about half (bigger shards than intended, so more memory per worker). Rounding up errs towards
more, smaller shards: random-valued features compress less (2.7x) and get about twice the
shards they need, which costs little.
"""
COMPRESSED_SUFFIXES = tuple(COMPRESSED_RATIOS)


def compressed_ratio(path: str) -> int:
    """The assumed expansion of ``path`` by its suffix (1 when Beam would not decompress it).

    Example:
        >>> compressed_ratio("a.txt.GZ"), compressed_ratio("a.bz2"), compressed_ratio("a.txt")
        (5, 9, 1)
    """
    lower = path.lower()
    return next((r for suffix, r in COMPRESSED_RATIOS.items() if lower.endswith(suffix)), 1)


def auto_num_shards(input_bytes: int) -> int:
    """``ceil(input_bytes / BYTES_PER_SHARD)`` bounded to ``[1, MAX_AUTO_SHARDS]``."""
    return max(1, min(MAX_AUTO_SHARDS, -(-input_bytes // BYTES_PER_SHARD)))


def estimated_input_bytes(patterns: Sequence[str], paths: Sequence[str]) -> int:
    """Sum of the sizes of ``paths``, compressed files counted :func:`compressed_ratio` times.

    The sizes come from one listing per pattern (no request per file on object stores).

    Raises:
        InputError: a file is no longer matched by the patterns (deleted since it was listed).
    """
    sizes: dict[str, int] = {}
    for pattern in patterns:  # spelled as list_input_files spells them (bare globs too)
        sizes.update(filesystem.match_sizes(pattern))
    total = 0
    for path in paths:
        if path not in sizes:
            raise InputError(f"input file {path!r} disappeared while the job was being planned. "
                             "Check --input and rerun.")
        total += sizes[path] * compressed_ratio(path)
    return total


def resolve_num_shards(opts: ElwcOptions, patterns: Sequence[str],
                       files: Sequence[tuple[int, str, str]]) -> ElwcOptions:
    """``opts`` with ``num_shards`` chosen from the input size when it is ``None``.

    Args:
        opts: conversion options; an explicit ``num_shards`` is kept as it is.
        patterns: the input globs (``--input``).
        files: ``(index, path, relative name)`` as listed by ``list_input_files``.
    """
    if opts.num_shards is not None:
        return opts
    total = estimated_input_bytes(patterns, [path for _, path, _ in files])
    return dataclasses.replace(opts, num_shards=auto_num_shards(total))
