"""The analysis page: run header, then one card per feature of an artifact directory.

What each card shows and where it comes from (``docs/artifacts.md``):

* string / integer / text: top tokens (bar chart, share of the values seen) and the coverage
  curve, ``share of values covered by the first k tokens = sum of the first k counts /
  total_count`` (values seen, missing rows excluded), both from one streaming pass over the
  counts sidecar (:mod:`beam_prep.report.sidecar`). The sidecar holds only the written
  vocabulary, so the curve stops at the cut (marked in red with ``top_k``/``min_count`` or
  ``max_tokens``); the dropped tokens' number and total count are known from the manifest and
  drawn as a dotted segment to 100 %. Implied OOV rate = ``1 - sum(counts) / total_count``.
  Text adds terms per document: the mean (``total_count / document_count``) and, from the
  manifest's ``terms_per_document_log2`` (absent in older manifests: "not recorded"), the
  histogram in log2 buckets (0, 1, 2–3, 4–7, …) and its median bucket; and the document
  frequencies of the top tokens when the sidecar has them (tf_idf).
* numeric: the manifest has no histogram, only min, max, mean, variance and the quantile
  boundaries. The picture drawn is the one they imply: ``num_buckets`` buckets between
  min, the boundaries and max, each holding about ``count / num_buckets`` finite values
  (within ``epsilon``), drawn as bars of density ``mass / width``; the page says so. With
  ``quartiles`` (``scaling: robust``): rows q25, median, q75 and IQR.
* hashed: settings only (there is nothing to analyse).
* every kind with ``impute`` or ``missing_indicator``: a line naming the imputed value
  (``stats.imputed_value``, a statistic of the observed values) and the indicator output.

Example:
    >>> from beam_prep.io.contract.artifacts import Artifacts     # doctest: +SKIP
    >>> html = render_analysis(Artifacts("artifacts/"))  # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import Any

from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.io.contract.run_record import RUN_FILE, read_run_record
from beam_prep.report import svg
from beam_prep.report.label_card import mutual_info_section
from beam_prep.report.page import (
    card,
    document,
    fmt_int,
    fmt_num,
    fmt_pct,
    kv_table,
    note,
    text,
)
from beam_prep.report.sidecar import SidecarSummary, summarize_sidecar

TOP_N = 25
_MAX_LISTED = 20
_FLOAT_MAX = 1.7976931348623157e308
_LAST_TERMS_BUCKET = 32

#: Drop records of a vocabulary, with why (when the key does not say it).
_DROP_ROWS = (("dropped_top_k", ""), ("dropped_min_count", ""),
              ("excluded_unwritable", " (a line break or empty: a vocabulary file holds one "
                                      "token per line; the lookup maps them to OOV)"),
              ("excluded_reserved", " ([UNK], reserved by TextVectorization)"))


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _settings(spec: dict[str, Any]) -> str:
    items = [(k, v) for k, v in sorted(spec.items()) if k not in ("name", "kind") and
             v is not None]
    return ", ".join(f"{k}={v}" for k, v in items) or "defaults"


def _header(art: Artifacts) -> str:
    m = art.manifest
    inp = m.get("input", {})
    patterns = list(inp.get("patterns", []))
    shown = ", ".join(text(p) for p in patterns[:_MAX_LISTED])
    if len(patterns) > _MAX_LISTED:
        shown += f" … ({len(patterns):,} patterns)"
    read = int(inp.get("rows_read", 0))
    rejected = int(inp.get("rows_rejected", 0))
    run = read_run_record(art.path)  # run metadata lives beside the manifest, not in it
    rows = [
        ("inputs", shown or "—"),
        ("format", text(inp.get("format", "—"))),
        ("files / splits", f"{fmt_int(inp.get('files'))} / {fmt_int(inp.get('splits'))}"),
        ("rows read", fmt_int(read)),
        ("rows rejected", f"{fmt_int(rejected)} ({fmt_pct(_share(rejected, read))})"),
        ("rows used", fmt_int(read - rejected)),
    ]
    for reason, n in sorted(inp.get("rejected_by_reason", {}).items()):
        rows.append((f"rejected: {reason}", fmt_int(n)))
    shards = inp.get("rejected_files") or ([inp["rejected_file"]] if inp.get("rejected_file")
                                           else [])  # older manifests: one file
    if shards:
        shown = shards[0] if len(shards) == 1 else f"{shards[0]} … ({len(shards)} files)"
        rows.append(("rejected rows files", text(shown)))
    rows.append(("versions", text(", ".join(f"{k} {v}" for k, v in
                                           sorted(m.get("versions", {}).items())))))
    rows.append(("fingerprint", f"<code>{text(m.get('fingerprint', ''))}</code>"))
    rows.append(("run time", f"not recorded (no {RUN_FILE}: a template or library run, or "
                 "an older output)" if run is None else
                 f"{fmt_num(float(run['seconds']))} s, finished "
                 f"{text(str(run.get('finished_utc', '?')))}"))
    return card("Run", kv_table(rows), data_name="__run__")


def _vocab_card(art: Artifacts, name: str, spec: dict[str, Any], rows_used: int) -> str:
    st = art.stats(name)
    kind = spec["kind"]
    s: SidecarSummary = summarize_sidecar(art, name, top_n=TOP_N)
    weighted = _weights_of(spec) is not None
    total = st.get("total_count", 0) if weighted else int(st.get("total_count", 0))
    num = fmt_num if weighted else fmt_int  # weighted counts are sums of weights
    distinct = int(st.get("distinct_values", s.tokens))
    oov = 1.0 - s.total / total if total else None
    def opt(key: str) -> str:
        return "none" if spec.get(key) is None else str(spec[key])

    if kind == "text":
        cut = f"max_tokens={opt('max_tokens')}"
    else:
        cut = f"top_k={opt('top_k')}, min_count={opt('min_count')}"
    rows = [
        ("vocabulary size (tokens written)", fmt_int(s.tokens)),
        ("distinct values", fmt_int(distinct)),
        ("values seen" + (" (summed weights)" if weighted else ""), num(total)),
        ("values covered by the vocabulary", num(s.total)),
        ("implied OOV rate", fmt_pct(oov)),
        ("missing rows", f"{fmt_int(st.get('missing_count'))} "
                         f"({fmt_pct(_share(int(st.get('missing_count', 0)), rows_used))})"),
        ("cut", text(cut)),
    ]
    for key, why in _DROP_ROWS:
        d = st.get(key) or {}
        if d.get("tokens"):
            rows.append((key.replace("_", " "), f"{fmt_int(d['tokens'])} tokens, "
                                                 f"{num(d.get('count'))} values{why}"))
    rows += _weight_rows(spec, st)
    if kind == "text" and st.get("document_count"):
        docs = int(st["document_count"])
        rows.append(("documents", fmt_int(docs)))
        rows.append(("terms per document (mean)", fmt_num(total / docs)))
    charts = []
    if s.top:
        charts.append(f"<div><h4>Top {len(s.top)} tokens (count, share of values seen)</h4>" +
                      svg.hbars([t for t, _, _ in s.top], [c for _, c, _ in s.top],
                                value_labels=[f"{c:,} ({fmt_pct(_share(c, total))})"
                                              for _, c, _ in s.top],
                                title=f"top tokens of {name}") + "</div>")
    log_x = max(distinct, s.tokens) > 60
    pts = [(float(k), c / total) for k, c in s.curve] if total else []
    if not log_x:
        pts = [(0.0, 0.0), *pts]
    gap = None
    covered = _share(s.total, total) or 0.0
    if distinct > s.tokens and total:
        gap = ((float(max(s.tokens, 1)), covered), (float(distinct), 1.0),
               f"{distinct - s.tokens:,} tokens beyond the cut: only their number and total "
               "count are recorded, the dotted line is not data")
    charts.append(
        "<div><h4>Coverage: share of values covered by the first k tokens</h4>" +
        svg.curve(pts, x_max=float(max(distinct, s.tokens, 1)), log_x=log_x,
                  cut=(float(s.tokens), f"cut k={s.tokens:,} ({cut}): OOV {fmt_pct(oov)}"),
                  gap=gap, title=f"coverage curve of {name}",
                  x_label="k (tokens, most frequent first)" + (", log scale" if log_x else ""),
                  y_label="covered") + "</div>")
    if s.has_df and kind == "text" and st.get("document_count"):
        docs = int(st["document_count"])
        charts.append(f"<div><h4>Document frequency of the top {len(s.top)} tokens</h4>" +
                      svg.hbars([t for t, _, _ in s.top], [d or 0 for _, _, d in s.top],
                                value_labels=[f"{d:,} docs ({fmt_pct(_share(d or 0, docs))})"
                                              for _, _, d in s.top],
                                title=f"document frequencies of {name}") + "</div>")
    elif kind == "text":
        charts.append(note("Document frequencies are recorded only with output_mode tf_idf."))
    if kind == "text":
        more_rows, chart = terms_per_document(st.get("terms_per_document_log2"),
                                              int(st.get("document_count") or 0))
        rows += more_rows
        charts.insert(0, chart)
    mi_rows, mi_chart = mutual_info_section(art, name, st)  # label-aware vocabularies
    rows += mi_rows
    if mi_chart:
        charts.insert(0, mi_chart)
    return f'<div class="row"><div>{kv_table(rows)}</div><div>{"".join(charts)}</div></div>'


def log2_bucket_label(b: int) -> str:
    """The terms covered by bucket ``b`` of ``terms_per_document_log2``.

    Example:
        >>> [log2_bucket_label(b) for b in range(5)]
        ['0', '1', '2–3', '4–7', '8–15']
    """
    if b <= 1:
        return str(b)
    if b >= _LAST_TERMS_BUCKET:  # open-ended (text_counts.TERMS_BUCKETS - 1)
        return f"≥{2 ** (b - 1):,}"
    return f"{2 ** (b - 1):,}–{2 ** b - 1:,}"


def terms_per_document(hist: list[int] | None, documents: int) -> tuple[list[tuple[str, str]],
                                                                         str]:
    """Rows and chart of the terms-per-document histogram (log2 buckets) of a text feature."""
    if hist is None:
        return [("terms per document (distribution)", "not recorded")], note(
            "Terms per document: not recorded in this manifest (written by an older "
            "beam-prep, or by a run that reused older cache entries); re-run the analysis "
            "to see the distribution.")
    median = None
    seen = 0
    for b, c in enumerate(hist):
        seen += c
        if documents and 2 * seen >= documents:
            median = b
            break
    rows = [("documents with no term", f"{fmt_int(hist[0] if hist else 0)} "
                                       f"({fmt_pct(_share(hist[0] if hist else 0, documents))})"),
            ("terms per document (median)", "—" if median is None
             else text(log2_bucket_label(median)))]
    labels = [log2_bucket_label(b) for b in range(len(hist))]
    chart = ("<div><h4>Terms per document (tokens and n-grams)</h4>" +
             svg.columns(labels, hist, title="terms per document",
                         x_label="terms in the document (log2 buckets)",
                         y_label="documents") + "</div>")
    return rows, chart


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _quartile_rows(q: Any) -> list[tuple[str, str]]:
    """q25, median, q75 and IQR rows (from the quantile sketch, within its epsilon)."""
    if not isinstance(q, list) or len(q) != 3:
        return [("quartiles", "none (no finite value)")]
    return [("q25", fmt_num(q[0])), ("median", fmt_num(q[1])), ("q75", fmt_num(q[2])),
            ("IQR", fmt_num(q[2] - q[0]))]


def _weights_of(spec: dict[str, Any]) -> str | None:
    """``weights: w`` / ``weights_expr: e`` of a feature, as shown; None when unweighted."""
    if spec.get("weights") is not None:
        return f"column {spec['weights']}"
    if spec.get("weights_expr") is not None:
        return f"expression {spec['weights_expr']}"
    return None


def _weight_rows(spec: dict[str, Any], st: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows of a weighted feature's card: where the weights come from, rows set aside."""
    source = _weights_of(spec)
    if source is None:
        return []
    rows = [("instance weights", text(source)),
            ("rows set aside (invalid weight)", fmt_int(st.get("invalid_weight_count")))]
    if "weight_total" in st:
        rows.append(("total weight", fmt_num(st.get("weight_total"))))
    return rows


