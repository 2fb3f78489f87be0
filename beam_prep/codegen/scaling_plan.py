"""The float output of a numeric feature by its ``scaling`` (z_score, min_max, none).

=========  ===========================================  ====================================
scaling    layer ``<name>_...``                         value
=========  ===========================================  ====================================
z_score    Normalization ``_normalization``             ``(x - mean) / sqrt(variance)``
min_max    Normalization ``_normalization`` with        ``(x - min) / (max - min)``, not
           mean = min, variance = (max - min)²          clipped (TF Transform scale_to_0_1)
min_max,   Activation ``_scaling`` (sigmoid)            ``sigmoid(x)``: TF Transform's
min==max                                                choice when min >= max or no data
none       no layer                                     the raw float32 value
log1p      SignedLog1p ``_log1p``                       ``sign(x) * log1p(|x|)``; no
                                                        statistic, no z-score after it
robust     RobustScaling ``_robust``                    ``(x - q50) / (q75 - q25)`` from
                                                        ``quartiles``; IQR 0 -> divide by 1;
                                                        no finite value -> identity
piecewise  PiecewiseLinear ``_piecewise`` + Reshape     ``num_buckets`` floats: Gorishniy et
_linear    ``_flatten``                                 al.'s encoding over edges ``[min,
                                                        *boundaries, max]``
=========  ===========================================  ====================================

The z_score layers are planned by ``beam_prep.codegen.plan`` from
:func:`normalization_moments`; this module gives the others as ``(class, name, args)``
tuples. The three last classes are ``beam_prep.codegen.numeric_layers``' (rendered into the
generated module). It imports neither Keras nor TensorFlow.

Example:
    >>> min_max_layer("x", {"count": 3, "min": 1.0, "max": 5.0})
    ('Normalization', 'x_normalization', (('mean', 1.0), ('variance', 16.0)))
    >>> min_max_layer("x", {"count": 3, "min": 2.0, "max": 2.0})[0]
    'Activation'
"""

from __future__ import annotations

import math
from typing import Any

from beam_prep.errors import ArtifactError

NUMERIC_LAYER_CLASSES = ("SignedLog1p", "RobustScaling", "PiecewiseLinear")
FLOAT32_MAX = 3.4028234663852886e38


def _float32_finite(name: str, what: str, values: list[float]) -> None:
    if any(not math.isfinite(v) or abs(v) > FLOAT32_MAX for v in values):
        raise ArtifactError(
            f"Feature {name!r}: the {what} layer holds float32 constants, but the analysis "
            f"found values beyond the float32 range (about 3.4e38): {values[:8]!r}. Fix: set "
            f"`scaling: none` for {name!r} in the spec, or clip the column's outliers (or "
            "scale it down), then re-run the analysis.")


def robust_layer(name: str, stats: dict[str, Any]) -> tuple[tuple[str, str, tuple], bool]:
    """``RobustScaling(median=q50, iqr=q75 - q25)`` and whether it is the identity.

    No quartiles (no finite value) gives median 0 and IQR 1 (the identity); an IQR of 0
    (over half of the values equal) divides by 1, as sklearn's RobustScaler does.

    Raises:
        ArtifactError: A quartile is beyond the float32 range (a quarter of the values
            infinite, or huge).

    Example:
        >>> robust_layer("x", {"count": 4, "quartiles": [1.0, 2.0, 5.0]})[0]
        ('RobustScaling', 'x_robust', (('median', 2.0), ('iqr', 4.0)))
        >>> robust_layer("x", {"count": 4, "quartiles": [2.0, 2.0, 2.0]})[0][2]
        (('median', 2.0), ('iqr', 1.0))
    """
    q = stats.get("quartiles")
    identity = int(stats.get("count") or 0) == 0 or not q
    median, iqr = (0.0, 1.0) if identity else (float(q[1]), float(q[2]) - float(q[0]))
    _float32_finite(name, "RobustScaling", [median, iqr])
    if iqr <= 0:
        iqr = 1.0
    return ("RobustScaling", f"{name}_robust", (("median", median), ("iqr", iqr))), identity


