"""The mutual-information part of a label-aware vocabulary's card (``labels:`` in the spec).

Shown from the manifest's ``stats.mutual_info`` and the first lines of the MI sidecar
(``vocab/<feature>.mutual_info.jsonl``, vocabulary order = best score first): the label
column and scoring options, rows with and without a label, the label distribution, tokens
dropped by ``min_mutual_info``, and the top tokens' scores with the rows holding each.

Example:
    >>> rows, chart = mutual_info_section(art, "city", art.stats("city"))   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from beam_prep.io.contract.label_sidecar import mutual_info_rows
from beam_prep.report import svg
from beam_prep.report.page import fmt_int, fmt_num, fmt_pct, note, text

TOP_N = 25
_LABELS_SHOWN = 10


def mutual_info_section(art: Any, name: str, st: dict[str, Any]
                        ) -> tuple[list[tuple[str, str]], str]:
    """Table rows and chart of a label-aware vocabulary (nothing when not label-aware)."""
    mi = st.get("mutual_info")
    if not isinstance(mi, dict):
        return [], ""
    rows_with = int(mi["rows"])
    score = "adjusted mutual information" if mi["adjusted"] else "mutual information"
    rows = [("ranked by", text(f"{score} with label column {mi['label_column']!r}")),
            ("min_diff_from_avg", fmt_num(mi["min_diff_from_avg"])),
            ("rows with a label", fmt_int(rows_with)),
            ("rows without a label", fmt_int(mi["rows_without_label"])),
            ("distinct labels", fmt_int(mi["distinct_labels"]))]
    listed = sorted((mi.get("label_rows") or {}).items(), key=lambda kv: -kv[1])
    for label, n in listed[:_LABELS_SHOWN]:
        rows.append((text(f"label {label}"),
                     f"{fmt_int(n)} rows ({fmt_pct(n / rows_with if rows_with else None)})"))
    dropped = mi["dropped_min_mutual_info"]
    if dropped["tokens"]:
        rows.append(("dropped min mutual info",
                     f"{fmt_int(dropped['tokens'])} tokens, {fmt_int(dropped['count'])} values"))
    top = mutual_info_rows(art, name, limit=TOP_N)
    if not top:
        return rows, note("No token scored (empty vocabulary).")
    chart = (f"<div><h4>Top {len(top)} tokens by {text(score)} (score, rows holding the "
             "token)</h4>" +
             svg.hbars([t for t, _, _ in top], [max(s, 0.0) for _, s, _ in top],
                       value_labels=[f"{fmt_num(s)} ({c:,} rows)" for _, s, c in top],
                       title=f"mutual information of {name}") +
             note("Scores are sums over rows, in bits (TFT's unnormalised mutual "
                  "information); the vocabulary and the coverage curve below follow this "
                  "order, not the count order.") + "</div>")
    return rows, chart