OUTER_SHARE = 0.25  # an outer bucket is drawn at most this share of the inner span wide


def display_window(edges: list[float]) -> tuple[float, float] | None:
    """The x range a numeric histogram draws; None when every bucket fits.

    The inner buckets (between the first and the last quantile boundary) are always drawn
    whole; the first and last buckets (min to the first boundary, the last boundary to max)
    are cut at ``OUTER_SHARE`` times the inner span (at least the widest inner bucket's
    width), so one long tail cannot squeeze the
    other buckets into a corner (with 10 lognormal buckets the last one took 95 % of the
    width). Needs at least 3 buckets (2 boundaries) and a positive inner span.

    Example:
        >>> display_window([0.0, 1.0, 2.0, 3.0, 100.0])
        (0.0, 4.0)
        >>> display_window([0.0, 1.0, 2.0, 3.0]) is None
        True
    """
    if len(edges) < 4 or not edges[-2] > edges[1]:
        return None
    span = edges[-2] - edges[1]
    reach = max(OUTER_SHARE * span, max(b - a for a, b in zip(edges[1:-2], edges[2:-1])))
    lo = max(edges[0], edges[1] - reach)
    hi = min(edges[-1], edges[-2] + reach)
    return None if (lo, hi) == (edges[0], edges[-1]) else (lo, hi)


