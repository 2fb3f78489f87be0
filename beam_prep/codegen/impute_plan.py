"""The plan of ``impute`` (a FillMissing with the analysed value) and ``missing_indicator``.

=====================  ======================================================================
spec                   planned
=====================  ======================================================================
``impute: mean`` ...   ``FillMissing`` ``<name>_fill_missing`` with ``default_value`` = the
                       manifest's ``stats.imputed_value`` (as for a literal ``default_value``);
                       no layer when it is null (no observed value in the analysed data)
``missing_indicator``  output ``<name>_missing``: ``MissingIndicator``
                       ``<name>_missing_indicator``, float32 ``(batch, 1)``, stage ``data``,
                       applied to the value *before* FillMissing (``OutputPlan.before_fill``)
=====================  ======================================================================

"Missing" is what FillMissing replaces: ``""`` (string, text), NaN (float32; a NaN in the
data is indistinguishable from a missing cell there) and ``MISSING_INTEGER`` (int64).
Imports neither Keras nor TensorFlow.

Example:
    >>> from beam_prep.spec import NumericFeature
    >>> fill_value(NumericFeature("x", impute="mean"), {"imputed_value": 2.5})
    (2.5, "impute='mean' (2.5, from the analysis)")
    >>> indicator_output(NumericFeature("x", missing_indicator=True)).key
    'x_missing'
"""

from __future__ import annotations

from typing import Any

from beam_prep.codegen.plan_types import INDICATOR_CLASS, LayerPlan, OutputPlan
from beam_prep.spec.imputation import indicator_name

_TYPES = {"numeric": float, "integer": int, "string": str}


def fill_value(f: Any, stats: dict[str, Any]) -> tuple[Any, str] | None:
    """``(value, how it is described)`` replacing a missing input, or None (no FillMissing).

    A literal ``default_value`` first; else the analysed ``imputed_value`` of ``impute``.
    """
    default = getattr(f, "default_value", None)
    if default is not None:
        return default, f"default_value={default!r}"
    impute = getattr(f, "impute", None)
    value = stats.get("imputed_value") if impute is not None else None
    if value is None:
        return None
    value = _TYPES[f.kind](value)
    return value, f"impute={impute!r} ({value!r}, from the analysis)"


def no_value_note(f: Any, stats: dict[str, Any]) -> str:
    """The summary sentence of an ``impute`` without a value ('' when not the case)."""
    if getattr(f, "impute", None) is None or stats.get("imputed_value") is not None:
        return ""
    return (f" impute={f.impute!r} has no value (no observed value in the analysed data): "
            "missing inputs are not replaced.")


def indicator_output(f: Any) -> OutputPlan:
    """The ``<name>_missing`` output: 1.0 where the value is missing, else 0.0."""
    layer = LayerPlan(INDICATOR_CLASS, f"{f.name}_missing_indicator", ())
    return OutputPlan(indicator_name(f.name), (layer,), stage="data", dtype="float32",
                      before_fill=True)
