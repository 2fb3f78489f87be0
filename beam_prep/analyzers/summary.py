"""The end-of-run text summary of an analysis: row counts, then one line per feature.

Example:
    >>> m = {"input": {"rows_read": 3, "rows_rejected": 0, "rejected_by_reason": {}},
    ...      "spec": {"features": [{"name": "h"}]},
    ...      "features": {"h": {"kind": "hashed", "stats": {}}}}
    >>> print(summarize(m))
    rows read: 3   rejected: 0
      h                    hashed   (no analysis)
"""

from __future__ import annotations

import json

from beam_prep.analyzers.manifest import numeric_summary


def summarize(manifest: dict, *, counts: bool = True) -> str:
    """Human-readable end-of-run summary: the row counts, then one line per feature.

    Args:
        manifest: The run's manifest.
        counts: Start with the rows read / rejected line. The CLI passes False: its run
            summary already shows ``rows_read`` and ``rows_rejected`` (only the rejection
            reasons are then added, when rows were rejected).
    """
    inp = manifest["input"]
    reasons = f" {json.dumps(inp['rejected_by_reason'])}" if inp["rows_rejected"] else ""
    if counts:
        lines = [f"rows read: {inp['rows_read']:,}   rejected: {inp['rows_rejected']:,}"
                 + reasons]
    else:
        lines = [f"rejected by reason:{reasons}"] if reasons else []
    for name in (f["name"] for f in manifest["spec"]["features"]):
        entry = manifest["features"][name]
        s = entry["stats"]
        kind = entry["kind"]
        if kind in ("string", "integer", "text"):
            extra = f", documents {s['document_count']:,}" if kind == "text" else ""
            lines.append(f"  {name:<20} {kind:<8} vocabulary {s['vocabulary_size']:,} of "
                         f"{s['distinct_values']:,} distinct{extra}")
            unwritable = int((s.get("excluded_unwritable") or {}).get("tokens") or 0)
            if unwritable:  # one token per line: see data_warnings.unwritable_warning
                lines[-1] += f", {unwritable:,} left out (line breaks)"
        elif kind == "numeric":
            lines.append(numeric_summary(name, s))
        else:
            lines.append(f"  {name:<20} {kind:<8} (no analysis)")
        if "imputed_value" in s:  # `impute`: repr escapes control characters of a token
            v = s["imputed_value"]
            lines[-1] += f", imputed {v:.6g}" if isinstance(v, float) else f", imputed {v!r:.60}"
    return "\n".join(lines)