def _numeric_card(st: dict[str, Any], spec: dict[str, Any] | None = None) -> str:
    lo, hi, mean = _finite(st.get("min")), _finite(st.get("max")), _finite(st.get("mean"))
    var = _finite(st.get("variance"))
    std = math.sqrt(var) if var is not None and var >= 0 else None
    count = int(st.get("count", 0))
    rows = [("finite values", fmt_int(count)), ("missing", fmt_int(st.get("missing_count"))),
            ("NaN", fmt_int(st.get("nan_count"))), ("±inf", fmt_int(st.get("infinite_count"))),
            ("mean", fmt_num(mean)), ("std", fmt_num(std)), ("min", fmt_num(lo)),
            ("max", fmt_num(hi))] + _weight_rows(spec or {}, st)
    bounds = st.get("boundaries")
    if bounds is not None:
        rows.append(("boundaries", text(", ".join(fmt_num(b) for b in bounds[:64]) +
                                        (" …" if len(bounds) > 64 else "")) or "none"))
        rows.append(("epsilon", fmt_num(st.get("epsilon"))))
    if "quartiles" in st:  # robust scaling (NumericFeature.needs_quartiles)
        rows.extend(_quartile_rows(st.get("quartiles")))
        if bounds is None:
            rows.append(("epsilon", fmt_num(st.get("epsilon"))))
    for stat, why in sorted((st.get("null_reasons") or {}).items()):
        rows.append((f"{stat} is null", text(why)))
    if lo is None or hi is None:
        chart = note("No finite value: nothing to draw.")
    elif bounds:
        nb = len(bounds) + 1
        edges = [lo] + [min(max(b, lo), hi) if abs(b) < _FLOAT_MAX else (lo if b < 0 else hi)
                        for b in bounds] + [hi]
        mass = count / nb
        widths = [edges[i + 1] - edges[i] for i in range(nb)]
        positive = [mass / w for w in widths if w > 0]
        tallest = max(positive, default=1.0)
        heights = [mass / w if w > 0 else tallest for w in widths]
        tips = [f"[{fmt_num(edges[i])}, {fmt_num(edges[i + 1])}]: ≈ {mass:,.1f} values (1/{nb})"
                + (f", density {fmt_num(heights[i])} per unit" if widths[i] > 0 else
                   ", all at one value (drawn at the tallest bar's height)")
                for i in range(nb)]
        marks = [(mean, f"mean {fmt_num(mean)}")] if mean is not None else []
        window = display_window(edges)
        clipped = ("" if window is None else
                   " An outer bucket reaching far beyond the boundaries (a long tail) is cut at "
                   "the dashed red line, where its true end (min or max) is written, so the "
                   "other buckets stay readable; its height is still mass / its full width.")
        chart = (svg.histogram(edges, heights, marks=marks, tooltips=tips,
                               title="equal-mass buckets", x_label="value",
                               y_label="values per unit", window=window) +
                 note(f"No raw histogram is stored. Bars are the {nb} buckets between min, the "
                      f"{nb - 1} quantile boundaries and max; each holds about 1/{nb} of the "
                      f"{count:,} finite values (within ε={fmt_num(st.get('epsilon'))}); height "
                      "= mass / width (values per unit). Alternating colours show the "
                      "boundaries." + clipped))
    else:
        chart = (svg.range_bar(lo, hi, mean if mean is not None else lo, std,
                               title="min, mean ± std, max") +
                 note("No quantile boundaries (num_buckets not set): only min, max and "
                      "mean ± std are known (grey line: min to max; box: mean ± std, clipped "
                      "to the range; purple tick: mean)."))
    return f'<div class="row"><div>{kv_table(rows)}</div><div>{chart}</div></div>'


