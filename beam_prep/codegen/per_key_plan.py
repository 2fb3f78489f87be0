"""The plan of a numeric feature with ``per_key``: a ``PerKeyScaling`` layer and its key.

The feature's value is the tuple ``(value, key)``: its float32 value as for any numeric
feature, and its key, a string raw input (a column key) or the string result of a
``DerivedFeature`` ``<feature>_key_expr`` (an expression key). ``PerKeyScaling
<feature>_per_key`` looks the key up in the per-key file's keys (a ``StringLookup``: row 0
for an unknown or missing key, row ``i + 1`` for the file's key ``i``) and applies that
row's ``(shift, scale, sigmoid)``:

=========  ===============================================  ================================
scaling    per row (float64, then float32)                  output (float32)
=========  ===============================================  ================================
z_score    shift = mean, scale = sqrt(variance), or 1 when  ``(x - shift) / scale`` (TF
           the variance is 0 (TF Transform's choice)        Transform's scale_to_z_score)
min_max    shift = min, scale = max - min                   ``(x - shift) / scale``
min_max,   sigmoid                                          ``sigmoid(x)`` (float64, then
min==max                                                    float32; TFT's choice too)
none       shift = 0, scale = 1 (only with ``num_buckets``:  ``x`` (the raw value, exactly)
           the per-key buckets alone)
=========  ===============================================  ================================

A scale below :data:`F32_TINY` (float32's smallest normal number, e.g. a key whose values
are all about 1e-40) counts as a variance of 0 / ``min == max``: TensorFlow's CPU kernels
flush float32 subnormals to zero, so such a scale would divide by 0 (NaN for every row).

Row 0 is the same rule applied to the global statistics (no finite value at all: shift 0,
scale 1 for z_score, sigmoid for min_max). The output is computed in the ``data`` stage.
This module imports neither Keras nor TensorFlow.

Example:
    >>> scaling_row("z_score", 3, 2.0, 4.0, 0.0, 5.0)
    (2.0, 2.0, False)
    >>> scaling_row("min_max", 1, 7.0, 0.0, 7.0, 7.0)
    (0.0, 1.0, True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from beam_prep.codegen.derived_plan import DerivedPlan
from beam_prep.codegen.per_key_bucket_plan import (
    bucket_fields,
    bucket_outputs,
    bucket_state,
    bucket_summary,
)
from beam_prep.codegen.plan_types import (
    FeaturePlan,
    KeyPlan,
    LayerPlan,
    OutputPlan,
    PerKeyState,
)
from beam_prep.errors import ArtifactError
from beam_prep.io.contract.per_key_file import ROLE, PerKeyTable
from beam_prep.spec.per_key import key_expression

PER_KEY_LAYER_CLASS = "PerKeyScaling"
PER_KEY_COUNT_CLASS = "PerKeyCount"
COUNT_SUFFIX = "_key_count"
#: float32's smallest normal number: a smaller scale is flushed to 0 by TensorFlow.
F32_TINY = 1.1754943508222875e-38
KEY_SUFFIX = "_key_expr"


def scaling_row(scaling: str, count: int, mean: float, variance: float, low: float,
                high: float) -> tuple[float, float, bool]:
    """``(shift, scale, sigmoid)`` of one key (or of the global statistics)."""
    if scaling == "none":  # per-key buckets alone: the identity for every key
        return 0.0, 1.0, False
    if scaling == "z_score":
        if not count:
            return 0.0, 1.0, False
        std = math.sqrt(variance) if variance > 0 else 0.0
        return float(mean), (std if std >= F32_TINY else 1.0), False
    if not count or not float(high) - float(low) >= F32_TINY:
        return 0.0, 1.0, True
    return float(low), float(high) - float(low), False


def scaling_rows(scaling: str, table: PerKeyTable) -> tuple[np.ndarray, np.ndarray,
                                                             np.ndarray]:
    """:func:`scaling_row` of every key of a per-key file, vectorised (float64, bool)."""
    n = len(table.keys)
    if scaling == "none":
        return np.zeros(n), np.ones(n), np.zeros(n, bool)
    if scaling == "z_score":
        std = np.sqrt(np.where(table.variance > 0, table.variance, 0.0))
        scale = np.where(std >= F32_TINY, std, 1.0)
        return table.mean.copy(), scale, np.zeros(len(table.keys), bool)
    flat = ~(table.maximum - table.minimum >= F32_TINY)
    return (np.where(flat, 0.0, table.minimum), np.where(flat, 1.0, table.maximum - table.minimum),
            flat)


def check_rows(name: str, shifts: np.ndarray, scales: np.ndarray) -> None:
    """Refuses rows a float32 layer cannot apply (a variance or range beyond float64)."""
    bad = ~(np.isfinite(shifts) & np.isfinite(scales))
    if bad.any():
        raise ArtifactError(
            f"Feature {name!r}: {int(bad.sum())} key(s) have a variance or a range beyond "
            "float64, so no scaling can hold them. Fix: scale the column down or clip its "
            "outliers (or drop per_key), then re-run the analysis.")


def keyed_plan(art: Any, f: Any, fp: FeaturePlan) -> FeaturePlan:
    """The numeric feature plan ``fp`` of ``f`` (with ``per_key``) made per-key."""
    stats = art.stats(f.name)
    variance = stats.get("variance")
    if int(stats.get("count") or 0) and (stats.get("mean") is None or variance is None):
        raise ArtifactError(
            f"Feature {f.name!r}: the global variance is beyond float64, so unknown keys "
            "cannot be scaled. Fix: scale the column down or clip its outliers, then re-run "
            "the analysis.")
    row = scaling_row(f.scaling, int(stats.get("count") or 0), stats.get("mean") or 0.0,
                      variance or 0.0, stats.get("min") or 0.0, stats.get("max") or 0.0)
    check_rows(f.name, np.array([row[0]]), np.array([row[1]]))
    tree = key_expression(f)
    derived = None
    if tree is not None:
        from beam_prep.spec.derived import input_types

        derived = DerivedPlan(f.per_key.expr, tree, f"derive_{f.name}_key",
                              tuple(input_types(tree)), "string", f.name + KEY_SUFFIX)
    key = KeyPlan(f.per_key if derived is None else "", derived, art.relpath(f.name, ROLE),
                  f.scaling, row, **bucket_fields(art, f))
    layer = LayerPlan(PER_KEY_LAYER_CLASS, f"{f.name}_per_key",
                      tuple((part, PerKeyState(part))
                            for part in ("keys", "shifts", "scales", "sigmoid")))
    outputs = [OutputPlan(f.name, (layer,), stage="data", dtype="float32")]
    outputs += bucket_outputs(f, fp)  # num_buckets: per_key_bucket_plan
    if f.per_key_count:  # count_per_key looked up per row (per_key_layer.PerKeyCount)
        counter = LayerPlan(PER_KEY_COUNT_CLASS, f"{f.name}_count_lookup",
                            (("keys", PerKeyState("keys")), ("counts", PerKeyState("counts"))))
        outputs.append(OutputPlan(f.name + COUNT_SUFFIX, (counter,), stage="data",
                                  dtype="int64"))
    count = int(stats.get("key_count") or 0)
    summary = (f"numeric feature {f.name!r}: {f.scaling} scaling per key of "
               f"{_key_text(f)} ({count} keys; an unknown or missing key uses the global "
               "statistics)") if f.scaling != "none" else (
        f"numeric feature {f.name!r}: no scaling (the raw value: an identity "
        f"PerKeyScaling); keys of {_key_text(f)} ({count} keys)")
    if f.per_key_count:
        summary += f"; {f.name + COUNT_SUFFIX!r}: the key's count (0 when unknown)"
    summary += bucket_summary(f)
    return FeaturePlan(fp.name, fp.kind, fp.dtype, tuple(outputs), summary + ".", keyed=key)


def _key_text(f: Any) -> str:
    return (f"column {f.per_key!r}" if isinstance(f.per_key, str)
            else f"`{f.per_key.expr}`")


def per_key_state(art: Any, name: str, key: KeyPlan) -> dict[str, Any]:
    """The ``PerKeyScaling`` arguments (:class:`PerKeyState` parts) from the checked file.

    Row 0 is ``key.global_row``; the same values as the generated ``_per_key_state``.
    Columns, not lists (millions of keys): ``keys`` a large_string Arrow array,
    ``shifts`` and ``scales`` float64, ``sigmoid`` bool and ``counts`` int64 numpy arrays.
    """
    from beam_prep.io.contract.per_key_columns import read_per_key_columns

    table = read_per_key_columns(art, name)
    if np.isnan(table.variance).any():
        raise ArtifactError(
            f"Feature {name!r}: a key's variance is beyond float64 (null in "
            f"{key.relpath}). Fix: scale the column down or clip its outliers, then re-run "
            "the analysis.")
    shifts, scales, sigmoid = scaling_rows(key.scaling, table)
    check_rows(name, shifts, scales)
    g = key.global_row
    return {"keys": table.keys, "shifts": np.concatenate([[float(g[0])], shifts]),
            "scales": np.concatenate([[float(g[1])], scales]),
            "sigmoid": np.concatenate([[bool(g[2])], sigmoid]), "counts": table.count,
            **bucket_state(art, name, key)}
