"""Builds ``manifest.json`` from the merged analysis results (pure function, no I/O).

Example:
    >>> m = build_manifest(spec, {"patterns": ["a.csv"], "format": "csv", "files": 1},
    ...                    entries, numeric_partials, meta, [])        # doctest: +SKIP
    >>> m["features"]["price"]["stats"]["mean"]                       # doctest: +SKIP
"""

from __future__ import annotations

import math
import sys
from typing import Any

from beam_prep.analyzers import families as registry
from beam_prep.analyzers import numeric as num
from beam_prep.io.contract import artifacts as layout
from beam_prep.spec import Spec
from beam_prep.spec.weights import is_weighted

_DROP_KEYS = ("excluded_unwritable", "excluded_reserved", "dropped_min_count", "dropped_top_k")


def library_versions() -> dict[str, str]:
    """Versions of the libraries whose behaviour shapes the artifacts."""
    import apache_beam
    import pyarrow
    import tfx_bsl

    from beam_prep.version import __version__

    return {"beam_prep": __version__, "apache_beam": apache_beam.__version__,
            "pyarrow": pyarrow.__version__, "tfx_bsl": tfx_bsl.__version__}


def terms_histogram_field(hist: list[int] | None, documents: int) -> list[int] | None:
    """``terms_per_document_log2`` of a text feature: the summed log2 histogram
    (:func:`beam_prep.analyzers.text_counts.log2_histogram`: index 0 = documents with no term,
    index ``b`` = documents with ``2**(b-1) <= terms < 2**b``) without its trailing zeros.

    None (the field is left out) unless it counts every document: a run that reused cache
    entries written before the histogram existed has no complete histogram.

    Example:
        >>> terms_histogram_field([1, 0, 2, 0, 0], 3), terms_histogram_field([1, 0], 3)
        ([1, 0, 2], None)
    """
    if hist is None or sum(hist) != documents:
        return None
    end = len(hist)
    while end and not hist[end - 1]:
        end -= 1
    return [int(c) for c in hist[:end]]


def _vocab_stats(kind: str, entry: dict, missing: int, documents: int | None,
                 terms: list[int] | None = None) -> dict:
    drops = {k: entry["drops"].get(k, {"tokens": 0, "count": 0}) for k in _DROP_KEYS}
    distinct = entry["vocabulary_size"] + sum(d["tokens"] for d in drops.values())
    total = entry["kept_count"] + sum(d["count"] for d in drops.values())
    stats = {"vocabulary_size": entry["vocabulary_size"], "distinct_values": distinct,
             "total_count": total, "missing_count": missing, **drops}
    if kind == "text":
        stats["document_count"] = documents or 0
        field = terms_histogram_field(terms, documents or 0)
        if field is not None:
            stats["terms_per_document_log2"] = field
    return stats


NO_FINITE_VALUE = ("no finite value in the data (all missing, NaN or inf); generated layers: "
                   "identity Normalization, one bucket")
VARIANCE_OVERFLOW = ("the variance exceeds the float64 range (about 1.8e308), so no "
                     "Normalization layer can hold it; set `scaling: none` for this feature "
                     "in the spec (min_max cannot help: its (max - min)² is at least 4 × the "
                     "variance), or scale the column down (e.g. divide it by 1e160) or clip "
                     "its outliers, then re-run the analysis")


def null_reasons(moments: num.Moments) -> dict[str, str]:
    """Why a numeric statistic is null in the manifest (JSON has no NaN/inf).

    Example:
        >>> null_reasons(num.Moments())["mean"].startswith("no finite value")
        True
    """
    if moments.count == 0:
        return {k: NO_FINITE_VALUE for k in ("mean", "variance", "min", "max")}
    if not math.isfinite(moments.variance):
        return {"variance": VARIANCE_OVERFLOW}
    return {}


def _json_boundary(b: float) -> float | None:
    """A boundary JSON can hold: ±inf (a tail of infinite values) becomes ±the largest float64.

    The bucket of every float32 input is unchanged (float32 values never reach the largest
    float64, and in float32 it rounds back to inf).
    """
    if math.isinf(b):
        return math.copysign(sys.float_info.max, b)
    return layout.finite_or_none(b)


ZERO_WEIGHT = ("the weights of the finite values sum to 0 (or every weight was invalid): a "
               "weighted mean is undefined; generated layers: identity Normalization")


def _numeric_stats(feature, partial: num.NumericPartial | None, missing: int) -> dict:
    partial = partial or num.NumericPartial()
    m = partial.moments
    reasons = null_reasons(m)
    if m.count and getattr(m, "weight", 1) == 0:  # weighted, Σw = 0 (spec.weights)
        reasons = {k: ZERO_WEIGHT for k in ("mean", "variance")}
    stats: dict[str, Any] = {
        "count": m.count,
        "missing_count": missing,
        "nan_count": partial.nan,
        "infinite_count": partial.infinite,
        "mean": None if "mean" in reasons else m.mean,
        "variance": None if "variance" in reasons else m.variance,
        "min": None if "min" in reasons else m.minimum,
        "max": None if "max" in reasons else m.maximum,
        "null_reasons": reasons,
        "boundaries": None,
        "epsilon": feature.resolved_epsilon(),
    }
    if feature.num_buckets is not None:
        # Without a finite value (all missing, NaN or inf) there is one bucket: no boundary.
        found = num.boundaries(partial, feature.num_buckets) if m.count else []
        stats["boundaries"] = [_json_boundary(b) for b in found]
    if feature.needs_quartiles():
        # Additive (robust scaling): other manifests keep their bytes. Null without a
        # finite value; ±inf (a quarter of the values infinite) as for boundaries.
        found_q = num.quartiles(partial) if m.count else None
        stats["quartiles"] = None if found_q is None else [_json_boundary(q) for q in found_q]
    return stats


