"""Writes small valid artifact directories for codegen tests, independently of the analysis.

``write_artifacts(path, spec, columns)`` computes vocabularies and statistics with plain
Python (Counter, sorted, math) from in-memory columns, following the contract in
``beam_prep/io/contract/artifacts.py``: count descending, ties by the token's UTF-8 bytes
descending; integers ranked as decimal strings; text standardised like Keras for ASCII
(lower-case, strip ``string.punctuation``), split on whitespace, n-grams joined by spaces.
Boundaries are passed in by hand (``boundaries={name: [...]}``). A missing cell (None) is
replaced by the feature's ``default_value`` before counting, as the analysis does; NaN is
not missing (excluded from the moments). A feature with ``impute`` gets
``stats.imputed_value``: the mean computed here, the median of the finite values (the upper
middle one for an even count, as the exact sketch gives; also written as ``quartiles[1]``),
or the first token of the ranking computed here.

Example:
    >>> write_artifacts(tmp, {"features": [{"name": "c", "kind": "string"}]},
    ...                 {"c": ["a", "b", "a"]})                               # doctest: +SKIP
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import string
from typing import Any

from beam_prep.io.contract.artifacts import canonical_json, manifest_fingerprint
from beam_prep.spec import Spec

_PUNCT = set(string.punctuation)


def standardize(text: str, mode: str) -> str:
    """Keras standardize for ASCII text."""
    if mode in ("lower", "lower_and_strip_punctuation"):
        text = "".join(c.lower() if c.isascii() else c for c in text)
    if mode in ("strip_punctuation", "lower_and_strip_punctuation"):
        text = "".join(c for c in text if c not in _PUNCT)
    return text


def text_tokens(text: str, feature: Any) -> list[str]:
    """Tokens and n-grams of one document, in Keras' order."""
    text = standardize(text, feature.standardize)
    words = text.split() if feature.split == "whitespace" else (
        list(text) if feature.split == "character" else [text])
    out: list[str] = []
    for width in feature.ngram_widths():
        out += [" ".join(words[i:i + width]) for i in range(len(words) - width + 1)]
    return out


def _order(counts: dict[str, int]) -> list[str]:
    by_bytes_desc = sorted(counts, key=lambda t: t.encode("utf-8"), reverse=True)
    return sorted(by_bytes_desc, key=lambda t: -counts[t])  # stable: ties keep bytes desc


def _ranked(counts: dict[str, int], top: int | None, min_count: int) -> list[str]:
    kept = [t for t in _order(counts) if counts[t] >= min_count]
    return kept[:top] if top is not None else kept


def _write(path: str, rel: str, data: bytes) -> dict[str, Any]:
    full = os.path.join(path, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)
    return {"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _vocab_files(path: str, name: str, tokens: list[str],
                 rows: list[list[Any]]) -> dict[str, Any]:
    vocab = "".join(t + "\n" for t in tokens).encode("utf-8")
    side = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    return {"vocabulary": _write(path, f"vocab/{name}.txt", vocab),
            "counts": _write(path, f"vocab/{name}.counts.jsonl", side)}


def _dropped() -> dict[str, int]:
    return {"tokens": 0, "count": 0}


def _add_imputed(f: Any, stats: dict[str, Any], values: list[Any], tokens: list[str]) -> None:
    impute = getattr(f, "impute", None)
    if impute == "mean":
        stats["imputed_value"] = stats["mean"]
    elif impute == "median":
        xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        median = sorted(xs)[len(xs) // 2] if xs else None
        stats["quartiles"] = [min(xs), median, max(xs)] if xs else None  # [1] is what counts
        stats["imputed_value"] = median
    elif impute == "most_frequent":
        first = tokens[0] if tokens else None
        stats["imputed_value"] = int(first) if first is not None and f.kind == "integer" \
            else first


def write_artifacts(path: str, spec: dict[str, Any], columns: dict[str, list[Any]], *,
                    boundaries: dict[str, list[float]] | None = None) -> str:
    """Writes vocab files and manifest.json for ``spec`` over ``columns``; returns ``path``."""
    parsed = Spec.from_dict(spec)
    boundaries = boundaries or {}
    features: dict[str, Any] = {}
    rows = max((len(v) for v in columns.values()), default=0)
    for f in parsed.features:
        values = columns.get(f.source_column, [])
        tokens: list[str] = []
        if f.kind in ("string", "integer"):
            present = [v if v is not None else f.default_value for v in values]
            missing = sum(v is None for v in present)
            counts = collections.Counter(str(v) for v in present if v is not None)
            tokens = _ranked(counts, f.top_k, f.min_count)
            features[f.name] = {"kind": f.kind, "files": _vocab_files(
                path, f.name, tokens, [[t, counts[t]] for t in tokens]), "stats": {
                "vocabulary_size": len(tokens), "distinct_values": len(counts),
                "total_count": sum(counts.values()), "missing_count": missing,
                "dropped_min_count": _dropped(), "dropped_top_k": _dropped(),
                "excluded_unwritable": _dropped()}}
        elif f.kind == "text":
            docs = [v if v is not None else f.default_value for v in values]
            docs = [d for d in docs if d is not None]
            counts, df = collections.Counter(), collections.Counter()
            for d in docs:
                toks = text_tokens(d, f)
                counts.update(toks)
                df.update(set(toks))
            tokens = _ranked(counts, f.max_vocabulary_tokens(), 1)
            tf_idf = f.output_mode == "tf_idf"
            side = [[t, counts[t], df[t]] if tf_idf else [t, counts[t]] for t in tokens]
            features[f.name] = {"kind": "text", "files": _vocab_files(path, f.name, tokens, side),
                                "stats": {"vocabulary_size": len(tokens),
                                          "distinct_values": len(counts),
                                          "total_count": sum(counts.values()),
                                          "missing_count": len(values) - len(docs),
                                          "document_count": len(docs),
                                          "dropped_min_count": _dropped(),
                                          "dropped_top_k": _dropped(),
                                          "excluded_unwritable": _dropped()}}
        elif f.kind == "numeric":
            filled = [v if v is not None else f.default_value for v in values]
            xs = [float(v) for v in filled if v is not None and not math.isnan(float(v))]
            n = len(xs)
            mean = sum(xs) / n if n else None
            var = sum((x - mean) ** 2 for x in xs) / n if n else None
            features[f.name] = {"kind": "numeric", "files": {}, "stats": {
                "count": n, "missing_count": sum(v is None for v in values),
                "nan_count": sum(v is not None and math.isnan(float(v)) for v in values),
                "mean": mean, "variance": var, "min": min(xs) if xs else None,
                "max": max(xs) if xs else None,
                "boundaries": boundaries.get(f.name) if f.num_buckets else None,
                "epsilon": f.resolved_epsilon()}}
        else:
            features[f.name] = {"kind": "hashed", "files": {}, "stats": {}}
        _add_imputed(f, features[f.name]["stats"], values, tokens)
    manifest: dict[str, Any] = {
        "format": "beam_prep.artifacts", "format_version": 1,
        "spec": parsed.to_dict(),
        "versions": {"beam_prep": "test-fixture"},
        "input": {"patterns": ["<in-memory>"], "format": "csv", "rows_read": rows,
                  "rows_rejected": 0},
        "features": features,
    }
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    _write(path, "manifest.json", canonical_json(manifest))
    return path
