"""Instance weights of a feature (``weights`` / ``weights_expr``): checks and what they read.

A weighted feature counts each row with its weight (TF Transform's ``weights=`` argument of
``tft.vocabulary``, ``tft.mean``/``tft.var`` style moments and ``tft.quantiles``):

* ``weights: <column>`` names an input column read as float64;
* ``weights_expr: <expression>`` computes the weight from input columns
  (docs/expressions.md), e.g. ``weights_expr: "clip(w, 0, 10)"``.

The two fields never mean the same thing (a column name is never parsed as an expression),
so ``weights: a + b`` is the column literally called ``a + b``. Only string, integer, text
and numeric features take weights; a text feature in ``tf_idf`` mode does not (document
frequencies are counts of documents, not weights).

Example:
    >>> from beam_prep.spec import StringFeature
    >>> weight_columns(StringFeature("city", weights="w"))
    {'w': 'float'}
    >>> weight_columns(StringFeature("city", weights_expr="w * 2"))
    {'w': 'float'}
    >>> is_weighted(StringFeature("city"))
    False
"""

from __future__ import annotations

import math
from typing import Any

from beam_prep.config import field_error, shown
from beam_prep.errors import SpecError

WEIGHTED_KINDS = ("string", "integer", "text", "numeric")


def feature_error(feature: str, field: str, value: Any, allowed: str) -> SpecError:
    return field_error(f"Feature {shown(feature, 80)}", field, value, allowed)


def is_weighted(feature: Any) -> bool:
    """Whether the feature has instance weights (``weights`` or ``weights_expr``)."""
    return (getattr(feature, "weights", None) is not None
            or getattr(feature, "weights_expr", None) is not None)


def weight_expression(feature: Any) -> Any:
    """The typed expression tree of ``weights_expr`` (a float), else None."""
    text = getattr(feature, "weights_expr", None)
    if text is None:
        return None
    from beam_prep.spec.derived import derived_expression

    try:
        tree = derived_expression(feature.name, "numeric", text)
    except SpecError as e:
        raise feature_error(feature.name, "weights_expr", text,
                            f"a numeric expression over input columns ({e})") from None
    if tree.type not in ("float", "int"):
        raise feature_error(feature.name, "weights_expr", text,
                            f"an expression giving one number per row (it gives {tree.type})")
    return tree


def weight_columns(feature: Any) -> dict[str, str]:
    """Input columns the weights read -> their type (``float``, or as the expression needs).

    Empty for an unweighted feature.
    """
    if getattr(feature, "weights", None) is not None:
        return {feature.weights: "float"}
    tree = weight_expression(feature)
    if tree is None:
        return {}
    from beam_prep.spec.derived import input_types

    return dict(input_types(tree))


def check_weights(feature: Any) -> None:
    """SpecError naming the field, the value and the fix for a bad weights setting.

    Checks: not both fields; a non-empty column name; a feature kind that takes weights; no
    ``tf_idf`` text; no ``labels`` or ``per_key`` (their own analyses, not weighted yet);
    ``min_count`` a finite number >= 0 (the weighted count threshold).
    """
    name, column, expr = feature.name, feature.weights, feature.weights_expr
    if column is not None and expr is not None:
        raise feature_error(name, "weights_expr", expr,
                            "null when `weights` is set (the weight is one column or one "
                            "expression: drop `weights`, or `weights_expr`)")
    if column is not None and (not isinstance(column, str) or not column):
        raise feature_error(name, "weights", column, "a non-empty column name or null")
    if expr is not None and (not isinstance(expr, str) or not expr.strip()):
        raise feature_error(name, "weights_expr", expr, "a non-empty expression or null")
    if not is_weighted(feature):
        return
    field = "weights" if column is not None else "weights_expr"
    value = column if column is not None else expr
    if feature.kind not in WEIGHTED_KINDS:
        raise feature_error(name, field, value,
                            f"null for a {feature.kind} feature (only "
                            f"{', '.join(WEIGHTED_KINDS)} features are analysed with weights)")
    if feature.kind == "text" and feature.output_mode == "tf_idf":
        raise feature_error(name, field, value,
                            "null with output_mode='tf_idf' (document frequencies count "
                            "documents, not weights): drop the weights or use another "
                            "output_mode")
    if getattr(feature, "per_key", None) is not None:
        raise feature_error(name, field, value,
                            "null when `per_key` is set (weighted per-key statistics are not "
                            "supported yet): drop `weights` or `per_key`")
    if getattr(feature, "labels", None) is not None:
        raise feature_error(name, field, value,
                            "null when `labels` is set (weighted label-aware vocabularies are "
                            "not supported yet): drop `weights` or `labels`")
    if feature.kind in ("string", "integer"):
        m = feature.min_count
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not (
                math.isfinite(m) and m >= 0):
            raise feature_error(name, "min_count", m,
                                "a finite number >= 0 when weights are set (the weighted "
                                "count a token needs; 0 keeps every token)")
    weight_expression(feature)
