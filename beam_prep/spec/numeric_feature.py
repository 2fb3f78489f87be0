"""The numeric feature kind: moments, min/max and quantile boundaries.

Example:
    >>> NumericFeature("price", num_buckets=4).resolved_epsilon()
    0.01
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from beam_prep.spec.bounds import MAX_NUM_BUCKETS, MIN_EPSILON, check_positive_int
from beam_prep.spec.feature_base import FeatureBase, Scaling, feature_error
from beam_prep.spec.imputation import Impute, canonicalize, check_imputation
from beam_prep.spec.per_key import PerKeyExpr, check_per_key, key_columns, per_key_dict


@dataclasses.dataclass(frozen=True)
class NumericFeature(FeatureBase):
    """A numeric feature: moments for Normalization, quantiles for Discretization.

    Statistics ignore missing cells and NaN (both counted). Variance is the population
    variance (as ``tft.var`` and ``keras.layers.Normalization``).

    Attributes:
        num_buckets: When set, ``num_buckets - 1`` quantile boundaries are computed.
        epsilon: Quantile sketch error; null = ``min(1 / num_buckets, 0.01)`` (TFT's default).
        default_value: Number that replaces a missing cell; null = skip and count.
        scaling: The float output: ``z_score`` (Normalization with the mean and variance),
            ``min_max`` (``(x - min) / (max - min)`` from the analysed min and max, TF
            Transform's ``scale_to_0_1``: not clipped, and ``sigmoid(x)`` when
            ``min == max`` or there was no finite value), ``none`` (the raw value),
            ``log1p`` (``sign(x) * log1p(|x|)``, no statistic, not followed by a z-score),
            ``robust`` (``(x - median) / (q75 - q25)`` from the analysed quartiles; an IQR
            of 0 divides by 1, no finite value gives the identity) or ``piecewise_linear``
            (Gorishniy et al. 2022's encoding over ``min``, the quantile boundaries and
            ``max``: ``num_buckets`` float outputs; needs ``num_buckets``). See
            docs/generated_layers.md, "Numeric scaling".
        impute: ``mean`` or ``median`` of the finite values: replaces a missing cell or NaN
            in the layers (not in the statistics); ``default_value: mean`` is the same
            (beam_prep.spec.imputation). null = no imputation.
        missing_indicator: Adds the output ``<name>_missing``: 1.0 where the value was
            missing or NaN, else 0.0.
        per_key: Statistics per key as well (TF Transform's ``*_per_key``): a column name
            (``per_key: store_id``, read as text) or ``{expr: "..."}`` (an expression over
            columns giving a string, e.g. ``{expr: "str(store_id)"}``); the scaling then
            uses the row's key's statistics, the global ones for an unknown or missing key
            (see :mod:`beam_prep.spec.per_key`). Null = global statistics only. With
            ``num_buckets``, ``<name>_bucket`` uses the key's own quantile boundaries too
            (TF Transform's ``bucketize_per_key``; the global ones for an unknown key).
        per_key_count: With ``per_key``, a second output ``<name>_key_count``: the number of
            finite values the analysis saw for the row's key (int64; 0 for an unknown or
            missing key), TF Transform's ``count_per_key`` looked up per row.

    Example:
        >>> NumericFeature("price", num_buckets=20).resolved_epsilon()
        0.01
    """

    num_buckets: int | None = None
    epsilon: float | None = None
    default_value: float | None = None
    scaling: Scaling = "z_score"
    impute: Impute | None = None
    missing_indicator: bool = False
    per_key: str | PerKeyExpr | None = None
    per_key_count: bool = False
    kind: str = dataclasses.field(default="numeric", init=False)

    def __post_init__(self) -> None:
        canonicalize(self)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        if self.num_buckets is not None:
            check_positive_int(self.name, "num_buckets", self.num_buckets, optional=True,
                                minimum=2, maximum=MAX_NUM_BUCKETS,
                                why="the quantile sketch of 1/num_buckets error would need "
                                "gigabytes per worker; set a larger epsilon to keep "
                                "memory small")
        if self.epsilon is not None:
            if (isinstance(self.epsilon, bool) or not isinstance(self.epsilon, (int, float))
                    or not MIN_EPSILON <= self.epsilon < 1):
                raise feature_error(self.name, "epsilon", self.epsilon,
                            f"a number in [{MIN_EPSILON:g}, 1) or null (the quantile sketch "
                            "buffers about log2(eps * rows) / eps values: 1.2 GB per worker "
                            "at 1e-6 on 20M rows, bad_alloc below 1e-9)")
            if self.num_buckets is None and not self.needs_quartiles():
                raise feature_error(self.name, "epsilon", self.epsilon,
                            "null unless num_buckets is set (or scaling is robust, or "
                            "impute is median)")
        if self.scaling == "piecewise_linear" and self.num_buckets is None:
            raise feature_error(self.name, "num_buckets", None,
                        "an integer >= 2 with scaling: piecewise_linear (its quantile "
                        "boundaries are the bin edges; the output has num_buckets values): "
                        "set num_buckets, e.g. 8, or choose another scaling")
        if self.default_value is not None and not math.isfinite(self.default_value):
            raise feature_error(self.name, "default_value", self.default_value,
                        "a finite number or null (NaN and infinity cannot stand in for a "
                        "missing value)")
        if self.per_key is not None:
            check_per_key(self)
        elif self.per_key_count:
            raise feature_error(self.name, "per_key_count", self.per_key_count,
                                "false unless per_key is set (the count is per key)")
        check_imputation(self)

    def needs_quartiles(self) -> bool:
        """Whether the analysis records ``quartiles`` ``[q25, q50, q75]`` for this feature.

        Example:
            >>> NumericFeature("x", scaling="robust").needs_quartiles()
            True
            >>> NumericFeature("x", impute="median").needs_quartiles()
            True
        """
        return self.scaling == "robust" or self.impute == "median"

    def input_columns(self) -> dict[str, str]:  # noqa: D102
        out = super().input_columns()
        for col, typ in key_columns(self).items():
            out.setdefault(col, typ)
        return out

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        out = super().to_dict()
        if "per_key" in out:
            out["per_key"] = per_key_dict(self.per_key)
        return out

    def resolved_epsilon(self) -> float | None:
        """The sketch epsilon actually used (TFT's default when not set).

        Without ``num_buckets`` there is no sketch (None), unless quartiles are needed:
        then 0.01 (TFT's default quantile error) when ``epsilon`` is not set.
        """
        if self.num_buckets is None:
            if self.needs_quartiles():
                return 0.01 if self.epsilon is None else float(self.epsilon)
            return None
        if self.epsilon is not None:
            return float(self.epsilon)
        return min(1.0 / self.num_buckets, 0.01)
