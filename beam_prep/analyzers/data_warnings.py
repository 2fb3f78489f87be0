"""Warnings about the analysed data, read from a manifest (pure, no Beam, no I/O).

``beam-prep analyze`` prints these lines on stderr after every successful run, ``--quiet``
or not: ``--quiet`` hides progress and the summary, never what the data itself looks like.
One line per fact, in spec order:

* rejected rows (count and reasons; the rows are in ``rejected/*.jsonl``);
* a numeric statistic that is null (no finite value, or a variance beyond float64), with
  the manifest's reason and fix;
* NaN values of a numeric feature (left out of the moments and the boundaries);
* ±inf values of a numeric feature (left out of the moments, kept in the boundaries);
* rows set aside for an invalid instance weight, and tokens a weighted ``min_count`` of 1
  dropped (:mod:`beam_prep.spec.weights`);
* tokens left out of a vocabulary ``.txt`` because they hold a line break (or are empty): a
  line file cannot hold them, so the lookup maps them to OOV (``excluded_unwritable``; the
  ``.target.jsonl`` of a target-encoded feature keeps them, as JSON).

Example:
    >>> manifest = {"input": {"rows_read": 4, "rows_rejected": 0},
    ...             "spec": {"features": [{"name": "x", "kind": "numeric"}]},
    ...             "features": {"x": {"kind": "numeric", "stats": {
    ...                 "count": 2, "nan_count": 1, "infinite_count": 0, "null_reasons": {}}}}}
    >>> data_warnings(manifest)
    ['warning: x: 1 of 3 values NaN (left out of mean, variance, min, max and boundaries)']
"""

from __future__ import annotations

import json
from typing import Any


def _numeric_warnings(name: str, stats: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    reasons: dict[str, str] = stats.get("null_reasons") or {}
    for reason in dict.fromkeys(reasons.values()):
        keys = ", ".join(k for k, v in reasons.items() if v == reason)
        lines.append(f"warning: {name}: {keys} null: {reason}")
    nan, inf = int(stats.get("nan_count") or 0), int(stats.get("infinite_count") or 0)
    values = int(stats.get("count") or 0) + nan + inf
    if nan:
        lines.append(f"warning: {name}: {nan:,} of {values:,} values NaN (left out of mean, "
                     "variance, min, max and boundaries)")
    if inf:
        lines.append(f"warning: {name}: {inf:,} of {values:,} values ±inf (left out of mean, "
                     "variance, min and max; kept in boundaries)")
    return lines


def _weight_warnings(feature: dict[str, Any], stats: dict[str, Any]) -> list[str]:
    """Rows set aside for their weight; tokens the default-looking ``min_count: 1`` dropped.

    Example:
        >>> _weight_warnings({"name": "c", "weights": "w", "min_count": 1},
        ...                  {"invalid_weight_count": 2,
        ...                   "dropped_min_count": {"tokens": 3, "count": 1.5}})[1][:57]
        'warning: c: 3 tokens dropped: their weights sum below min'
    """
    if feature.get("weights") is None and feature.get("weights_expr") is None:
        return []
    name, lines = feature["name"], []
    invalid = int(stats.get("invalid_weight_count") or 0)
    if invalid:
        lines.append(f"warning: {name}: {invalid:,} rows set aside: their weight is missing, "
                     "NaN, negative or infinite (invalid_weight_count)")
    dropped = int((stats.get("dropped_min_count") or {}).get("tokens") or 0)
    if dropped and feature.get("min_count") == 1:
        lines.append(f"warning: {name}: {dropped:,} tokens dropped: their weights sum below "
                     "min_count=1 (TFT's frequency_threshold); set min_count: 0 to keep them")
    return lines


def unwritable_warning(feature: dict[str, Any], stats: dict[str, Any]) -> list[str]:
    """The line about tokens left out of the vocabulary file (``excluded_unwritable``).

    Example:
        >>> unwritable_warning({"name": "c"}, {"excluded_unwritable": {"tokens": 2,
        ...                                                           "count": 5}})[0][:75]
        'warning: c: 2 tokens (5 values) left out of its vocabulary file vocab/c.txt'
    """
    drop = stats.get("excluded_unwritable") or {}
    tokens = int(drop.get("tokens") or 0)
    if not tokens:
        return []
    name, count = feature["name"], drop.get("count") or 0
    values = f"{count:,}" if isinstance(count, int) else f"{count:.6g} weighted"
    kept = ("; its target encoding file keeps them" if feature.get("target_encoding")
            else "")
    return [f"warning: {name}: {tokens:,} tokens ({values} values) left out of its vocabulary "
            f"file vocab/{name}.txt: they contain a line break (\\n, \\r, U+2028, ...) or are "
            "empty, and a vocabulary file holds one token per line, so the lookup maps them to "
            f"OOV (excluded_unwritable){kept}"]


def data_warnings(manifest: dict[str, Any]) -> list[str]:
    """The warning lines about the data of one analysis (empty when there is none).

    Args:
        manifest: A ``manifest.json`` as a dict.

    Returns:
        One ``warning: ...`` line per fact, rejected rows first, then features in spec order.
    """
    lines: list[str] = []
    inp = manifest.get("input", {})
    rejected = int(inp.get("rows_rejected") or 0)
    if rejected:
        reasons = json.dumps(inp.get("rejected_by_reason", {}), sort_keys=True)
        lines.append(f"warning: {rejected:,} of {int(inp.get('rows_read') or 0):,} rows "
                     f"rejected {reasons}; they are listed in rejected/*.jsonl")
    for feature in manifest.get("spec", {}).get("features", []):
        entry = manifest.get("features", {}).get(feature["name"], {})
        if entry.get("kind") == "numeric":
            lines.extend(_numeric_warnings(feature["name"], entry.get("stats") or {}))
        lines.extend(_weight_warnings(feature, entry.get("stats") or {}))
        lines.extend(unwritable_warning(feature, entry.get("stats") or {}))
    return lines
