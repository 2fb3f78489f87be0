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
  without a positive global std;
* ``std_shifted_share``: over the same frequent keys, the share of their OLD values held by
  keys whose std moved by more than ``std_limit`` of the key's own OLD std
  (``|new std - old std| / old std``: a key's z-scores are divided by its std, so a std
  falling from 1 to 0.05 makes them 20 times larger); a key whose OLD std is 0 counts as
  shifted when its std changed; a key with a null variance on either side is left out;
* ``range_shifted_share``: the same for the key's ``[min, max]`` (what ``scaling:
  min_max`` scales by): ``max(|new min - old min|, |new max - old max|) / (old max - old
  min)`` above ``range_limit``; a key whose OLD range is 0 counts as shifted when its min
  or max changed.

Each share comes with the key of its largest finite shift (``most_std_shifted``,
``most_range_shifted``).

The shares miss an extreme change of one key that holds few values, or few of the compared
values. So every key with at least ``min_key_rows`` values on both sides is also checked
alone: ``extreme_std_keys`` counts those whose std changed by a factor of at least
``std_ratio`` in either direction (:func:`std_ratio`; a std of 0 on one side only is an
infinite factor), ``worst_std_ratio`` is ``(key, factor, old std, new std)`` of the largest
(factor None when infinite). Sample stds of two draws of 10 normal values differ by a
factor >= 4 with probability about 3e-4 (simulated), of 20 values about 1e-7.

Example:
    >>> tally = KeyDriftTally(scale=2.0, min_rows=2, limit=0.5)
    >>> tally.both(("a", 4, 1.0, 1.0, 0.0, 2.0), ("a", 4, 3.0, 1.0, 2.0, 4.0))  # mean: 1.0
    >>> tally.both(("b", 12, 5.0, 4.0, 1.0, 9.0), ("b", 10, 5.5, 0.01, 5.0, 6.0))  # std
    >>> tally.added(("c", 6, 0.0, 0.0, 0.0, 0.0))
    >>> d = tally.result(old_keys=2, new_keys=3)
    >>> d.shifted_share, d.added_share, d.key_count_change, d.most_shifted
    (0.25, 0.3, 0.5, ('a', 1.0))
    >>> d.std_shifted_share, d.most_std_shifted, d.range_shifted_share
    (0.75, ('b', 0.95), 0.25)
    >>> d.extreme_std_keys, d.worst_std_ratio
    (1, ('b', 20.0, 2.0, 0.1))
