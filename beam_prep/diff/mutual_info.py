"""Drift of a label-aware vocabulary (``labels:``): top tokens by score, label shares.

The count-sidecar comparison (:mod:`beam_prep.diff.vocab`) still runs: the vocabulary is a
vocabulary. This adds what only a label-aware one has, read from the manifests'
``stats.mutual_info`` and the first ``top_n`` lines of each MI sidecar:

* the top ``top_n`` tokens of OLD and NEW with their scores, and ``top_overlap``: the share
  of OLD's top tokens still among NEW's (None when OLD has none);
* ``label_share_change``: the largest change, over the labels of either side, of a label's
  share of the labelled rows (flagged like a missing-rate change, ``max_rate_change``), and
  the label it happened to; None when either side lists no label counts.

Example:
    >>> d = MutualInfoDiff("y", "y", [("a", 2.0)], [("b", 3.0)], 0.0, 0.25, "1")
    >>> d.top_overlap, d.label_share_change
    (0.0, 0.25)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from beam_prep.io.contract.label_sidecar import mutual_info_rows


@dataclasses.dataclass(frozen=True)
class MutualInfoDiff:
    """How a label-aware vocabulary's ranking and label distribution changed.

    Attributes:
        old_label_column: OLD's label column.
        new_label_column: NEW's label column.
        old_top: ``(token, score)`` of OLD's first tokens (best score first).
        new_top: Same for NEW.
        top_overlap: Share of ``old_top`` tokens present in ``new_top``.
        label_share_change: Largest absolute change of a label's share of labelled rows.
        most_changed_label: The label of ``label_share_change``.
    """

    old_label_column: str
    new_label_column: str
    old_top: list[tuple[str, float]]
    new_top: list[tuple[str, float]]
    top_overlap: float | None
    label_share_change: float | None
    most_changed_label: str | None


def _shares(mi: dict[str, Any]) -> dict[str, float] | None:
    rows = mi.get("label_rows")
    total = sum(rows.values()) if rows else 0
    return {k: v / total for k, v in rows.items()} if total else None


def compare_mutual_info(old: Any, new: Any, name: str, *, top_n: int) -> MutualInfoDiff | None:
    """The comparison, or None unless both sides of ``name`` are label-aware."""
    old_mi, new_mi = old.stats(name).get("mutual_info"), new.stats(name).get("mutual_info")
    if not isinstance(old_mi, dict) or not isinstance(new_mi, dict):
        return None
    old_top = [(t, s) for t, s, _ in mutual_info_rows(old, name, limit=top_n)]
    new_top = [(t, s) for t, s, _ in mutual_info_rows(new, name, limit=top_n)]
    kept = {t for t, _ in new_top}
    overlap = (sum(t in kept for t, _ in old_top) / len(old_top)) if old_top else None
    a, b = _shares(old_mi), _shares(new_mi)
    change = label = None
    if a is not None and b is not None:
        label, change = max(((k, abs(b.get(k, 0.0) - a.get(k, 0.0))) for k in sorted(
            set(a) | set(b), key=lambda k: (len(k), k))), key=lambda kv: kv[1])
    return MutualInfoDiff(old_mi["label_column"], new_mi["label_column"], old_top, new_top,
                          overlap, change, label)