def missing_handling(spec: dict[str, Any], st: dict[str, Any]) -> str:
    """The note on a feature's ``impute`` and ``missing_indicator`` ('' when it has neither).

    Example:
        >>> missing_handling({"name": "x", "impute": "mean"}, {"imputed_value": 2.5})
        '<p class="note">missing values are filled with the mean of the observed values: 2.5</p>'
    """
    parts = []
    if spec.get("impute") is not None:
        value = st.get("imputed_value")
        shown = ("none (no observed value: missing inputs are not replaced)" if value is None
                 else fmt_num(value) if isinstance(value, float) else repr(value))
        what = {"most_frequent": "the most frequent value (top of the vocabulary)"}.get(
            spec["impute"], f"the {spec['impute']} of the observed values")
        parts.append(f"missing values are filled with {what}: {shown}")
    if spec.get("missing_indicator"):
        parts.append(f"output {spec['name'] + '_missing'!r} is 1 where the value is missing")
    return note(text("; ".join(parts))) if parts else ""


def render_analysis(art: Artifacts) -> str:
    """The whole analysis page as an HTML string (see the module docstring)."""
    specs = {f["name"]: f for f in art.manifest["spec"]["features"]}
    inp = art.manifest.get("input", {})
    rows_used = int(inp.get("rows_read", 0)) - int(inp.get("rows_rejected", 0))
    parts = [f"<h1>beam-prep analysis report: {text(art.path)}</h1>", _header(art),
             "<h2>Features</h2>"]
    for name in art.feature_names:
        spec = specs.get(name, {"kind": "?"})
        kind = spec.get("kind", "?")
        if kind in ("string", "integer", "text"):
            body = _vocab_card(art, name, spec, rows_used)
            if "target_encoding" in art.manifest["features"][name].get("files", {}):
                from beam_prep.report.target_card import target_html

                body += target_html(art, name)
        elif kind == "numeric":
            body = _numeric_card(art.stats(name), spec)
            if "per_key" in art.manifest["features"][name].get("files", {}):
                from beam_prep.report.per_key import per_key_html

                body += per_key_html(art, name)
            if "per_key_buckets" in art.manifest["features"][name].get("files", {}):
                from beam_prep.report.per_key_buckets import per_key_buckets_html

                body += per_key_buckets_html(art, name)
        else:
            body = note("Hashed feature: no analysis, settings only.")
        title = f'{text(name)}<span class="kind">{text(kind)}</span>'
        extra = missing_handling(spec, art.stats(name)) if kind != "?" else ""
        parts.append(card(title, note(text("settings: " + _settings(spec))) + extra + body,
                          data_name=name))
    return document(f"beam-prep report: {art.path}", parts)
