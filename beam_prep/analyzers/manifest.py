"""Builds ``manifest.json`` from the merged analysis results (pure function, no I/O).

Example:
    >>> m = build_manifest(spec, {"patterns": ["a.csv"], "format": "csv", "files": 1},
    ...                    vocab_meta, numeric_partials, meta, None)   # doctest: +SKIP
    >>> m["features"]["price"]["stats"]["mean"]                       # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from beam_prep.analyzers import numeric as num
from beam_prep.io import artifacts as layout
from beam_prep.spec import Spec

_DROP_KEYS = ("excluded_unwritable", "excluded_reserved", "dropped_min_count", "dropped_top_k")


def library_versions() -> dict[str, str]:
    """Versions of the libraries whose behaviour shapes the artifacts."""
    import apache_beam
    import pyarrow
    import tfx_bsl

    import beam_prep

    return {"beam_prep": beam_prep.__version__, "apache_beam": apache_beam.__version__,
            "pyarrow": pyarrow.__version__, "tfx_bsl": tfx_bsl.__version__}


def _vocab_stats(kind: str, entry: dict, missing: int, documents: int | None) -> dict:
    drops = {k: entry["drops"].get(k, {"tokens": 0, "count": 0}) for k in _DROP_KEYS}
    distinct = entry["vocabulary_size"] + sum(d["tokens"] for d in drops.values())
    total = entry["kept_count"] + sum(d["count"] for d in drops.values())
    stats = {"vocabulary_size": entry["vocabulary_size"], "distinct_values": distinct,
             "total_count": total, "missing_count": missing, **drops}
    if kind == "text":
        stats["document_count"] = documents or 0
    return stats


def _numeric_stats(feature, partial: num.NumericPartial | None, missing: int) -> dict:
    partial = partial or num.NumericPartial()
    m = partial.moments
    stats: dict[str, Any] = {
        "count": m.count,
        "missing_count": missing,
        "nan_count": partial.nan,
        "infinite_count": partial.infinite,
        "mean": layout.finite_or_none(m.mean) if m.count else None,
        "variance": layout.finite_or_none(m.variance) if m.count else None,
        "min": layout.finite_or_none(m.minimum) if m.count else None,
        "max": layout.finite_or_none(m.maximum) if m.count else None,
        "boundaries": None,
        "epsilon": feature.resolved_epsilon(),
    }
    if feature.num_buckets is not None:
        stats["boundaries"] = [layout.finite_or_none(b)
                               for b in num.boundaries(partial, feature.num_buckets)]
    return stats


def build_manifest(spec: Spec, input_info: dict, vocab_meta: dict[str, dict],
                   numeric_partials: dict[str, num.NumericPartial], meta: dict,
                   rejected: dict | None) -> dict:
    """Assembles the manifest dict (with fingerprint) from merged results."""
    features: dict[str, dict] = {}
    for f in spec.features:
        missing = meta["missing"].get(f.name, 0)
        if f.kind in ("string", "integer", "text"):
            entry = vocab_meta[f.name]
            features[f.name] = {
                "kind": f.kind, "files": entry["files"],
                "stats": _vocab_stats(f.kind, entry, missing,
                                      meta["documents"].get(f.name)),
            }
        elif f.kind == "numeric":
            features[f.name] = {"kind": f.kind, "files": {},
                                "stats": _numeric_stats(f, numeric_partials.get(f.name),
                                                        missing)}
        else:
            features[f.name] = {"kind": f.kind, "files": {}, "stats": {}}
    manifest = {
        "format": layout.FORMAT_NAME,
        "format_version": layout.FORMAT_VERSION,
        "spec": spec.to_dict(),
        "versions": library_versions(),
        "input": {
            **input_info,
            "splits": meta.get("splits", 0),
            "rows_read": meta["rows_read"],
            "rows_rejected": meta["rows_rejected"],
            "rejected_by_reason": dict(sorted(meta["rejected_by_reason"].items())),
            "rejected_file": rejected["path"] if rejected else None,
        },
        "features": features,
    }
    manifest["fingerprint"] = layout.manifest_fingerprint(manifest)
    return manifest
