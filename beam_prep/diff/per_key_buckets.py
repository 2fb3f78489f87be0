"""Drift of a numeric feature's per-key bucket boundaries (``per_key`` + ``num_buckets``).

Both bucket files are sorted by key (UTF-8 bytes) and compared by one streaming
merge-join: memory is one line per side plus the few examples kept, whatever the number
of keys. Every line is checked as the reader checks it
(:func:`beam_prep.io.contract.per_key_buckets_file.iter_rows`).

A key is *changed* when its boundaries differ. A key's boundary shift is the largest
``|new b_i - old b_i|`` over its boundaries divided by its OLD boundary range
``b_last - b_first`` (keys whose OLD range is 0, or whose number of boundaries changed,
count as changed without a shift); :attr:`BucketDiff.top_shifted` lists the keys with the
largest shifts.

The drift flag looks at the keys with at least ``min_rows`` values on both sides
(``compared_keys``; the boundaries of a few values move by chance): ``shifted_share`` is the
share of their OLD values held by keys whose boundary shift exceeds ``limit`` (a key whose
OLD range is 0 counts as shifted when a boundary moved; keys with another number of
boundaries are left out, as a global feature's are), ``most_shifted`` the largest shift.

A key that holds few values, or few of the compared values, is also checked alone when it
has at least ``min_key_rows`` values on both sides and as many boundaries: it counts in
``moved_keys`` when its largest boundary move, divided by the larger of its OLD and NEW
boundary ranges (sound when OLD's range is 0: a key whose boundaries all coincide on both
sides moved infinitely when one moved), reaches :func:`key_limit`: ``key_limit`` (0.5)
widened for small keys to ``NOISE_Z`` (4) times ``sqrt(1/n_old + 1/n_new)``, about four
standard errors of a quartile's chance move in the key's quartile range for normal values.
Simulated (two draws of ``n`` normal values, 4 buckets), an unchanged key counts with
probability about 7e-4 at ``n = 10``, 1.5e-4 at 20, 5e-5 at 50 and 100, under 1e-5 at 200;
a key whose values all move by one std counts with probability 0.47 at 50, 0.96 at 100 and
0.999 at 200. ``most_moved`` is ``(key, shift)`` of the largest (shift None when infinite).

Example:
    >>> d = compare_buckets(iter([b'["a",4,0,[1.0,3.0]]']),
    ...                     iter([b'["a",4,0,[2.0,3.0]]', b'["b",1,0,[5.0,5.0]]']), 3, 3)
    >>> d.old_keys, d.new_keys, d.added, d.changed, d.max_boundary_shift
    (1, 2, 1, 1, 0.5)
    >>> d = compare_buckets(iter([b'["a",4,0,[1.0,3.0]]', b'["b",4,0,[0.0,4.0]]']),
    ...                     iter([b'["a",4,0,[2.5,3.0]]', b'["b",8,0,[0.0,4.0]]']), 3, 3,
    ...                     min_rows=4, limit=0.5)
    >>> d.compared_keys, d.shifted_share, d.most_shifted
    (2, 0.5, ('a', 0.75))
    >>> d.moved_keys, d.most_moved  # 4 values: a move must reach 4 * sqrt(1/4 + 1/4)
    (0, None)
    >>> compare_buckets(iter([b'["a",400,0,[1.0,3.0]]']), iter([b'["a",400,0,[2.6,3.0]]']),
    ...                 3, 3, min_rows=1000).most_moved
    ('a', 0.8)
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Iterator
from typing import Any

from beam_prep.diff.per_key_drift import ExtremeKeys, ShiftShare, relative_shift
from beam_prep.io.contract.per_key_buckets_file import iter_rows

TOP = 5
#: Standard errors of a boundary's chance move a small key's move must also reach.
NOISE_Z = 4.0


def key_limit(limit: float, old_rows: int, new_rows: int) -> float:
    """The move (in the key's boundary range) from which a key checked alone counts as
    moved: ``max(limit, NOISE_Z * sqrt(1/old_rows + 1/new_rows))``."""
    return max(limit, NOISE_Z * math.sqrt(1 / old_rows + 1 / new_rows))


@dataclasses.dataclass(frozen=True)
class BucketDiff:
    """How one feature's per-key boundaries changed.

    Attributes:
        old_keys: Keys in OLD.
        new_keys: Keys in NEW.
        added: Keys only in NEW.
        removed: Keys only in OLD.
        changed: Keys in both whose boundaries differ.
        max_boundary_shift: Largest boundary shift of a key in its OLD boundary range
            (None if none).
        top_shifted: Up to five ``(key, shift)`` with the largest shifts, largest first.
        compared_keys: Keys with at least ``min_rows`` values on both sides and as many
            boundaries.
        shifted_share: Share of the compared keys' OLD values in keys whose boundary
            shift exceeds the limit (None without a compared key).
        most_shifted: ``(key, shift)`` of the largest finite shift among compared keys.
        moved_keys: Keys with at least ``min_key_rows`` values on both sides whose
            boundaries moved by at least :func:`key_limit` of their larger boundary range.
        most_moved: ``(key, shift)`` of the largest such move (shift None when infinite).
    """

    old_keys: int
    new_keys: int
    added: int
    removed: int
    changed: int
    max_boundary_shift: float | None
    top_shifted: tuple[tuple[str, float], ...]
    compared_keys: int = 0
    shifted_share: float | None = None
    most_shifted: tuple[str, float] | None = None
    moved_keys: int = 0
    most_moved: tuple[str, float | None] | None = None


def _shift(old: list[float], new: list[float]) -> float | None:
    span = old[-1] - old[0]
    if len(old) != len(new) or not span > 0:
        return None
    return max(abs(b - a) for a, b in zip(old, new)) / span


def compare_buckets(old_lines: Iterator[bytes], new_lines: Iterator[bytes],
                    old_buckets: int, new_buckets: int, *, old_where: str = "OLD",
                    new_where: str = "NEW", old_count: int | None = None,
                    new_count: int | None = None, min_rows: int = 100,
                    limit: float = 0.5, min_key_rows: int = 10,
                    key_shift: float = 0.5) -> BucketDiff:
    """Compares two bucket files given as line iterators (bytes without ``\\n``), with
    each side's ``num_buckets`` and, when known, its manifest's ``bucket_key_count``
    (``min_rows``, ``limit``: the drift share's settings; ``min_key_rows``,
    ``key_shift``: those of the keys checked alone; see the module docstring)."""
    old = ((r[0].encode("utf-8"), r) for r in iter_rows(old_lines, old_where, old_buckets,
                                                        old_count))
    new = ((r[0].encode("utf-8"), r) for r in iter_rows(new_lines, new_where, new_buckets,
                                                        new_count))
    a, b = next(old, None), next(new, None)
    counts = {"old": 0, "new": 0, "added": 0, "removed": 0, "changed": 0}
    shifted: list[tuple[float, str]] = []
    drift = ShiftShare(limit)
    extreme = ExtremeKeys()
    best = None
    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            counts["old"] += 1
            counts["removed"] += 1
            a = next(old, None)
        elif a is None or b[0] < a[0]:
            counts["new"] += 1
            counts["added"] += 1
            b = next(new, None)
        else:
            counts["old"] += 1
            counts["new"] += 1
            _tally(drift, a[1], b[1], min_rows)
            _alone(extreme, a[1], b[1], min_key_rows, key_shift)
            if a[1][3] != b[1][3]:
                counts["changed"] += 1
                shift = _shift(a[1][3], b[1][3])
                if shift is not None:
                    best = shift if best is None else max(best, shift)
                    item = (shift, a[1][0])
                    (heapq.heappush if len(shifted) < TOP else heapq.heappushpop)(shifted,
                                                                                  item)
            a, b = next(old, None), next(new, None)
    top = tuple((k, v) for v, k in sorted(shifted, key=lambda x: (-x[0], x[1])))
    return BucketDiff(counts["old"], counts["new"], counts["added"], counts["removed"],
                      counts["changed"], best, top, drift.compared, drift.share, drift.most,
                      extreme.count, extreme.worst)


def _tally(drift: ShiftShare, old: tuple, new: tuple, min_rows: int) -> None:
    """Adds a key on both sides to the drift share (frequent keys, as many boundaries)."""
    a, b = old[3], new[3]
    if min(old[1], new[1]) < min_rows or len(a) != len(b):
        return
    moved = max(abs(y - x) for x, y in zip(a, b))
    drift.add(old[0], old[1], relative_shift(0.0, moved, a[-1] - a[0]))


def _alone(extreme: ExtremeKeys, old: tuple, new: tuple, min_rows: int,
           limit: float) -> None:
    """Checks a key on both sides alone (enough values, as many boundaries)."""
    a, b = old[3], new[3]
    if min(old[1], new[1]) < min_rows or len(a) != len(b):
        return
    moved = max(abs(y - x) for x, y in zip(a, b))
    extreme.add(old[0], relative_shift(0.0, moved, max(a[-1] - a[0], b[-1] - b[0])),
                key_limit(limit, old[1], new[1]))


def compare_artifacts(old: Any, new: Any, name: str, *, min_rows: int = 100,
                      limit: float = 0.5, min_key_rows: int = 10,
                      key_shift: float = 0.5) -> BucketDiff | None:
    """The boundary drift of feature ``name`` when both artifact folders (opened
    :class:`~beam_prep.io.contract.artifacts.Artifacts`) have per-key buckets for it, else None."""
    role = "per_key_buckets"
    if not all(role in a.manifest["features"][name].get("files", {}) for a in (old, new)):
        return None
    return compare_buckets(
        old.iter_lines(name, role), new.iter_lines(name, role),
        int(old.spec.feature(name).num_buckets), int(new.spec.feature(name).num_buckets),
        old_where=old.file_path(name, role), new_where=new.file_path(name, role),
        old_count=old.stats(name).get("bucket_key_count"),
        new_count=new.stats(name).get("bucket_key_count"), min_rows=min_rows, limit=limit,
        min_key_rows=min_key_rows, key_shift=key_shift)
