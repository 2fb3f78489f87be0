"""The line bound of artifact text files: the longest line a reader accepts.

Vocabulary, counts and report inputs are read in bounded blocks, so a line longer than
:data:`MAX_LINE_BYTES` is an error, never a string of gigabytes.

Example::

    >>> check_line_length(b"abc", "vocab/x.txt")
    >>> try:
    ...     check_line_length(b"abcd", "vocab/x.txt", limit=3)
    ... except ArtifactError as e:
    ...     print(str(e).split(" (")[0])
    vocab/x.txt has a line longer than 3 bytes
"""

from __future__ import annotations

import numpy as np

from beam_prep.errors import ArtifactError

MAX_LINE_BYTES = 64 << 20
"""Longest line a reader accepts in a vocabulary or counts file (a token of 64 MiB is no
token); files are read in bounded blocks, so a longer line is an error, never a 3 GB string."""


def check_line_length(pending: bytes, path: str, limit: int | None = None) -> None:
    """Raises when ``pending`` (the bytes since the last newline) exceeds the line bound."""
    limit = MAX_LINE_BYTES if limit is None else limit
    if len(pending) > limit:
        raise long_line_error(path, limit)


def long_line_error(path: str, limit: int) -> ArtifactError:
    """The error for a line longer than ``limit`` bytes in an artifact file."""
    return ArtifactError(
        f"{path} has a line longer than {limit:,} bytes (no token is that long; the file is "
        "not one the analysis wrote). Fix: re-run `beam-prep analyze` into a fresh directory.")


class LineScan:
    """Tracks the longest line over consecutive chunks (numpy, no Python loop per line)."""

    def __init__(self, path: str) -> None:
        self.path, self.since = path, 0

    def add(self, chunk: bytes) -> None:
        first = chunk.find(b"\n")
        if first < 0:
            self.since += len(chunk)
            longest = self.since
        elif len(chunk) <= MAX_LINE_BYTES:  # no line inside the chunk can be too long
            longest = self.since + first
            self.since = len(chunk) - chunk.rfind(b"\n") - 1
        else:  # a bound below the block size (tests): every gap, with numpy
            nl = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
            gaps = np.diff(nl) - 1
            longest = max(self.since + int(nl[0]), int(gaps.max()) if len(gaps) else 0)
            self.since = len(chunk) - int(nl[-1]) - 1
        if longest > MAX_LINE_BYTES:
            raise long_line_error(self.path, MAX_LINE_BYTES)
