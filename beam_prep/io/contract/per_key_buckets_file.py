"""The per-key bucket boundaries file (``per_key`` + ``num_buckets``): layout, checked reader.

``per_key/<feature>.buckets.jsonl`` holds one key per line, as a JSON array::

    [key, count, level, [b1, ..., b(num_buckets - 1)]]

``key`` is a non-empty JSON string (as in ``per_key/<feature>.jsonl``), ``count`` the
number of finite values of that key (>= 1), ``level`` the grid level of its histogram
(0: the boundaries are exact quantiles; ``r`` > 0: each boundary lies in the same cell of
``2**r`` float64 codes as the exact one, :mod:`beam_prep.analyzers.per_key_buckets.hist`), then
the ``num_buckets - 1`` non-decreasing finite boundaries, in Python's shortest round-trip
form. Lines are sorted by the keys' UTF-8 bytes, strictly, and end with ``\\n``. The file
is text an attacker may have written: :func:`read_buckets` checks every line, the order
and the line count against the manifest's ``bucket_key_count``.

Example:
    >>> parse_line(b'["a",3,0,[1.0,2.5]]', "f.jsonl", 1, 3)
    ('a', 3, 0, [1.0, 2.5])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from beam_prep.errors import ArtifactError
from beam_prep.io.contract.keyed_lines import check_key, json_array, sorted_rows
from beam_prep.io.contract.per_key_file import finite_number

ROLE = "per_key_buckets"
DIR = "per_key"


def buckets_relpath(name: str) -> str:
    """``per_key/<feature>.buckets.jsonl``."""
    return f"{DIR}/{name}.buckets.jsonl"


@dataclasses.dataclass(frozen=True)
class BucketTable:
    """The checked content of a per-key bucket file, in file order.

    Attributes:
        keys: The keys (sorted by UTF-8 bytes, unique).
        count: int64 finite values per key.
        level: int64 grid level per key (0 = exact).
        boundaries: float64 ``(keys, num_buckets - 1)``.
    """

    keys: list[str]
    count: np.ndarray
    level: np.ndarray
    boundaries: np.ndarray


def _bad(path: str, line_no: int, why: str) -> ArtifactError:
    return ArtifactError(
        f"{path} line {line_no}: {why}. Each line must be [key, count, level, [boundaries]] "
        "(key a non-empty string, count an integer >= 1, level an integer in [0, 63], "
        "num_buckets - 1 non-decreasing finite numbers). Fix: re-run `beam-prep analyze` "
        "into a fresh directory; do not edit artifact files.")


def parse_line(line: bytes, path: str, line_no: int, num_buckets: int
               ) -> tuple[str, int, int, list[float]]:
    """One checked line ``(key, count, level, boundaries)``.

    Raises:
        ArtifactError: Not such a line (file, line number and the fix).
    """
    def bad(n: int, why: str) -> ArtifactError:
        return _bad(path, n, why)

    key, count, level, bounds = json_array(line, 4, line_no, bad)
    check_key(key, line_no, bad)
    if type(count) is not int or not 1 <= count < 2 ** 63:
        raise _bad(path, line_no, f"count {count!r} is not an integer >= 1")
    if type(level) is not int or not 0 <= level <= 63:
        raise _bad(path, line_no, f"level {level!r} is not an integer in [0, 63]")
    ok = (isinstance(bounds, list) and len(bounds) == num_buckets - 1
          and all(finite_number(b) for b in bounds)
          and all(a <= b for a, b in zip(bounds, bounds[1:])))
    if not ok:
        raise _bad(path, line_no, f"the boundaries are not {num_buckets - 1} non-decreasing "
                   "finite numbers")
    return key, count, level, [float(b) for b in bounds]


def iter_rows(lines: Any, path: str, num_buckets: int,
              key_count: int | None = None) -> Iterator[tuple[str, int, int, list[float]]]:
    """Checked rows of a bucket file, streamed (see :func:`parse_line`).

    Raises:
        ArtifactError: A bad line, keys out of order or repeated, or another number of keys
            than ``key_count`` (the manifest's), once the lines are exhausted.
    """
    return sorted_rows(lines, path, lambda line, i: parse_line(line, path, i, num_buckets),
                       lambda i, why: _bad(path, i, why), expected=key_count, what="keys",
                       field="bucket_key_count")


def parse_lines(lines: Any, path: str, num_buckets: int,
                key_count: int | None = None) -> BucketTable:
    """Checks and collects the lines (bytes, without ``\\n``) of a bucket file.

    Raises:
        ArtifactError: As :func:`iter_rows`.
    """
    keys: list[str] = []
    counts: list[int] = []
    levels: list[int] = []
    bounds: list[list[float]] = []
    for key, count, level, b in iter_rows(lines, path, num_buckets, key_count):
        keys.append(key)
        counts.append(count)
        levels.append(level)
        bounds.append(b)
    return BucketTable(keys, np.array(counts, np.int64), np.array(levels, np.int64),
                       np.array(bounds, np.float64).reshape(len(keys), num_buckets - 1))


def rows_of(art: Any, name: str) -> Iterator[tuple[str, int, int, list[float]]]:
    """The checked rows of a feature's bucket file, streamed (bounded lines)."""
    return iter_rows(art.iter_lines(name, ROLE), art.file_path(name, ROLE),
                     int(art.spec.feature(name).num_buckets),
                     art.stats(name).get("bucket_key_count"))


def read_buckets(art: Any, name: str) -> BucketTable:
    """The per-key boundaries of a feature, read through the checked artifact reader.

    Args:
        art: An opened :class:`~beam_prep.io.contract.artifacts.Artifacts`.
        name: The feature (with ``per_key`` and ``num_buckets``).
    """
    feature = art.spec.feature(name)
    return parse_lines(art.iter_lines(name, ROLE), art.file_path(name, ROLE),
                       int(feature.num_buckets), art.stats(name).get("bucket_key_count"))
