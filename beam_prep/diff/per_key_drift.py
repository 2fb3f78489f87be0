"""Drift measures of per-key statistics, tallied during the merge-join of the two files.

:func:`~beam_prep.diff.per_key.compare_per_key` feeds each key to a :class:`KeyDriftTally`
(``removed``, ``added`` or ``both``); :meth:`KeyDriftTally.result` gives a :class:`KeyDrift`:

* ``added_share``: NEW's values whose key is not in OLD, over NEW's values (the layer
  falls back to the global statistics for them);
* ``removed_share``: OLD's values whose key is gone from NEW, over OLD's values;
* ``key_count_change``: ``(new keys - old keys) / max(old keys, 1)``;
* ``shifted_share``: over the keys on both sides with at least ``min_rows`` values on each
  side (``compared_keys``; fewer values make a key's mean noise), the share of their OLD
  values held by keys whose ``|new mean - old mean|`` exceeds ``limit`` OLD *global* std
  units (the feature's own std: a key of one value has no std of its own), with
  ``most_shifted`` (key, shift) the largest such shift; None without a compared key or
  without a positive global std.

Example:
    >>> tally = KeyDriftTally(scale=2.0, min_rows=2, limit=0.5)
    >>> tally.both(("a", 4, 1.0), ("a", 4, 3.0))    # shift (3 - 1) / 2 = 1.0 > 0.5
    >>> tally.both(("b", 12, 5.0), ("b", 10, 5.5))  # 0.25: not shifted
    >>> tally.added(("c", 6, 0.0))
    >>> d = tally.result(old_keys=2, new_keys=3)
    >>> d.shifted_share, d.added_share, d.key_count_change, d.most_shifted
    (0.25, 0.3, 0.5, ('a', 1.0))
"""

from __future__ import annotations

import dataclasses
import math

__all__ = ["KeyDrift", "KeyDriftTally"]


@dataclasses.dataclass(frozen=True)
class KeyDrift:
    """Coverage and mean drift of one feature's keys (see the module docstring).

    Attributes:
        added_share: NEW values whose key is not in OLD / NEW values (None: no NEW value).
        removed_share: OLD values whose key is not in NEW / OLD values (None: no OLD value).
        key_count_change: ``(new keys - old keys) / max(old keys, 1)``.
        compared_keys: Keys on both sides with at least ``min_rows`` values on each.
        shifted_share: Share of the compared keys' OLD values in keys whose mean moved by
            more than the limit, in OLD global std units (None: nothing to compare).
        most_shifted: ``(key, |shift|)`` of the largest shift among compared keys.
    """

    added_share: float | None
    removed_share: float | None
    key_count_change: float
    compared_keys: int
    shifted_share: float | None
    most_shifted: tuple[str, float] | None


class KeyDriftTally:
    """Accumulates :class:`KeyDrift` over the keys of a merge-join (rows: ``(key, count,
    mean, ...)`` as :func:`beam_prep.io.per_key_file.iter_rows` yields them).

    Args:
        scale: OLD's global std of the feature (None or 0: no shifted share).
        min_rows: Values a key needs on each side to count in the shifted share.
        limit: Shift, in ``scale`` units, above which a key counts as shifted.
    """

    def __init__(self, scale: float | None = None, min_rows: int = 100,
                 limit: float = 0.5) -> None:
        self._scale = scale if scale is not None and scale > 0 and math.isfinite(scale) \
            else None
        self._min, self._limit = min_rows, limit
        self._old = self._new = self._added = self._removed = 0
        self._compared = self._weight = self._shifted = 0
        self._top: tuple[float, str] | None = None

    def removed(self, row: tuple) -> None:
        self._old += row[1]
        self._removed += row[1]

    def added(self, row: tuple) -> None:
        self._new += row[1]
        self._added += row[1]

    def both(self, old: tuple, new: tuple) -> None:
        self._old += old[1]
        self._new += new[1]
        if self._scale is None or min(old[1], new[1]) < self._min:
            return
        shift = abs(new[2] - old[2]) / self._scale
        if not math.isfinite(shift):
            return
        self._compared += 1
        self._weight += old[1]
        if shift > self._limit:
            self._shifted += old[1]
        if self._top is None or shift > self._top[0]:
            self._top = (shift, old[0])

    def result(self, old_keys: int, new_keys: int) -> KeyDrift:
        def share(part: int, whole: int) -> float | None:
            return part / whole if whole else None

        return KeyDrift(share(self._added, self._new), share(self._removed, self._old),
                        (new_keys - old_keys) / max(old_keys, 1), self._compared,
                        share(self._shifted, self._weight),
                        None if self._top is None else (self._top[1], self._top[0]))
