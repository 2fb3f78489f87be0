"""Drift of a numeric feature's per-key statistics (``per_key:``) between two artifact folders.

Both per-key files are sorted by key (UTF-8 bytes), so they are compared by one streaming
merge-join, line by line: memory is one line per side plus the few examples kept, whatever
the number of keys. Every line is checked as the reader checks it
(:func:`beam_prep.io.contract.per_key_file.parse_line`; keys strictly increasing).

A key is *changed* when its count, mean, variance, min or max differ. ``max_mean_shift`` is
the largest ``|new mean - old mean| / old std`` over the keys on both sides whose OLD std is
not 0; :attr:`PerKeyDiff.top_shifted` lists the keys with the largest shifts.

Example:
    >>> d = compare_per_key(iter([b'["a",2,1.0,1.0,0.0,2.0]']),
    ...                     iter([b'["a",2,2.0,1.0,1.0,3.0]', b'["b",1,5.0,0.0,5.0,5.0]']))
    >>> d.old_keys, d.new_keys, d.added, d.changed, d.max_mean_shift
    (1, 2, 1, 1, 1.0)
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Iterator

from beam_prep.diff.per_key_drift import KeyDrift, KeyDriftTally
from beam_prep.io.contract.per_key_file import iter_rows

TOP = 5


@dataclasses.dataclass(frozen=True)
class PerKeyDiff:
    """How one feature's per-key statistics changed.

    Attributes:
        old_keys: Keys in OLD.
        new_keys: Keys in NEW.
        added: Keys only in NEW.
        removed: Keys only in OLD.
        changed: Keys in both whose statistics differ.
        max_mean_shift: Largest mean shift of a key in its OLD std units (None if none).
        top_shifted: Up to five ``(key, shift)`` with the largest shifts, largest first.
        top_added: Up to five added keys with the most values, ``(key, count)``.
        top_removed: Up to five removed keys with the most values, ``(key, count)``.
        drift: Coverage and mean drift (:mod:`~beam_prep.diff.per_key_drift`).
    """

    old_keys: int
    new_keys: int
    added: int
    removed: int
    changed: int
    max_mean_shift: float | None
    top_shifted: tuple[tuple[str, float], ...]
    top_added: tuple[tuple[str, int], ...]
    top_removed: tuple[tuple[str, int], ...]
    drift: KeyDrift | None = None


def _rows(lines: Iterator[bytes], where: str, key_count: int | None) -> Iterator[tuple]:
    for row in iter_rows(lines, where, key_count):
        yield row[0].encode("utf-8"), row


def _same(a: tuple, b: tuple) -> bool:
    return all(x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
               for x, y in zip(a[1:], b[1:]))


def compare_per_key(old_lines: Iterator[bytes], new_lines: Iterator[bytes], *,
                    old_where: str = "OLD", new_where: str = "NEW",
                    old_count: int | None = None, new_count: int | None = None,
                    tally: KeyDriftTally | None = None) -> PerKeyDiff:
    """Compares two per-key files given as line iterators (bytes without ``\\n``), with
    the manifests' ``key_count`` when known (``tally``: the drift measures' settings)."""
    tally = tally or KeyDriftTally()
    old, new = _rows(old_lines, old_where, old_count), _rows(new_lines, new_where, new_count)
    a, b = next(old, None), next(new, None)
    counts = {"old": 0, "new": 0, "added": 0, "removed": 0, "changed": 0}
    shifted: list[tuple[float, str]] = []
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []
    best = None

    def keep(heap: list, item: tuple) -> None:
        (heapq.heappush if len(heap) < TOP else heapq.heappushpop)(heap, item)

    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            counts["old"] += 1
            counts["removed"] += 1
            keep(removed, (a[1][1], a[1][0]))
            tally.removed(a[1])
            a = next(old, None)
        elif a is None or b[0] < a[0]:
            counts["new"] += 1
            counts["added"] += 1
            keep(added, (b[1][1], b[1][0]))
            tally.added(b[1])
            b = next(new, None)
        else:
            counts["old"] += 1
            counts["new"] += 1
            tally.both(a[1], b[1])
            if not _same(a[1], b[1]):
                counts["changed"] += 1
                std = math.sqrt(a[1][3]) if a[1][3] == a[1][3] else 0.0
                if std > 0:
                    shift = abs(b[1][2] - a[1][2]) / std
                    if math.isfinite(shift):
                        best = shift if best is None else max(best, shift)
                        keep(shifted, (shift, a[1][0]))
            a, b = next(old, None), next(new, None)

    def top(heap: list) -> tuple:
        return tuple((k, v) for v, k in sorted(heap, key=lambda x: (-x[0], x[1])))

    return PerKeyDiff(counts["old"], counts["new"], counts["added"], counts["removed"],
                      counts["changed"], best, top(shifted), top(added), top(removed),
                      drift=tally.result(counts["old"], counts["new"]))
