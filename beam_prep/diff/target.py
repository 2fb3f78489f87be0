"""Drift of a target encoding (``target_encoding:``): global mean and per-token encodings.

Read from the manifests' ``stats.target_encoding`` and both ``vocab/<name>.target.jsonl``
files (memory: OLD's token -> (encoding, rows) map; NEW's file is streamed):

* the global means of OLD and NEW and the token counts;
* ``shared``: tokens on both sides, and ``max_encoding_change``: the largest absolute change
  of a shared token's (serving) encoding, with that token;
* ``label_std``: OLD's label standard deviation, *estimated* from OLD's file (it holds no
  sum of squares): ``sqrt(within + between)`` with ``between = sum_t C_t (m_t - g)^2 / sum_t C_t``
  (token means ``m_t`` about OLD's global mean ``g``) and ``within = sum_t sum_k C_tk
  (m_tk - m_t)^2 / sum_t (K_t - 1)`` (one-way analysis of variance of the per-fold means of
  each token with rows in ``K_t >= 2`` folds); None when it is 0 or undefined;
* ``global_mean_shift``: ``(new global mean - old global mean) / label_std``;
* ``added_share``: NEW's labelled token rows whose token is not in OLD's file (OLD's
  encodings give them the global mean), ``removed_share``: OLD's whose token is gone;
* ``shifted_share``: over the tokens with at least ``min_rows`` labelled rows on both sides
  (``compared_tokens``), the share of their OLD rows held by tokens whose encoding moved by
  more than ``token_limit`` label std, with ``most_shifted`` (token, shift).

Example:
    >>> d = TargetDiff(0.5, 0.6, 10, 12, 9, 0.25, "a")
    >>> d.max_encoding_change
    0.25
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from beam_prep.io.contract.target_file import rows_of

__all__ = ["TargetDiff", "compare_target"]


@dataclasses.dataclass(frozen=True)
class TargetDiff:
    """How a target encoding changed between two analyses (see the module docstring).

    Attributes:
        old_global_mean: OLD's global mean (None when no row had a label).
        new_global_mean: NEW's.
        old_tokens: Tokens in OLD's file.
        new_tokens: Tokens in NEW's file.
        shared: Tokens in both.
        max_encoding_change: Largest absolute change of a shared token's encoding (None
            when no token is shared).
        most_changed_token: Its token.
        label_std: OLD's estimated label standard deviation (None: not positive).
        global_mean_shift: Global mean change in ``label_std`` units.
        added_share: Share of NEW's labelled token rows whose token OLD does not list.
        removed_share: Share of OLD's labelled token rows whose token NEW does not list.
        compared_tokens: Tokens with at least ``min_rows`` rows on both sides.
        shifted_share: Share of the compared tokens' OLD rows whose encoding moved by more
            than the limit (None: no compared token or no ``label_std``).
        most_shifted: ``(token, |shift| in label_std units)``, the largest among compared.
    """

    old_global_mean: float | None
    new_global_mean: float | None
    old_tokens: int
    new_tokens: int
    shared: int
    max_encoding_change: float | None
    most_changed_token: str | None
    label_std: float | None = None
    global_mean_shift: float | None = None
    added_share: float | None = None
    removed_share: float | None = None
    compared_tokens: int = 0
    shifted_share: float | None = None
    most_shifted: tuple[str, float] | None = None


def _number(v: Any) -> float | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None


class _LabelSpread:
    """The label variance estimate of the module docstring, one OLD line at a time."""

    def __init__(self, global_mean: float | None) -> None:
        self._g = global_mean or 0.0
        self.between = self.rows = self.within = 0.0
        self.df = 0

    def add(self, rows: list[int], sums: list) -> None:
        cells = [(r, _number(s)) for r, s in zip(rows, sums) if r > 0]
        if not cells or any(s is None for _, s in cells):
            return
        total_rows = sum(r for r, _ in cells)
        mean = sum(s for _, s in cells) / total_rows
        self.between += total_rows * (mean - self._g) ** 2
        self.rows += total_rows
        if len(cells) > 1:
            self.within += sum(r * (s / r - mean) ** 2 for r, s in cells)
            self.df += len(cells) - 1

    def std(self) -> float | None:
        if not self.rows:
            return None
        var = self.between / self.rows + (self.within / self.df if self.df else 0.0)
        return math.sqrt(var) if var > 0 and math.isfinite(var) else None


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def compare_target(old: Any, new: Any, name: str, *, min_rows: int = 100,
                   token_limit: float = 0.25) -> TargetDiff | None:
    """The comparison, or None unless both sides of ``name`` have a target encoding.

    Args:
        old: OLD :class:`~beam_prep.io.contract.artifacts.Artifacts`.
        new: NEW's.
        name: The feature.
        min_rows: Labelled rows a token needs on each side to count in ``shifted_share``.
        token_limit: Encoding shift, in ``label_std`` units, above which it is shifted.
    """
    a, b = (art.stats(name).get("target_encoding") for art in (old, new))
    if not isinstance(a, dict) or not isinstance(b, dict):
        return None
    spread = _LabelSpread(_number(a.get("global_mean")))
    before: dict[str, tuple[float | None, int]] = {}
    for tok, enc, rows, sums, _ in rows_of(old, name):
        before[tok] = (enc, sum(rows))
        spread.add(rows, sums)
    std = spread.std()
    change, token, shared = None, None, 0
    new_rows = added = kept_old = weight = shifted = compared = 0
    top: tuple[float, str] | None = None
    for tok, enc, rows, _, _ in rows_of(new, name):
        new_rows += sum(rows)
        if tok not in before:
            added += sum(rows)
            continue
        shared += 1
        old_enc, old_rows = before[tok]
        kept_old += old_rows
        if enc is None or old_enc is None:
            continue
        delta = abs(enc - old_enc)
        if change is None or delta > change or (delta == change and tok < token):
            change, token = delta, tok
        moved = delta / std if std is not None else math.inf
        if math.isfinite(moved) and min(old_rows, sum(rows)) >= min_rows:
            compared += 1
            weight += old_rows
            shifted += old_rows if moved > token_limit else 0
            if top is None or moved > top[0] or (moved == top[0] and tok < top[1]):
                top = (moved, tok)
    old_rows_all = sum(r for _, r in before.values())
    means = [_number(a.get("global_mean")), _number(b.get("global_mean"))]
    shift = None if std is None or None in means else (means[1] - means[0]) / std
    shift = shift if shift is None or math.isfinite(shift) else None
    return TargetDiff(a.get("global_mean"), b.get("global_mean"), a.get("tokens", 0),
                      b.get("tokens", 0), shared, change, token, std, shift,
                      _share(added, new_rows), _share(old_rows_all - kept_old, old_rows_all),
                      compared, _share(shifted, weight),
                      None if top is None else (top[1], top[0]))
