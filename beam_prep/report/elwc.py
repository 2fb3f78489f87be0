"""The ELWC page: what ``beam-prep make-elwc`` wrote, from ``stats.json`` and ``feature_spec.json``.

Shown (``docs/ranking_data.md``): the input counts and status, queries / lists / documents
per split, the list-size histogram with ``--max_list_size`` marked, the label distribution
over all documents, the list events (split, truncated, sampled, dropped), the policy, the
feature spec, and the rejected lines counted by reason code (``input.rejected_by_reason`` of
``stats.json``, with three example lines; ``stats.json`` files from before the codes are
counted by reason text in one streaming pass over the ``rejected/`` files).

Per list and per document (:mod:`beam_prep.report.elwc_lists`): relevant documents per list
and the lists with none, the largest label per list, and the share of documents carrying each
example feature. ``stats.json`` files from before these fields show "not recorded".

Example:
    >>> html = render_elwc("elwc/")        # doctest: +SKIP
"""

from __future__ import annotations

import collections
import json
import math
from typing import Any

from beam_prep.errors import ArtifactError
from beam_prep.io import filesystem as fs
from beam_prep.io.line_bound import check_line_length
from beam_prep.report import svg
from beam_prep.report.elwc_lists import per_list_labels, presence
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

STATS_FILE = "stats.json"
FEATURE_SPEC_FILE = "feature_spec.json"
MAX_BARS = 60
_MAX_LABELS = 40
_MAX_FEATURES = 50
_EXAMPLES = 3


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _list_size_note(marks: list) -> str:
    """The note under the list-size chart: the red line is named only when it is drawn."""
    if marks:
        return ("Documents per list after the list policy; the red line is max_list_size "
                "(longer queries were split, truncated or sampled).")
    return "Documents per list after the list policy (no max_list_size: no list was cut)."


