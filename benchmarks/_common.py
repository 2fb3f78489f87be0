"""Shared helpers of the benchmark scripts: the result "dump" layout and comparisons.

Every baseline (TF Transform, the single-process floor, Keras adapt) writes what it computed
to a dump directory so the harness can compare it with beam_prep's artifacts::

    DUMP/vocab/<feature>.txt   one token per line, in the contender's order
    DUMP/stats.json            {feature: {count, mean, variance, boundaries}}
    DUMP/timing.json           {"analyze_seconds": ..., "rows": ..., ...} (in-process timings)

beam_prep itself is read through ``beam_prep.Artifacts`` (its public reader).

Example:
    >>> d = read_dump("benchmarks/results/x/tft")          # doctest: +SKIP
    >>> d.vocabulary("c1")[:2]                               # doctest: +SKIP
    ['00000011', '9e3798b1']
"""

from __future__ import annotations

import glob
import json
import math
import os
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class StatsSource(Protocol):
    """What the comparison needs from any contender's output."""

    def vocabulary(self, name: str) -> list[str]: ...

    def stats(self, name: str) -> dict[str, Any]: ...


def write_dump(out: str, vocabs: dict[str, Sequence[str]], stats: dict[str, dict[str, Any]],
               timing: dict[str, Any]) -> None:
    """Writes a dump directory (see module docstring)."""
    os.makedirs(os.path.join(out, "vocab"), exist_ok=True)
    for name, tokens in vocabs.items():
        with open(os.path.join(out, "vocab", f"{name}.txt"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in tokens))
    clean = {n: {k: _jsonable(v) for k, v in s.items()} for n, s in stats.items()}
    with open(os.path.join(out, "stats.json"), "w") as f:
        json.dump(clean, f, indent=1)
    with open(os.path.join(out, "timing.json"), "w") as f:
        json.dump(timing, f, indent=1)


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(float(v)) else None
    if isinstance(v, np.integer):
        return int(v)
    return v


class Dump:
    """Reader of a dump directory (same two methods as ``beam_prep.Artifacts``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(os.path.join(path, "stats.json")) as f:
            self._stats: dict[str, dict[str, Any]] = json.load(f)
        timing_path = os.path.join(path, "timing.json")
        self.timing: dict[str, Any] = {}
        if os.path.exists(timing_path):
            with open(timing_path) as f:
                self.timing = json.load(f)

    def vocabulary(self, name: str) -> list[str]:
        with open(os.path.join(self.path, "vocab", f"{name}.txt"), encoding="utf-8") as f:
            text = f.read()
        return text.split("\n")[:-1] if text else []

    def has_vocabulary(self, name: str) -> bool:
        return os.path.exists(os.path.join(self.path, "vocab", f"{name}.txt"))

    def stats(self, name: str) -> dict[str, Any]:
        return dict(self._stats.get(name, {}))


def read_dump(path: str) -> Dump:
    """Opens a dump directory."""
    return Dump(path)


def load_spec_features(spec_path: str) -> tuple[list[tuple[str, str, int | None]],
                                                 list[tuple[str, str, int, float]]]:
    """(categorical, numeric) features of a spec, as plain tuples.

    Returns:
        ``[(name, column, top_k)]`` for string features and
        ``[(name, column, num_buckets, epsilon)]`` for numeric ones.
    """
    from beam_prep.spec import Spec

    with open(spec_path, encoding="utf-8") as f:
        spec = Spec.from_yaml_text(f.read())
    cats = [(f.name, f.source_column, f.top_k) for f in spec.of_kind("string")]
    nums = [(f.name, f.source_column, f.num_buckets, f.resolved_epsilon())
            for f in spec.of_kind("numeric")]
    return cats, nums


def parquet_files(data_dir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(data_dir, "parquet", "*.parquet")))


def rel_err(a: float | None, b: float | None) -> float:
    """|a - b| / max(|b|, tiny); inf when exactly one is missing."""
    if a is None and b is None:
        return 0.0
    if a is None or b is None:
        return math.inf
    return abs(a - b) / max(abs(b), 1e-300)


def rank_errors(values_sorted: np.ndarray, boundaries: Sequence[float],
                num_buckets: int) -> float:
    """Max |rank(b_i) - i/num_buckets| over boundaries, ranks as fractions of the data.

    ``rank(b)`` is taken as the midpoint of ``[#(x < b), #(x <= b)]`` so a boundary that
    falls on a heavily repeated value is credited with its best position.
    """
    n = len(values_sorted)
    if n == 0 or not len(boundaries):
        return math.nan
    b = np.asarray(boundaries, dtype=np.float64)
    lo = np.searchsorted(values_sorted, b, side="left")
    hi = np.searchsorted(values_sorted, b, side="right")
    target = np.arange(1, len(b) + 1) / num_buckets * n
    # Distance from the target rank to the interval [lo, hi] of ranks b can stand for.
    err = np.maximum(0, np.maximum(lo - target, target - hi))
    return float(err.max() / n)


def compare(a: StatsSource, b: StatsSource, cats: list, nums: list,
            numeric_values: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Compares contender ``a`` against reference ``b``.

    Returns:
        ``vocab_identical`` (features whose files match exactly), ``vocab_diff`` (feature ->
        first differing line and lengths), ``mean_rel_max`` / ``var_rel_max`` (worst relative
        errors), ``boundaries_equal`` (features with identical boundaries) and, when the sorted
        data is given, ``rank_err_max`` for each side.
    """
    out: dict[str, Any] = {"vocab_identical": 0, "vocab_total": len(cats), "vocab_diff": {}}
    for name, _, _ in cats:
        va, vb = a.vocabulary(name), b.vocabulary(name)
        if va == vb:
            out["vocab_identical"] += 1
        else:
            first = next((i for i, (x, y) in enumerate(zip(va, vb)) if x != y),
                         min(len(va), len(vb)))
            out["vocab_diff"][name] = {"first_diff_line": first, "len_a": len(va),
                                       "len_b": len(vb),
                                       "same_set": set(va) == set(vb)}
    mean_rel, var_rel, bounds_equal = 0.0, 0.0, 0
    rank_a, rank_b = 0.0, 0.0
    for name, _, num_buckets, _ in nums:
        sa, sb = a.stats(name), b.stats(name)
        mean_rel = max(mean_rel, rel_err(sa.get("mean"), sb.get("mean")))
        var_rel = max(var_rel, rel_err(sa.get("variance"), sb.get("variance")))
        ba, bb = sa.get("boundaries") or [], sb.get("boundaries") or []
        bounds_equal += int(list(ba) == list(bb))
        if numeric_values is not None and name in numeric_values:
            rank_a = max(rank_a, rank_errors(numeric_values[name], ba, num_buckets))
            rank_b = max(rank_b, rank_errors(numeric_values[name], bb, num_buckets))
    out.update(mean_rel_max=mean_rel, var_rel_max=var_rel, boundaries_equal=bounds_equal,
               numeric_total=len(nums))
    if numeric_values is not None:
        out.update(rank_err_max_a=rank_a, rank_err_max_b=rank_b)
    return out