def piecewise_edges(stats: dict[str, Any], num_buckets: int) -> list[float]:
    """The ``num_buckets + 1`` bin edges ``[min, *boundaries, max]`` (clipped into range).

    Repeated edges (a value holding more than a bucket's share) make step bins. A constant
    column (min == max) gives only step bins at that value; no finite value gives the edges
    of a constant 0.

    Example:
        >>> piecewise_edges({"count": 5, "min": 0.0, "max": 9.0, "boundaries": [2.0, 5.0]}, 3)
        [0.0, 2.0, 5.0, 9.0]
        >>> piecewise_edges({"count": 0, "boundaries": []}, 3)
        [0.0, 0.0, 0.0, 0.0]
    """
    low, high, inner = stats.get("min"), stats.get("max"), stats.get("boundaries") or []
    if int(stats.get("count") or 0) == 0 or low is None or high is None:
        return [0.0] * (num_buckets + 1)
    low, high = float(low), float(high)
    edges = [low, *(min(max(float(b), low), high) for b in inner), high]
    return [max(edges[: i + 1]) for i in range(len(edges))]


def piecewise_layers(name: str, stats: dict[str, Any], num_buckets: int
                     ) -> tuple[tuple[str, str, tuple], tuple[str, str, tuple], int]:
    """``PiecewiseLinear`` over :func:`piecewise_edges`, the Reshape to ``(batch, T)``, T.

    Raises:
        ArtifactError: An edge is beyond the float32 range.
    """
    edges = piecewise_edges(stats, num_buckets)
    _float32_finite(name, "PiecewiseLinear", edges)
    width = len(edges) - 1
    return (("PiecewiseLinear", f"{name}_piecewise", (("edges", [edges]),)),
            ("Reshape", f"{name}_flatten", (("target_shape", [width]),)), width)


def min_max_layer(name: str, stats: dict[str, Any]) -> tuple[str, str, tuple]:
    """The layer mapping [min, max] to [0, 1] (sigmoid when min >= max or no data).

    Raises:
        ArtifactError: ``(max - min)²`` is beyond float64 (a range over ~1.3e154).
    """
    low, high = stats.get("min"), stats.get("max")
    if int(stats.get("count") or 0) == 0 or low is None or high is None or low >= high:
        return ("Activation", f"{name}_scaling", (("activation", "sigmoid"),))
    span = float(high) - float(low)
    variance = span * span  # not ** 2: that raises OverflowError instead of giving inf
    if not math.isfinite(variance):
        raise ArtifactError(
            f"Feature {name!r}: min_max scaling needs (max - min)² within float64 (about "
            f"1.8e308). Received: min={low!r}, max={high!r}. Fix: set `scaling: none` for "
            f"{name!r} in the spec (the raw value, no layer), or scale the column down or "
            "clip its outliers, then re-run the analysis.")
    return ("Normalization", f"{name}_normalization",
            (("mean", float(low)), ("variance", variance)))


def normalization_moments(name: str, stats: dict[str, Any]) -> tuple[float, float, bool]:
    """``(mean, variance, no_data)`` for the Normalization; refuses null moments with data."""
    mean, variance = stats.get("mean"), stats.get("variance")
    if int(stats.get("count") or 0) == 0:
        # No finite value was seen: an identity normalization (documented in the summary).
        return 0.0, 1.0, True
    if mean is None or variance is None:
        which = "variance" if variance is None else "mean"
        raise ArtifactError(
            f"Feature {name!r}: a Normalization layer needs a finite mean and variance, but "
            f"the analysis found a {which} beyond the float64 range (about 1.8e308). Received: "
            f"mean={mean!r}, variance={variance!r}, min={stats.get('min')!r}, "
            f"max={stats.get('max')!r}. Fix: set `scaling: none` for {name!r} in the spec "
            "(min_max cannot help: its (max - min)² is at least 4 × the variance), or scale "
            "the column down (e.g. divide it by 1e160) or clip its outliers, then re-run the "
            "analysis."
        )
    if abs(float(mean)) > _F32_MAX or float(variance) > _F32_MAX:  # its weights are float32
        raise ArtifactError(
            f"Feature {name!r}: a Normalization layer keeps its mean and variance in float32 "
            f"(at most about 3.4e38), but the analysis found mean={mean!r}, "
            f"variance={variance!r}. Fix: set `scaling: none` for {name!r} in the spec, or "
            "scale the column down (e.g. divide it by 1e20) or clip its outliers, then re-run "
            "the analysis.")
    return float(mean), float(variance), False


_F32_MAX = 3.4028234663852886e38
