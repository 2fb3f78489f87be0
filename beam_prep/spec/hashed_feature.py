"""The hashed feature kind: no analysis, Keras Hashing / HashedCrossing settings.

Example:
    >>> HashedFeature("user_id", num_bins=8).kind
    'hashed'
"""

from __future__ import annotations

import dataclasses

from beam_prep.spec.bounds import LAYER_WHY, MAX_LAYER_SIZE, check_positive_int
from beam_prep.spec.feature_base import (
    FeatureBase,
    HashedDtype,
    LookupOutputMode,
    feature_error,
)
from beam_prep.spec.lists import Shape, check_list_fields


@dataclasses.dataclass(frozen=True)
class HashedFeature(FeatureBase):
    """A hashed categorical feature: no analysis, Hashing layer settings carried through.

    Attributes:
        num_bins: Number of hash bins (required).
        salt: Optional integer salt of ``keras.layers.Hashing``.
        dtype: Input dtype, string or integer.
        output_mode: int, one_hot, multi_hot or count.
        cross: Two input columns hashed together by ``keras.layers.HashedCrossing``
            (FeatureSpace's ``crosses``; its exact semantics, so its limit of two
            columns), both of ``dtype``; instead of ``column`` / ``expr``, no ``salt``.
            An exact vocabulary of a cross is a string feature with ``expr: cross(a, b)``.
        shape: ``list`` for a list column (Parquet list, multi-value tf.Example feature,
            JSONL array); null = scalar, or list for ``expr: split(...)``
            (beam_prep.spec.lists).
        max_values: A list feature's int output padded/truncated to ``[batch, N]``; null =
            ragged.

    Example:
        >>> HashedFeature("user_id", num_bins=1024).salt is None
        True
        >>> HashedFeature("pair", num_bins=64, cross=("country", "device")).validate()
    """

    num_bins: int = 0
    salt: int | None = None
    dtype: HashedDtype = "string"
    output_mode: LookupOutputMode = "int"
    cross: tuple[str, ...] | None = None
    shape: Shape | None = None
    max_values: int | None = None
    kind: str = dataclasses.field(default="hashed", init=False)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        check_positive_int(self.name, "num_bins", self.num_bins, optional=False,
                            maximum=MAX_LAYER_SIZE, why=LAYER_WHY)
        check_list_fields(self)
        if self.cross is None:
            return
        if len(self.cross) != 2 or len(set(self.cross)) != 2 or not all(self.cross):
            raise feature_error(self.name, "cross", list(self.cross),
                        "a list of two distinct column names (keras.layers.HashedCrossing "
                        "crosses exactly two inputs; cross more columns with "
                        "expr: cross(a, b, c) on a string feature)")
        for field in ("column", "expr", "salt"):
            if getattr(self, field) is not None:
                raise feature_error(self.name, field, getattr(self, field),
                            "null when `cross` is set (HashedCrossing reads the crossed "
                            "columns and has no salt)")

    def input_columns(self) -> dict[str, str]:  # noqa: D102
        if self.cross is None:
            return super().input_columns()
        return {c: "int" if self.dtype == "integer" else "string" for c in self.cross}
