"""How many output shards make-elwc writes when ``--num_shards`` is not given.

A shard is built in memory by one worker (its compact blocks, then its encoded records, about
six times the size of sparse LETOR text), so the shard count follows the input size: one shard
per :data:`BYTES_PER_SHARD` of estimated uncompressed input, at least 1 and at most
:data:`MAX_AUTO_SHARDS`. The estimate is the stored size of every file, times
:data:`COMPRESSED_RATIO` for files Beam decompresses by extension (``.gz``, ``.bz2``, ...). It
depends only on the file sizes, so the same input always gives the same count (and the same
bytes); ``--num_shards`` overrides it.

Example:
    >>> auto_num_shards(0), auto_num_shards(BYTES_PER_SHARD), auto_num_shards(BYTES_PER_SHARD + 1)
    (1, 1, 2)
    >>> auto_num_shards(10**15)
    1024
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import InputError
from beam_prep.ranking.data.options import ElwcOptions

BYTES_PER_SHARD = 128 << 20
"""Estimated input bytes per automatic shard (about 0.8 GB of encoded records per shard)."""
MAX_AUTO_SHARDS = 1024
COMPRESSED_RATIO = 4
"""Assumed expansion of compressed text (gzip on LETOR/CSV text is typically 3-5x)."""
COMPRESSED_SUFFIXES = (".gz", ".gzip", ".bz2", ".zst", ".zstd", ".deflate", ".lzma", ".xz")


def auto_num_shards(input_bytes: int) -> int:
    """``ceil(input_bytes / BYTES_PER_SHARD)`` bounded to ``[1, MAX_AUTO_SHARDS]``."""
    return max(1, min(MAX_AUTO_SHARDS, -(-input_bytes // BYTES_PER_SHARD)))


def estimated_input_bytes(patterns: Sequence[str], paths: Sequence[str]) -> int:
    """Sum of the sizes of ``paths``, compressed files counted :data:`COMPRESSED_RATIO` times.

    The sizes come from one listing per pattern (no request per file on object stores).

    Raises:
        InputError: a file is no longer matched by the patterns (deleted since it was listed).
    """
    sizes: dict[str, int] = {}
    for result in FileSystems.match(list(patterns)):
        sizes.update((m.path, m.size_in_bytes) for m in result.metadata_list)
    total = 0
    for path in paths:
        if path not in sizes:
            raise InputError(f"input file {path!r} disappeared while the job was being planned. "
                             "Check --input and rerun.")
        ratio = COMPRESSED_RATIO if path.lower().endswith(COMPRESSED_SUFFIXES) else 1
        total += sizes[path] * ratio
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