def imputed_value(feature, stats: dict, first_token: str | None) -> Any:
    """``stats.imputed_value`` of a feature with ``impute`` (null: no observed value).

    ``mean``: the manifest mean of the finite values; ``median``: ``quartiles[1]``;
    ``most_frequent``: the vocabulary's first line (an int for integer features).

    Example:
        >>> from beam_prep.spec import IntegerFeature
        >>> imputed_value(IntegerFeature("i", impute="most_frequent"), {}, "42")
        42
    """
    if feature.impute == "mean":
        return stats.get("mean")
    if feature.impute == "median":
        quartiles = stats.get("quartiles")
        return None if quartiles is None else quartiles[1]
    if first_token is None:
        return None
    return int(first_token) if feature.kind == "integer" else first_token


def numeric_summary(name: str, stats: dict) -> str:
    """Summary line of a numeric feature (its warnings: :mod:`beam_prep.analyzers.data_warnings`).

    Example:
        >>> print(numeric_summary("x", {"mean": 2.5, "variance": 1.25, "min": 1.0,
        ...                             "max": 4.0, "missing_count": 0, "boundaries": None}))
          x                    numeric  mean 2.5 var 1.25 min 1.0 max 4.0 missing 0
        >>> numeric_summary("x", {"missing_count": 0, "quartiles": [1.0, 2.0, 3.5]})[-16:]
        'median 2 IQR 2.5'
    """
    def fmt(key: str) -> str:
        value = stats.get(key)
        return "null" if value is None else f"{value:.6g}"

    def raw(key: str) -> str:
        return "null" if stats.get(key) is None else str(stats[key])

    b, q = stats.get("boundaries"), stats.get("quartiles")
    return (f"  {name:<20} numeric  mean {fmt('mean')} var {fmt('variance')} "
            f"min {raw('min')} max {raw('max')} missing {stats['missing_count']:,}"
            + (f", {len(b)} boundaries" if b else "")
            + (f", {stats['key_count']:,} keys" if "key_count" in stats else "")
            + (f", median {q[1]:.6g} IQR {q[2] - q[0]:.6g}" if q else ""))


def build_manifest(spec: Spec, input_info: dict, entries: dict[str, dict],
                   numeric_partials: dict[str, num.NumericPartial], meta: dict,
                   rejected: list[str] | None) -> dict:
    """Assembles the manifest dict (with fingerprint) from merged results.

    ``entries`` maps each feature to the merged entries of the branches that wrote its
    files (:func:`~beam_prep.analyzers.family.merged_entries`: its vocabulary's, and each
    analysis family's); every family then adds its part
    (:meth:`~beam_prep.analyzers.family.AnalysisFamily.manifest`). ``rejected`` lists the
    rejected-row shard files (relative paths), empty when none.
    """
    features: dict[str, dict] = {}
    for f in spec.features:
        missing = meta["missing"].get(f.name, 0)
        entry = entries.get(f.name, {})
        files = dict(entry.get("files", {}))
        if f.kind in ("string", "integer", "text"):
            features[f.name] = {
                "kind": f.kind, "files": files,
                "stats": _vocab_stats(f.kind, entry, missing,
                                      meta["documents"].get(f.name),
                                      meta.get("terms_per_document", {}).get(f.name)),
            }
        elif f.kind == "numeric":
            features[f.name] = {"kind": f.kind, "files": files,
                                "stats": _numeric_stats(f, numeric_partials.get(f.name),
                                                        missing)}
        else:
            features[f.name] = {"kind": f.kind, "files": {}, "stats": {}}
        for family in registry.FAMILIES:  # only for its features: other manifests keep their bytes
            if family.applies(f):
                family.manifest(features[f.name], entry)
        if is_weighted(f):  # additive keys, only for weighted features
            stats = features[f.name]["stats"]
            stats["invalid_weight_count"] = meta.get("invalid_weights", {}).get(f.name, 0)
            if f.kind == "numeric":
                weight = getattr(numeric_partials.get(f.name), "moments", None)
                stats["weight_total"] = float(getattr(weight, "weight_total", 0.0))
        if getattr(f, "impute", None) is not None:  # only then: other manifests keep their bytes
            stats = features[f.name]["stats"]
            stats["imputed_value"] = imputed_value(
                f, stats, entry.get("first") if f.kind != "numeric" else None)
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
            # rejected/rejected-SSSSS-of-NNNNN.jsonl, in (file, row) order; [] if none
            "rejected_files": sorted(rejected or []),
            # TFRecord remainders skipped with --skip_corrupt_tail (one reject each)
            **({"skipped_tails": sorted(meta["skipped_tails"],
                                        key=lambda t: (t["file"], t["offset"]))}
               if meta.get("skipped_tails") else {}),
        },
        "features": features,
    }
    if any(f.expr is not None for f in spec.features):
        # Additive, only with derived features (other manifests keep their bytes): the type
        # each input column was read as, which the layers' raw inputs must have.
        from beam_prep.analyzers.split_fn import required_columns

        manifest["input"]["column_types"] = required_columns(spec)
    manifest["fingerprint"] = layout.manifest_fingerprint(manifest)
    return manifest
