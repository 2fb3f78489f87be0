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
=========  ===========================================  ====================================

The z_score layers are planned by ``beam_prep.codegen.plan`` from
:func:`normalization_moments`; this module gives the two others as ``(class, name, args)``
tuples. It imports neither Keras nor TensorFlow.

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
    return float(mean), float(variance), False