def size_bins(hist: dict[int, int], cap: int | None) -> tuple[list[str], list[int], float | None]:
    """Bars of the list-size histogram: one per size 1..max, or ``MAX_BARS`` equal bins.

    Returns labels, counts and the bar position of the right edge of size ``cap`` (or None).

    Example:
        >>> size_bins({1: 2, 3: 1}, 2)
        (['1', '2', '3'], [2, 0, 1], 1.5)
    """
    top = max([*hist, cap or 0, 1])
    if top <= MAX_BARS:
        labels = [str(s) for s in range(1, top + 1)]
        counts = [hist.get(s, 0) for s in range(1, top + 1)]
        pos = None if cap is None else cap - 0.5
        return labels, counts, pos
    width = math.ceil(top / MAX_BARS)
    n = math.ceil(top / width)
    counts = [0] * n
    for s, c in hist.items():
        counts[(max(s, 1) - 1) // width] += c
    labels = [f"{i * width + 1}–{(i + 1) * width}" for i in range(n)]
    pos = None if cap is None else cap / width - 0.5
    return labels, counts, pos


def _rejected(root: str, rel: str | None, *, count: bool = True
              ) -> tuple[collections.Counter[str], list[dict]]:
    """Reason-text counts (when ``count``) and the first example rows of one rejected file."""
    reasons: collections.Counter[str] = collections.Counter()
    examples: list[dict] = []
    if not rel:
        return reasons, examples
    path = fs.join(root, rel)
    if not fs.exists(path):
        return reasons, examples
    fs.check_regular(path, what="rejected-lines file")
    with fs.open_read(path) as f:
        rest = b""
        while True:
            block = f.read(1 << 22)
            lines = (rest + block).split(b"\n")
            rest = lines.pop() if block else b""
            check_line_length(rest, path)
            for line in lines:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    row = {"reason": "(unreadable line in rejected.jsonl)"}
                reasons[str(row.get("reason", "?"))] += 1
                if len(examples) < _EXAMPLES:
                    examples.append(row)
            if not block or not count and len(examples) >= _EXAMPLES:
                break
    return reasons, examples


def _feature_spec(root: str) -> dict[str, Any] | None:
    path = fs.join(root, FEATURE_SPEC_FILE)
    return _read_json(path) if fs.exists(path) else None


def _features(spec: dict[str, Any] | None) -> str:
    if spec is None:
        return note(f"No {FEATURE_SPEC_FILE} (it is written only by a successful run).")
    label = spec.get("label", {})
    rows = [("label", text(f"{label.get('name')} ({label.get('dtype')}, padding "
                           f"{label.get('padding')})")),
            ("context features", fmt_int(len(spec.get("context", [])))),
            ("example features", fmt_int(len(spec.get("example", []))))]
    encoded = spec.get("encoded")
    if isinstance(encoded, dict):  # make-elwc --artifacts
        feats = encoded.get("features")
        names = [str(f.get("name")) for f in (feats if isinstance(feats, list) else [])
                 if isinstance(f, dict)]
        rows.append(("encoded by the artifacts' layers", text(
            f"{len(names):,} features ({', '.join(names[:_MAX_FEATURES])}), artifacts "
            f"fingerprint {str(encoded.get('artifacts_fingerprint'))[:12]}")))
    for where in ("context", "example"):
        groups: dict[str, list[str]] = {}
        for f in spec.get(where, []):
            shape = "scalar" if f.get("shape") == [] else f"shape {f.get('shape')}"
            key = f"{f.get('dtype')} {shape}, default {f.get('default')}"
            groups.setdefault(key, []).append(str(f.get("name")))
        for key, names in sorted(groups.items()):
            listed = ", ".join(names[:_MAX_FEATURES])
            more = f" … (+{len(names) - _MAX_FEATURES:,})" if len(names) > _MAX_FEATURES else ""
            rows.append((f"{where}: {len(names):,} × {key}", text(listed + more)))
    return kv_table(rows)


MAX_JSON_BYTES = 64 << 20
"""stats.json and feature_spec.json hold counts and settings: far below this."""


def _read_json(path: str) -> dict[str, Any]:
    """A JSON object file, checked before it is read: a regular file (not a FIFO) of at most
    :data:`MAX_JSON_BYTES`, finite numbers only."""
    fs.check_regular(path, max_bytes=MAX_JSON_BYTES, what="make-elwc JSON file")

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        data = json.loads(fs.read_bytes(path).decode("utf-8"), parse_constant=constant)
    except (ValueError, RecursionError) as e:
        raise ArtifactError(f"{path} is not valid JSON ({e}). Fix: re-run `beam-prep "
                            "make-elwc` into a fresh folder; never edit its files.") from None
    if not isinstance(data, dict):
        raise ArtifactError(f"{path} must hold a JSON object. Received: a JSON "
                            f"{type(data).__name__}. Fix: re-run `beam-prep make-elwc`.")
    return data


def render_elwc(root: str) -> str:
    """The whole ELWC page as an HTML string (see the module docstring).

    Raises:
        ArtifactError: ``stats.json`` or ``feature_spec.json`` is not a regular file, not a
            JSON object, or holds a value of the wrong type (one line naming the file).
    """
    try:
        return _render_elwc(root)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError,
            IndexError) as e:
        raise ArtifactError(
            f"{fs.join(root, STATS_FILE)} (or {FEATURE_SPEC_FILE}) holds a value of the wrong "
            f"type or range ({type(e).__name__}: {str(e)[:120]}). Fix: re-run `beam-prep "
            "make-elwc` into a fresh folder; never edit its files.") from None


