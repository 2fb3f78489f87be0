"""ELWC page parts from the per-list and per-document fields of ``stats.json``.

The fields (:mod:`beam_prep.ranking.data.list_stats`): ``relevant_per_list_histogram``
(relevant = label > 0, the rule of ``--drop_no_positive``; the last key may be an overflow
bucket such as ``"256+"``), ``max_label_per_list_histogram``, ``example_features_present``
(documents carrying each example feature) and ``context_features_present`` (lists whose
context value is not null). ``stats.json`` files written before these fields existed lack
them: the page then says "not recorded" instead of a number.

Example:
    >>> int_bins({"0": 2, "3": 1, "4+": 5})
    (['0', '1', '2', '3', '≥4'], [2, 0, 0, 1, 5])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from beam_prep.report import svg
from beam_prep.report.page import fmt_int, fmt_pct, kv_table, note, text

NOT_RECORDED = "not recorded"
_NOT_RECORDED_NOTE = (" Not recorded in this stats.json (written by an older make-elwc): "
                      "re-run make-elwc to see it.")
_MAX_BARS = 60
_LEAST = 10
_SHARE_BINS = 10


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def int_bins(hist: dict[str, Any], *, max_bars: int = _MAX_BARS
             ) -> tuple[list[str], list[int]]:
    """Bars of a histogram keyed by integers ``"0"``, ``"1"``, … plus an optional ``"N+"``.

    One bar per value from 0 to the largest key, or ``max_bars`` equal bins when there are
    more values; an overflow bucket ``"N+"`` is one more bar labelled ``≥N``.

    Example:
        >>> int_bins({"1": 2, "2+": 5})
        (['0', '1', '≥2'], [0, 2, 5])
    """
    exact = {int(k): int(v) for k, v in hist.items() if not k.endswith("+")}
    over = [(int(k[:-1]), int(v)) for k, v in hist.items() if k.endswith("+")]
    top = max(exact, default=0)
    if over:
        top = max(top, over[0][0] - 1)
    if top + 1 <= max_bars:
        labels = [str(v) for v in range(top + 1)]
        counts = [exact.get(v, 0) for v in range(top + 1)]
    else:
        width = math.ceil((top + 1) / max_bars)
        n = math.ceil((top + 1) / width)
        counts = [0] * n
        for v, c in exact.items():
            counts[v // width] += c
        labels = [f"{i * width}–{(i + 1) * width - 1}" for i in range(n)]
    for start, c in over:
        labels.append(f"≥{start}")
        counts.append(c)
    return labels, counts


def per_list_labels(st: dict[str, Any]) -> tuple[list[tuple[str, str]], list[str]]:
    """Table rows and charts (HTML) of the label distribution per list.

    Returns rows for the Labels card (lists with no relevant label, relevant documents per
    list) and the two charts (relevant documents per list, largest label per list).
    """
    lists = int(st.get("lists", 0))
    labels = st.get("label_histogram", {})
    relevant_docs = sum(int(v) for k, v in labels.items() if float(k) > 0)
    docs = int(st.get("documents", 0))
    rows = [("relevant documents (label > 0)",
             f"{fmt_int(relevant_docs)} ({fmt_pct(_share(relevant_docs, docs))})"),
            ("relevant documents per list (mean)",
             "—" if not lists else f"{relevant_docs / lists:.4g}")]
    rel = st.get("relevant_per_list_histogram")
    if rel is None:
        rows.append(("lists with no relevant label", NOT_RECORDED))
        charts = [note("Relevant documents per list and the largest label per list:" +
                       _NOT_RECORDED_NOTE)]
    else:
        none = int(rel.get("0", 0))
        rows.append(("lists with no relevant label", f"{fmt_int(none)} "
                                                     f"({fmt_pct(_share(none, lists))})"))
        bar_labels, counts = int_bins(rel)
        charts = ["<h4>Relevant documents per list</h4>",
                  svg.columns(bar_labels, counts, title="relevant documents per list",
                              x_label="relevant documents (label > 0) in the list",
                              y_label="lists")]
        top = st.get("max_label_per_list_histogram") or {}
        ordered = sorted(top.items(), key=lambda kv: float(kv[0]))[:_MAX_BARS]
        charts.append("<h4>Largest label per list</h4>")
        charts.append(svg.columns([k for k, _ in ordered], [int(v) for _, v in ordered],
                                  title="largest label per list", x_label="largest label "
                                  "of the list", y_label="lists"))
        for k, v in ordered:
            rows.append((f"lists with largest label {k}",
                         f"{fmt_int(v)} ({fmt_pct(_share(int(v), lists))})"))
    events = st.get("events", {})
    if events.get("lists_dropped_no_positive"):
        rows.append(("lists dropped (no relevant label, --drop_no_positive)",
                     fmt_int(events["lists_dropped_no_positive"])))
    return rows, charts


def _share_bins(shares: Sequence[float]) -> tuple[list[str], list[int]]:
    """Features by share of documents: ten 10 % bins below 100 %, then exactly 100 %."""
    counts = [0] * (_SHARE_BINS + 1)
    for s in shares:
        counts[_SHARE_BINS if s >= 1.0 else min(int(s * _SHARE_BINS), _SHARE_BINS - 1)] += 1
    step = 100 // _SHARE_BINS
    return [f"{i * step}–{(i + 1) * step}%" for i in range(_SHARE_BINS)] + ["100%"], counts


def presence(st: dict[str, Any], example_order: Sequence[str], is_letor: bool) -> str:
    """HTML of the "features present per document" part of the Features card.

    Args:
        st: stats.json.
        example_order: example feature names in ``feature_spec.json`` order (others follow).
        is_letor: LETOR / LightGBM input (explains what "present" means there).
    """
    present = st.get("example_features_present")
    if present is None:
        return note("Features present per document:" + _NOT_RECORDED_NOTE)
    docs, lists = int(st.get("documents", 0)), int(st.get("lists", 0))
    names = [n for n in example_order if n in present]
    names += [n for n in present if n not in set(names)]
    shares = [_share(int(present[n]), docs) or 0.0 for n in names]
    rows = [("documents", fmt_int(docs)), ("example features", fmt_int(len(names))),
            ("on every document", fmt_int(sum(s >= 1.0 for s in shares))),
            ("on no document", fmt_int(sum(int(present[n]) == 0 for n in names))),
            ("on fewer than half of the documents", fmt_int(sum(s < 0.5 for s in shares)))]
    least = sorted(zip(shares, names))[:_LEAST]
    for s, n in least:
        if s < 1.0:
            rows.append((f"least present: {n}", f"{fmt_int(present[n])} ({fmt_pct(s)})"))
    for n, c in (st.get("context_features_present") or {}).items():
        rows.append((f"context {n} (lists)", f"{fmt_int(c)} ({fmt_pct(_share(int(c), lists))})"))
    if not names or not docs:
        chart = note("No document was written.")
    elif len(names) <= _MAX_BARS:
        chart = svg.hbars(names, shares, value_labels=[
            f"{int(present[n]):,} ({fmt_pct(s)})" for n, s in zip(names, shares)],
            title="share of documents carrying each feature")
    else:
        labels, counts = _share_bins(shares)
        chart = svg.columns(labels, counts, title="features by share of documents",
                            x_label="share of documents carrying the feature",
                            y_label="features")
    what = ("present = the feature id is on the input line; absent ids are written densely "
            "with --missing_value" if is_letor else
            "present = the cell is not null or absent (absent features are not written)")
    return ('<div class="row"><div>' + kv_table(rows) + "</div><div>" +
            "<h4>Features present per document</h4>" + chart +
            note(text(f"Written documents only; {what}.")) + "</div></div>")
