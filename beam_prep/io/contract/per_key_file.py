"""The per-key statistics file of a numeric feature with ``per_key:``: layout and checked reader.

``per_key/<feature>.jsonl`` holds one key per line, as a JSON array::

    [key, count, mean, variance, min, max]

``key`` is a non-empty JSON string (any text: quotes, tabs, line breaks and control
characters are JSON escapes, other Unicode is written as is, UTF-8), ``count`` the number
of finite values of that key (>= 1), the others numbers (``variance`` null when beyond the
float64 range). Lines are sorted by the keys' UTF-8 bytes, strictly (no key twice), and end
with ``\\n``; a feature whose data had no key has an empty file. Numbers are Python's
shortest round-trip form, so every value reads back as the exact float64 the analysis
computed. The file is text an attacker may have written: :func:`read_per_key` checks every
line, the order and the line count against the manifest before anything uses it.

Two such files merge like the analysis merges partitions: a streaming merge of the sorted
lines, counts added and moments combined (Chan's formula) for keys in both.

Example:
    >>> parse_line(b'["a\\\\tb",2,1.5,0.25,1.0,2.0]', "f.jsonl", 1)
    ('a\\tb', 2, 1.5, 0.25, 1.0, 2.0)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from beam_prep.errors import ArtifactError
from beam_prep.io.contract.keyed_lines import check_key, json_array, sorted_rows

ROLE = "per_key"
DIR = "per_key"
COLUMNS = ("key", "count", "mean", "variance", "min", "max")


def per_key_relpath(name: str) -> str:
    """``per_key/<feature>.jsonl``."""
    return f"{DIR}/{name}.jsonl"


@dataclasses.dataclass(frozen=True)
class PerKeyTable:
    """The checked content of a per-key file, in file order.

    Attributes:
        keys: The keys (sorted by UTF-8 bytes, unique).
        count: int64 counts.
        mean: float64 means.
        variance: float64 variances (NaN where the file holds null).
        minimum: float64 minimums.
        maximum: float64 maximums.
    """

    keys: list[str]
    count: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray


def _bad(path: str, line_no: int, why: str) -> ArtifactError:
    return ArtifactError(
        f"{path} line {line_no}: {why}. Each line must be [key, count, mean, variance, "
        "min, max] (key a non-empty string, count an integer >= 1, finite numbers, "
        "variance >= 0 or null, min <= mean <= max). Fix: re-run `beam-prep analyze` into "
        "a fresh directory; do not edit artifact files.")


def finite_number(v: Any) -> bool:
    """A finite JSON number that fits a float64 (an integer of 400 digits does not)."""
    try:
        return type(v) in (int, float) and math.isfinite(v)
    except OverflowError:
        return False


def parse_line(line: bytes, path: str, line_no: int) -> tuple[str, int, float, float,
                                                              float, float]:
    """One checked line ``(key, count, mean, variance (NaN for null), min, max)``.

    Raises:
        ArtifactError: Not such a line (file, line number and the fix).
    """
    def bad(n: int, why: str) -> ArtifactError:
        return _bad(path, n, why)

    key, count, mean, variance, low, high = json_array(line, len(COLUMNS), line_no, bad)
    check_key(key, line_no, bad)
    if type(count) is not int or not 1 <= count < 2 ** 63:
        raise _bad(path, line_no, f"count {count!r} is not an integer >= 1")
    if not (finite_number(mean) and finite_number(low) and finite_number(high)
            and low <= mean <= high):
        raise _bad(path, line_no, "mean, min and max are not finite numbers with "
                   "min <= mean <= max")
    if variance is not None and not (finite_number(variance) and variance >= 0):
        raise _bad(path, line_no, f"variance {variance!r} is not a number >= 0 or null")
    return (key, count, float(mean), math.nan if variance is None else float(variance),
            float(low), float(high))


def iter_rows(lines: Any, path: str, key_count: int | None = None) -> Iterator[tuple]:
    """Checked rows of a per-key file, streamed (see :func:`parse_line`).

    Raises:
        ArtifactError: A bad line, keys out of order or repeated, or another number of keys
            than ``key_count`` (the manifest's), once the lines are exhausted.
    """
    return sorted_rows(lines, path, lambda line, i: parse_line(line, path, i),
                       lambda i, why: _bad(path, i, why), expected=key_count, what="keys",
                       field="key_count")


def parse_lines(lines: Any, path: str, key_count: int | None = None) -> PerKeyTable:
    """Checks and collects the lines of a per-key file (bytes, without ``\\n``).

    Raises:
        ArtifactError: As :func:`iter_rows`.
    """
    keys: list[str] = []
    counts: list[int] = []
    numbers: list[tuple] = []
    for row in iter_rows(lines, path, key_count):
        keys.append(row[0])
        counts.append(row[1])  # exact beyond 2**53
        numbers.append(row[2:])
    cols = np.array(numbers, np.float64).reshape(-1, 4)
    return PerKeyTable(keys, np.array(counts, np.int64).reshape(-1), cols[:, 0], cols[:, 1],
                       cols[:, 2], cols[:, 3])


def rows_of(art: Any, name: str) -> Iterator[tuple]:
    """The checked rows of a feature's per-key file, streamed (bounded lines)."""
    return iter_rows(art.iter_lines(name, ROLE), art.file_path(name, ROLE),
                     art.stats(name).get("key_count"))


def read_per_key(art: Any, name: str) -> PerKeyTable:
    """The per-key statistics of a feature, read through the checked artifact reader.

    Args:
        art: An opened :class:`~beam_prep.io.contract.artifacts.Artifacts`.
        name: The feature.
    """
    return parse_lines(art.iter_lines(name, ROLE), art.file_path(name, ROLE),
                       art.stats(name).get("key_count"))
