"""Renders a :class:`DiffReport` as a readable text table or as JSON.

Tokens are shown with Python ``repr`` (quotes, escapes for control characters, at most 40
characters) so a hostile token cannot break or forge a table line. The JSON document is
canonical (sorted keys) and holds every measured value; undefined values are ``null``.

Both outputs go to a terminal: no character that is not printable (ESC and other C0/C1
controls, bidi overrides, U+2028, invisible format characters) is ever written raw, in a
token, a path or a message. The table shows it as its Python escape (``\\x1b``), the JSON
as its JSON escape (``\\u001b``), so ``json.loads`` still gives back the exact string.

Example:
    >>> from beam_prep.diff.compare import diff_artifacts      # doctest: +SKIP
    >>> print(render_table(diff_artifacts("old/", "new/")))     # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from beam_prep.diff.compare import DiffReport, FeatureDiff

JSON_FORMAT = "beam_prep.diff"
JSON_FORMAT_VERSION = 1


def to_dict(report: DiffReport) -> dict[str, Any]:
    """The report as plain JSON-ready data (``format``/``format_version`` first-level keys)."""
    body = dataclasses.asdict(report)
    for feature in body["features"]:  # only features with impute / labels / target encoding
        for key in ("imputed", "mutual_info", "target_encoding",  # carry these keys
                    "per_key_buckets"):
            if feature.get(key) is None:
                feature.pop(key, None)
    body["flags"] = [dataclasses.asdict(f) for f in report.flags]
    body["drift"] = bool(report.flags)
    return {"format": JSON_FORMAT, "format_version": JSON_FORMAT_VERSION, **body}


def _json_visible(text: str) -> str:
    """JSON text with every non-printable character but the layout newlines as ``\\uXXXX``.

    ``json.dumps`` escapes only C0 controls; outside strings JSON text holds only printable
    characters, spaces and the indentation newlines, so every other character replaced
    here is inside a string, where the escape reads back as the same character.
    """
    if text.replace("\n", "").isprintable():
        return text
    out = []
    for ch in text:
        if ch == "\n" or ch.isprintable():
            out.append(ch)
        else:
            units = ch.encode("utf-16-be")
            out.extend(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}"
                       for i in range(0, len(units), 2))
    return "".join(out)


def _visible(line: str) -> str:
    """A table line with every non-printable character as its Python escape (``\\x1b``)."""
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)


def render_json(report: DiffReport) -> str:
    """Canonical JSON text of :func:`to_dict` (sorted keys, 2-space indent, no NaN).

    Non-printable characters are escaped (see the module docstring); the text is ASCII
    only where the data is.
    """
    return _json_visible(json.dumps(to_dict(report), sort_keys=True, indent=2,
                                    ensure_ascii=False, allow_nan=False)) + "\n"


def _tok(token: str) -> str:
    text = repr(token)
    return text if len(text) <= 40 else text[:37] + "..."


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:+.4g}"


def _grid(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def _flag_names(f: FeatureDiff) -> str:
    return ",".join(flag.metric for flag in f.flags) or "-"


def _vocab_section(features: list[FeatureDiff]) -> list[str]:
    rows, notes = [], []
    for f in features:
        d = f.vocab
        assert d is not None
        rows.append([f.name, f.kind, f"{d.old_size} -> {d.new_size}", str(d.added),
                     str(d.dropped), _pct(d.index_changed_share),
                     f"{_pct(d.top_k_index_changed_share)} (K={d.top_k})",
                     _pct(d.oov_share), "-" if d.jsd is None else f"{d.jsd:.4f}",
                     _flag_names(f)])
        if d.top_added:
            notes.append(f"  {f.name} added:   " + ", ".join(
                f"{_tok(t)} ({c})" for t, c in d.top_added))
        if d.top_dropped:
            notes.append(f"  {f.name} dropped: " + ", ".join(
                f"{_tok(t)} ({c})" for t, c in d.top_dropped))
        if f.mutual_info is not None:
            notes += _mutual_info_notes(f)
        if f.target_encoding is not None:
            t = f.target_encoding
            notes.append(f"  {f.name} target encoding: global mean {_num(t.old_global_mean)} "
                         f"-> {_num(t.new_global_mean)}, tokens {t.old_tokens} -> "
                         f"{t.new_tokens} ({t.shared} shared), largest encoding change "
                         f"{_num(t.max_encoding_change)}"
                         + (f" ({_tok(t.most_changed_token)})"
                            if t.most_changed_token is not None else ""))
            notes.append(f"  {f.name} target drift: global mean shift "
                         f"{_num(t.global_mean_shift)} label std (est. {_num(t.label_std)}), "
                         f"rows with added tokens {_pct(t.added_share)}, removed "
                         f"{_pct(t.removed_share)}, frequent tokens' rows shifted "
                         f"{_pct(t.shifted_share)} ({t.compared_tokens} compared)")
    header = ["feature", "kind", "size", "added", "dropped", "index moved", "top-K moved",
              "OOV share", "JSD", "flags"]
    return ["Vocabularies", *_grid(header, rows), *notes]


def _mutual_info_notes(f: FeatureDiff) -> list[str]:
    m = f.mutual_info
    assert m is not None
    column = (repr(m.new_label_column) if m.old_label_column == m.new_label_column
              else f"{m.old_label_column!r} -> {m.new_label_column!r}")
    return [f"  {f.name} ranked by MI with {column}: top overlap {_pct(m.top_overlap)}, "
            f"largest label share change {_pct(m.label_share_change)}"
            + (f" (label {m.most_changed_label})" if m.most_changed_label is not None else ""),
            f"  {f.name} OLD top:  " + ", ".join(f"{_tok(t)} ({s:.4g})" for t, s in m.old_top),
            f"  {f.name} NEW top:  " + ", ".join(f"{_tok(t)} ({s:.4g})" for t, s in m.new_top)]


def _numeric_section(features: list[FeatureDiff]) -> list[str]:
    rows = []
    quartiles = [f for f in features if f.numeric is not None and (
        f.numeric.old_quartiles is not None or f.numeric.new_quartiles is not None)]
    for f in features:
        d = f.numeric
        assert d is not None
        means = "-" if d.old_mean is None and d.new_mean is None else \
            f"{_num(d.old_mean)} -> {_num(d.new_mean)}"
        rows.append([f.name, means, _num(d.mean_shift), _num(d.std_shift),
                     _num(d.boundary_shift), "-" if d.rank_shift is None else str(d.rank_shift),
                     _pct(d.missing_rate_change), _pct(d.nan_rate_change),
                     _pct(d.infinite_rate_change), _flag_names(f)])
    header = ["feature", "mean", "mean shift", "std shift", "boundary shift", "rank shift",
              "missing", "NaN", "inf", "flags"]
    out = ["Numeric (shifts in OLD std units, rate changes in points)", *_grid(header, rows)]
    for f in quartiles:  # robust scaling: q25, median, q75 (absent from other manifests)
        d = f.numeric
        assert d is not None
        out.append(f"  {f.name} quartiles: {_quartiles(d.old_quartiles)} -> "
                   f"{_quartiles(d.new_quartiles)}, shift {_num(d.quartile_shift)}")
    return out


def _quartiles(q: list[float] | None) -> str:
    return "-" if q is None else "[" + ", ".join(f"{v:.6g}" for v in q) + "]"


def _imputed_section(features: list[FeatureDiff]) -> list[str]:
    rows = []
    for f in features:
        d = f.imputed
        assert d is not None
        show = _tok if isinstance(d.new, str) or isinstance(d.old, str) else repr
        rows.append([f.name, d.strategy or "-", f"{show(d.old)} -> {show(d.new)}",
                     _num(d.shift), _flag_names(f)])
    header = ["feature", "impute", "value", "shift", "flags"]
    return ["Imputed values (numeric shift in OLD std units)", *_grid(header, rows)]


def _per_key_section(features: list[FeatureDiff]) -> list[str]:
    rows, notes = [], []
    for f in features:
        d = f.per_key
        assert d is not None
        k = d.drift
        rows.append([f.name, f"{d.old_keys} -> {d.new_keys}", str(d.added), str(d.removed),
                     str(d.changed), _num(d.max_mean_shift),
                     *([_pct(k.added_share), _pct(k.removed_share), _pct(k.shifted_share),
                        _pct(k.std_shifted_share), _pct(k.range_shifted_share)]
                       if k is not None else ["-"] * 5),
                     _key_flags(f, "key_boundary_")])
        for label, items in (("shifted", d.top_shifted), ("added", d.top_added),
                             ("removed", d.top_removed)):
            if items:
                notes.append(f"  {f.name} {label}: " + ", ".join(
                    f"{_tok(k)} ({_num(v) if isinstance(v, float) else v})" for k, v in items))
    header = ["feature", "keys", "added", "removed", "changed", "max mean shift",
              "added values", "removed values", "shifted values", "std shifted",
              "range shifted", "flags"]
    return ["Per-key statistics (mean shift in the key's OLD std units)",
            *_grid(header, rows), *notes]


def _key_flags(f: FeatureDiff, but: str) -> str:
    """The ``key_`` flags of a feature, except those starting with ``but``."""
    return ",".join(x.metric for x in f.flags
                    if x.metric.startswith("key_") and not x.metric.startswith(but)) or "-"


def _bucket_section(features: list[FeatureDiff]) -> list[str]:
    rows, notes = [], []
    for f in features:
        d = f.per_key_buckets
        assert d is not None
        rows.append([f.name, f"{d.old_keys} -> {d.new_keys}", str(d.added), str(d.removed),
                     str(d.changed), _num(d.max_boundary_shift), str(d.compared_keys),
                     _pct(d.shifted_share),
                     ",".join(x.metric for x in f.flags
                              if x.metric.startswith("key_boundary_")) or "-"])
        if d.top_shifted:
            notes.append(f"  {f.name} shifted: " + ", ".join(
                f"{_tok(k)} ({_num(v)})" for k, v in d.top_shifted))
    header = ["feature", "keys", "added", "removed", "changed", "max boundary shift",
              "compared", "shifted values", "flags"]
    return ["Per-key bucket boundaries (shift in the key's OLD boundary range)",
            *_grid(header, rows), *notes]


def render_table(report: DiffReport) -> str:
    """The readable report: vocabularies, numeric features, other features, flags."""
    lines = [f"OLD: {report.old} (fingerprint {report.old_fingerprint[:12]})",
             f"NEW: {report.new} (fingerprint {report.new_fingerprint[:12]})",
             "Spec changes: " + (", ".join(report.spec_changes) or "none"), ""]
    compared = [f for f in report.features if f.status == "compared"]
    vocab = [f for f in compared if f.vocab is not None]
    numeric = [f for f in compared if f.numeric is not None]
    if vocab:
        lines += [*_vocab_section(vocab), ""]
    if numeric:
        lines += [*_numeric_section(numeric), ""]
    keyed = [f for f in numeric if f.per_key is not None]
    if keyed:
        lines += [*_per_key_section(keyed), ""]
    bucketed = [f for f in numeric if f.per_key_buckets is not None]
    if bucketed:
        lines += [*_bucket_section(bucketed), ""]
    imputed = [f for f in compared if f.imputed is not None]
    if imputed:
        lines += [*_imputed_section(imputed), ""]
    others = [f for f in report.features if f.status != "compared"]
    if others:
        lines += ["Not compared: " + ", ".join(f"{f.name} ({f.kind}: "
                                               f"{f.status.replace('_', ' ')})" for f in others),
                  ""]
    flags = report.flags
    if flags:
        lines += [f"DRIFT: {len(flags)} flag(s)", *(f"  - {f.message}" for f in flags)]
    else:
        lines.append("No drift flag raised.")
    return "\n".join(_visible(line) for line in lines) + "\n"