def _render_elwc(root: str) -> str:
    st: dict[str, Any] = _read_json(fs.join(root, STATS_FILE))
    inp = st.get("input", {})
    pol = st.get("policy", {})
    lists, docs = int(st.get("lists", 0)), int(st.get("documents", 0))
    status = str(st.get("status", "?"))
    head = [("status", text(status) if status == "ok" else f'<span class="err">{text(status)}'
                                                            "</span>")]
    if st.get("error"):
        head.append(("error", f'<span class="err">{text(st["error"])}</span>'))
    head += [("files", fmt_int(inp.get("files"))), ("lines", fmt_int(inp.get("lines"))),
             ("documents read", fmt_int(inp.get("documents_read"))),
             ("lines rejected", f"{fmt_int(inp.get('lines_rejected'))} "
                                f"({fmt_pct(inp.get('bad_fraction'))})"),
             ("queries", fmt_int(st.get("queries"))), ("lists", fmt_int(lists)),
             ("documents", fmt_int(docs)),
             ("documents per list (mean)", fmt_num(_share(docs, lists)))]
    for split, v in sorted(st.get("splits", {}).items()):
        head.append((f"split {split}", f"{fmt_int(v.get('lists'))} lists, "
                                       f"{fmt_int(v.get('documents'))} documents"))
    parts = [f"<h1>beam-prep ELWC report: {text(root)}</h1>",
             card("Run", kv_table(head), data_name="__run__")]

    hist = {int(k): int(v) for k, v in st.get("list_size_histogram", {}).items()}
    cap = pol.get("max_list_size")
    labels, counts, pos = size_bins(hist, cap)
    ev = st.get("events", {})
    at_cap = hist.get(cap, 0) if cap else 0
    rows = [("lists", fmt_int(sum(hist.values()))),
            ("max_list_size", "none" if cap is None else fmt_int(cap)),
            ("list_policy", text(pol.get("list_policy", "—"))),
            ("lists at max_list_size", f"{fmt_int(at_cap)} ({fmt_pct(_share(at_cap, lists))})"
             if cap else "—")]
    for k in sorted(ev):
        rows.append((k.replace("_", " "), fmt_int(ev[k])))
    marks = [(pos, f"max_list_size={cap} ({pol.get('list_policy')})")] if pos is not None else []
    parts.append(card("List sizes", '<div class="row"><div>' + kv_table(rows) + "</div><div>" +
                      svg.columns(labels, counts, marks=marks, title="list size histogram",
                                  x_label="documents per list", y_label="lists") +
                      note(_list_size_note(marks))
                      + "</div></div>", data_name="__lists__"))

    lab = sorted(st.get("label_histogram", {}).items(), key=lambda kv: float(kv[0]))
    total = sum(int(v) for _, v in lab)
    shown = lab[:_MAX_LABELS]
    rows = [(f"label {k}", f"{fmt_int(v)} ({fmt_pct(_share(int(v), total))})") for k, v in shown]
    if len(lab) > _MAX_LABELS:
        rows.append(("other labels", fmt_int(sum(int(v) for _, v in lab[_MAX_LABELS:]))))
    list_rows, list_charts = per_list_labels(st)
    parts.append(card("Labels", '<div class="row"><div>' + kv_table(rows + list_rows) +
                      "</div><div><h4>Label of every document</h4>" +
                      svg.columns([k for k, _ in shown], [int(v) for _, v in shown],
                                  title="label histogram", x_label="label",
                                  y_label="documents") +
                      note("Label of every written document; per list: relevant documents "
                           "(label > 0) and the largest label.") + "".join(list_charts) +
                      "</div></div>", data_name="__labels__"))

    by_code = inp.get("rejected_by_reason")  # None: a stats.json from before reason codes
    reasons: collections.Counter[str] = collections.Counter()
    examples: list[dict] = []
    # make-elwc writes rejected/rejected-SSSSS-of-NNNNN.jsonl (older runs: one rejected_file)
    for rel in st.get("rejected_files") or [st.get("rejected_file")]:
        if by_code is not None and len(examples) >= _EXAMPLES:
            break
        more, found = _rejected(root, rel, count=by_code is None)
        reasons.update(more)
        examples.extend(found[:_EXAMPLES - len(examples)])
    rows = [(f"rejected: {code}", fmt_int(n)) for code, n in sorted(by_code.items())] \
        if by_code is not None else \
        [(f"rejected: {r}", fmt_int(n)) for r, n in reasons.most_common(30)]
    body = kv_table(rows) if rows else note("No rejected line.")
    for ex in examples:
        body += note("example: " + text(json.dumps(ex, ensure_ascii=False), limit=300))
    parts.append(card("Rejected lines", body, data_name="__rejected__"))
    spec = _feature_spec(root)
    order = [str(f.get("name")) for f in (spec or {}).get("example", [])]
    is_letor = pol.get("input_format") in ("letor", "lightgbm")
    parts.append(card("Features", _features(spec) + presence(st, order, is_letor),
                      data_name="__features__"))
    parts.append(card("Policy", kv_table([(k, text(json.dumps(v))) for k, v in sorted(
        pol.items())]), data_name="__policy__"))
    return document(f"beam-prep ELWC report: {root}", parts)
