"""``per_key:`` of a numeric feature: the key its per-key statistics are grouped by.

Two forms, never ambiguous (a bare string is always a column name, whatever it holds)::

    per_key: store_id                       # the column `store_id`, read as text
    per_key: {expr: "str(store_id)"}        # an expression over columns (docs/expressions.md)

The key is text: a column key is read as a string column (a CSV or JSON column of digits
too); an expression must give a string (``str(x)`` turns an int64 column into its decimal
text, and reads that column as int64). A missing key (null, or ``""``) is no key: the row
counts in the global statistics only, and the layers scale it with the global ones.

Per-key statistics apply to the ``z_score`` and ``min_max`` scalings (TF Transform's
``scale_to_z_score_per_key`` and ``scale_by_min_max_per_key``); ``per_key_count: true`` adds
the key's count as an output (``count_per_key``), and ``num_buckets`` makes the
``<name>_bucket`` output per key too (TF Transform's ``bucketize_per_key``: the key's own
quantile boundaries; the global ones for an unknown or missing key, where TF Transform
gives -1). With ``scaling: none`` the per-key buckets stand alone (TF Transform's
``bucketize_per_key`` without a scaling): ``<name>`` is the raw value, as for a numeric
feature without ``per_key``. Refused combinations (one-line SpecError naming the fix):
``scaling: none`` without ``num_buckets`` (nothing would use the statistics), the other
scalings, ``default_value`` and list features.

Example:
    >>> from beam_prep.spec import NumericFeature
    >>> key_columns(NumericFeature("price", per_key="store"))
    {'store': 'string'}
    >>> key_columns(NumericFeature("price", per_key=PerKeyExpr("str(store_id)")))
    {'store_id': 'int'}
"""

from __future__ import annotations

import dataclasses
from typing import Any

from beam_prep.errors import SpecError


@dataclasses.dataclass(frozen=True)
class PerKeyExpr:
    """``per_key: {expr: "..."}``: the key is computed by an expression.

    Attributes:
        expr: Expression over input columns giving a string (docs/expressions.md).
    """

    expr: str


def per_key_dict(per_key: Any) -> Any:
    """The canonical (JSON) form of a ``per_key`` value: the column name or ``{"expr": ...}``."""
    if isinstance(per_key, PerKeyExpr):
        return {"expr": per_key.expr}
    return per_key


def key_expression(feature: Any) -> Any:
    """The typed expression tree of an expression key, else None.

    Raises:
        SpecError: The expression does not parse, type-check or give a string.
    """
    per_key = feature.per_key
    if not isinstance(per_key, PerKeyExpr):
        return None
    from beam_prep.spec.derived import derived_expression

    try:
        tree = derived_expression(feature.name, "string", per_key.expr)
    except SpecError as e:
        raise SpecError(f"`per_key.expr` of feature {feature.name!r}: {e}") from None
    if tree.type != "string":
        raise SpecError(
            f"Feature {feature.name!r}: `per_key.expr` {per_key.expr!r} gives a "
            f"{tree.type} value, but a key is one string per row. Fix: an expression giving "
            "a string, e.g. concat(a, b) or str(x).")
    return tree


def key_columns(feature: Any) -> dict[str, str]:
    """Input column -> the type it is read as (``string``/``int``/``float``) for the key."""
    per_key = feature.per_key
    if per_key is None:
        return {}
    tree = key_expression(feature)
    if tree is None:
        return {per_key: "string"}
    from beam_prep.spec.derived import input_types

    return dict(input_types(tree))


def _error(feature: Any, value: Any, allowed: str) -> SpecError:
    from beam_prep.spec.feature_base import feature_error

    return feature_error(feature.name, "per_key", per_key_dict(value), allowed)


def check_per_key(feature: Any) -> None:
    """Refuses an empty key, a key that is the value's own column and unsupported combinations.

    Raises:
        SpecError: One line naming the feature, ``per_key``, the value and the fix.
    """
    per_key = feature.per_key
    if isinstance(per_key, str) and not per_key:
        raise _error(feature, per_key, "a column name, {expr: \"...\"} or null")
    keys = key_columns(feature)
    if feature.scaling not in ("z_score", "min_max") and not (
            feature.scaling == "none" and feature.num_buckets is not None):
        also = (", or none for the per-key buckets alone; for global buckets only, drop "
                "per_key" if feature.num_buckets is not None
                else ", and by scaling: none with num_buckets (per-key buckets); else drop "
                "per_key")
        raise _error(feature, per_key, f"null with scaling={feature.scaling!r} (per-key "
                     f"statistics are used by scaling: z_score or min_max{also})")
    if feature.default_value is not None:
        raise _error(feature, per_key, "null with default_value (not supported together; "
                     "fill the value with `expr: coalesce(x, 0.0)` instead)")
    if getattr(feature, "shape", None) is not None or getattr(feature, "max_values", None):
        raise _error(feature, per_key, "null for a list feature (one value per row only)")
    value_columns = {c for c in _value_columns(feature)}
    clash = sorted(c for c in keys if c in value_columns)
    if clash:
        raise _error(feature, per_key, f"a column other than the value's own {clash[0]!r} "
                     "(a key is text, the value a number)")


def _value_columns(feature: Any) -> list[str]:
    tree = feature.expression()
    if tree is None:
        return [feature.source_column]
    from beam_prep.spec.derived import input_types

    return list(input_types(tree))