"""

from __future__ import annotations

import dataclasses
import math

__all__ = ["ExtremeKeys", "KeyDrift", "KeyDriftTally", "ShiftShare", "relative_shift",
           "std_ratio"]


def relative_shift(old: float, new: float, scale: float) -> float:
    """``|new - old| / scale``; ``inf`` when ``scale`` is 0 and the value moved (0 if not),
    NaN when a value is NaN (nothing to compare)."""
    delta = abs(new - old)
    if scale > 0 or math.isnan(delta):
        return delta / scale
    return math.inf if delta else 0.0


def std_ratio(old_std: float, new_std: float) -> float:
    """The factor by which a std changed, in either direction (>= 1): ``inf`` when it is 0
    on one side only, 1 when 0 on both, NaN when unknown (a null variance) on either."""
    if math.isnan(old_std) or math.isnan(new_std):
        return math.nan
    low, high = sorted((old_std, new_std))
    if low > 0:
        return high / low
    return math.inf if high > 0 else 1.0


class ExtremeKeys:
    """The keys whose change alone reaches a limit, whatever their share of the values."""

    def __init__(self) -> None:
        self.count = 0
        self._worst: tuple[float, str, tuple] | None = None

    def add(self, key: str, change: float, limit: float, *extra: float) -> None:
        """One checked key: counted when ``change >= limit`` (NaN: not compared); the
        largest change (``inf`` first) is kept with ``extra`` values to show."""
        if not change >= limit:
            return
        self.count += 1
        if self._worst is None or change > self._worst[0]:
            self._worst = (change, key, extra)

    @property
    def worst(self) -> tuple | None:
        """``(key, change, *extra)`` of the largest change (change None when infinite)."""
        if self._worst is None:
            return None
        change, key, extra = self._worst
        return (key, change if math.isfinite(change) else None, *extra)


class ShiftShare:
    """The share of the compared keys' OLD values held by keys that shifted beyond a limit.

    Args:
        limit: Shift above which a key counts as shifted.
    """

    def __init__(self, limit: float) -> None:
        self._limit = limit
        self.compared = 0
        self._weight = self._shifted = 0
        self._top: tuple[float, str] | None = None

    def add(self, key: str, weight: int, shift: float) -> None:
        """One compared key of ``weight`` OLD values; ``shift`` may be ``inf`` (a change
        that has no scale: counted as shifted, never the largest shown)."""
        if math.isnan(shift):
            return
        self.compared += 1
        self._weight += weight
        if shift > self._limit:
            self._shifted += weight
        if math.isfinite(shift) and (self._top is None or shift > self._top[0]):
            self._top = (shift, key)

    @property
    def share(self) -> float | None:
        """Shifted OLD values / compared OLD values (None without a compared key)."""
        return self._shifted / self._weight if self._weight else None

    @property
    def most(self) -> tuple[str, float] | None:
        """``(key, shift)`` of the largest finite shift."""
        return None if self._top is None else (self._top[1], self._top[0])


@dataclasses.dataclass(frozen=True)
class KeyDrift:
    """Coverage, mean, std and range drift of one feature's keys (see the module docstring).

    Attributes:
        added_share: NEW values whose key is not in OLD / NEW values (None: no NEW value).
        removed_share: OLD values whose key is not in NEW / OLD values (None: no OLD value).
        key_count_change: ``(new keys - old keys) / max(old keys, 1)``.
        compared_keys: Keys on both sides with at least ``min_rows`` values on each.
        shifted_share: Share of the compared keys' OLD values in keys whose mean moved by
            more than the limit, in OLD global std units (None: nothing to compare).
        most_shifted: ``(key, |shift|)`` of the largest shift among compared keys.
        std_shifted_share: Share of the compared keys' OLD values in keys whose std moved
            by more than the std limit, in the key's OLD std (None: nothing to compare).
        most_std_shifted: ``(key, |new std - old std| / old std)`` of the largest.
        range_shifted_share: Share of the compared keys' OLD values in keys whose min or
            max moved by more than the range limit, in the key's OLD ``max - min``.
        most_range_shifted: ``(key, shift)`` of the largest range shift.
        extreme_std_keys: Keys with at least ``min_key_rows`` values on both sides whose std
            changed by a factor of at least the std ratio limit, either direction.
        worst_std_ratio: ``(key, factor, old std, new std)`` of the largest such factor
            (factor None when infinite: a std of 0 on one side only).
    """

    added_share: float | None
    removed_share: float | None
    key_count_change: float
    compared_keys: int
    shifted_share: float | None
    most_shifted: tuple[str, float] | None
    std_shifted_share: float | None = None
    most_std_shifted: tuple[str, float] | None = None
    range_shifted_share: float | None = None
    most_range_shifted: tuple[str, float] | None = None
    extreme_std_keys: int = 0
    worst_std_ratio: tuple[str, float | None, float, float] | None = None


class KeyDriftTally:
    """Accumulates :class:`KeyDrift` over the keys of a merge-join (rows: ``(key, count,
    mean, variance, min, max)`` as :func:`beam_prep.io.contract.per_key_file.iter_rows`
    yields them).

    Args:
        scale: OLD's global std of the feature (None or 0: no mean shifted share).
        min_rows: Values a key needs on each side to be compared.
        limit: Mean shift, in ``scale`` units, above which a key counts as shifted.
        std_limit: Std shift, in the key's OLD std, above which a key counts as shifted.
        range_limit: Min or max shift, in the key's OLD range, above which a key counts
            as shifted.
        min_key_rows: Values a key needs on each side to be checked alone.
        std_ratio: Factor of std change (either direction) from which a key checked alone
            counts in ``extreme_std_keys``.
    """

    def __init__(self, scale: float | None = None, min_rows: int = 100,
                 limit: float = 0.5, std_limit: float = 0.5,
                 range_limit: float = 0.5, *, min_key_rows: int = 10,
                 std_ratio: float = 4.0) -> None:
        self._scale = scale if scale is not None and scale > 0 and math.isfinite(scale) \
            else None
        self._min = min_rows
        self._old = self._new = self._added = self._removed = 0
        self._mean = ShiftShare(limit)
        self._std = ShiftShare(std_limit)
        self._range = ShiftShare(range_limit)
        self._min_key = min_key_rows
        self._ratio = std_ratio
        self._extreme = ExtremeKeys()

    def removed(self, row: tuple) -> None:
        self._old += row[1]
        self._removed += row[1]

    def added(self, row: tuple) -> None:
        self._new += row[1]
        self._added += row[1]

    def both(self, old: tuple, new: tuple) -> None:
        self._old += old[1]
        self._new += new[1]
        rows = min(old[1], new[1])
        key, weight = old[0], old[1]
        if len(old) > 5 and rows >= self._min_key:
            stds = math.sqrt(old[3]), math.sqrt(new[3])
            self._extreme.add(key, std_ratio(*stds), self._ratio, *stds)
        if rows < self._min:
            return
        if self._scale is not None:
            shift = abs(new[2] - old[2]) / self._scale
            if math.isfinite(shift):
                self._mean.add(key, weight, shift)
        if len(old) > 5:
            # a null variance (NaN) compares as NaN and is left out by ShiftShare.add
            self._std.add(key, weight, relative_shift(
                math.sqrt(old[3]), math.sqrt(new[3]), math.sqrt(old[3])))
            moved = max(abs(new[4] - old[4]), abs(new[5] - old[5]))
            self._range.add(key, weight, relative_shift(0.0, moved, old[5] - old[4]))

    def result(self, old_keys: int, new_keys: int) -> KeyDrift:
        def share(part: int, whole: int) -> float | None:
            return part / whole if whole else None

        return KeyDrift(share(self._added, self._new), share(self._removed, self._old),
                        (new_keys - old_keys) / max(old_keys, 1), self._mean.compared,
                        self._mean.share, self._mean.most,
                        self._std.share, self._std.most,
                        self._range.share, self._range.most,
                        self._extreme.count, self._extreme.worst)
