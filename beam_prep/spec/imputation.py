"""Imputation from the analysis (``impute``) and the ``<name>_missing`` indicator output.

=============  ===========================  ================================================
field          kinds                        meaning
=============  ===========================  ================================================
``impute``     numeric: ``mean``,           a missing cell (and, for numeric, NaN) becomes a
               ``median``; integer and      statistic of the *observed* values, recorded in
               string: ``most_frequent``    the manifest as ``stats.imputed_value``
``missing_     numeric, integer, string,    an extra output ``<name>_missing``: float32 1.0
indicator``    text                         where the cell was missing, else 0.0
=============  ===========================  ================================================

The issue's spelling ``default_value: mean | median | most_frequent`` is accepted on numeric
and integer features, where a string cannot be a literal default: it is rewritten to
``impute`` (:func:`impute_synonym`), so both spellings give the same canonical spec and
fingerprint. On string and text features ``default_value: mean`` stays the literal string
``"mean"`` (a string column may hold that value); ``impute`` is the one unambiguous spelling.

Numeric ``most_frequent`` is refused: the exact mode of a float column needs a count of every
distinct value (a vocabulary as large as the data, for a statistic that is rarely meaningful
on continuous values). Use ``median`` (robust), or read an integral column as ``kind:
integer`` and use ``most_frequent`` there.

Example:
    >>> impute_synonym("numeric", {"name": "x", "default_value": "mean"}, "Feature 'x'")
    {'name': 'x', 'impute': 'mean'}
    >>> indicator_name("price")
    'price_missing'
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from beam_prep.errors import SpecError
from beam_prep.spec.feature_base import feature_error

Impute = Literal["mean", "median", "most_frequent"]
IMPUTE_OPTIONS: tuple[str, ...] = get_args(Impute)
INDICATOR_SUFFIX = "_missing"

#: The strategies each kind accepts.
ALLOWED: dict[str, tuple[str, ...]] = {"numeric": ("mean", "median"),
                                       "integer": ("most_frequent",),
                                       "string": ("most_frequent",)}
#: Kinds where ``default_value: <strategy>`` is read as ``impute`` (a string is no literal).
SYNONYM_KINDS = ("numeric", "integer")


def indicator_name(name: str) -> str:
    """The output key of a feature's missing indicator."""
    return name + INDICATOR_SUFFIX


def impute_synonym(kind: str, values: dict[str, Any], where: str) -> dict[str, Any]:
    """Rewrites ``default_value: mean|median|most_frequent`` to ``impute`` (numeric, integer).

    Raises:
        SpecError: Both spellings are given.
    """
    default = values.get("default_value")
    if kind not in SYNONYM_KINDS or not isinstance(default, str):
        return values
    if default not in IMPUTE_OPTIONS:
        literal = "a number" if kind == "numeric" else "an integer"
        raise SpecError(
            f"{where}: `default_value` must be {literal}, null, or one of "
            f"{', '.join(repr(o) for o in IMPUTE_OPTIONS)} (read as `impute`). Received: "
            f"default_value={default!r}")
    if values.get("impute") is not None:
        raise SpecError(
            f"{where}: `default_value` and `impute` are both set. Received: default_value="
            f"{default!r}, impute={values['impute']!r}. Fix: keep one (`impute: {default}` is "
            "the canonical spelling of `default_value: " + default + "`).")
    out = {k: v for k, v in values.items() if k != "default_value"}
    out["impute"] = default
    return out


def canonicalize(feature: Any) -> None:
    """``__post_init__`` of a numeric or integer feature built in Python: the same rewrite."""
    values = {"default_value": feature.default_value, "impute": feature.impute}
    moved = impute_synonym(feature.kind, values, f"Feature {feature.name!r}")
    if moved is not values:
        object.__setattr__(feature, "default_value", None)
        object.__setattr__(feature, "impute", moved["impute"])


def check_imputation(feature: Any) -> None:
    """Range checks of ``impute`` and ``missing_indicator`` (types are checked already).

    Raises:
        SpecError: A strategy the kind does not support, ``impute`` with a literal
            ``default_value``, or either field on a list feature.
    """
    impute = getattr(feature, "impute", None)
    name = feature.name
    if feature.is_list():
        for field in ("impute", "missing_indicator"):
            if getattr(feature, field, None) not in (None, False):
                raise feature_error(name, field, getattr(feature, field),
                                    "null for a list feature (a missing list is an empty row, "
                                    "not a missing value)")
    if getattr(feature, "per_key", None) is not None:
        for field in ("impute", "missing_indicator"):
            if getattr(feature, field, None) not in (None, False):
                raise feature_error(name, field, getattr(feature, field),
                                    "null with per_key (not supported together, as "
                                    "default_value; fill the value with `expr: coalesce(x, "
                                    "0.0)` instead)")
    if impute is None:
        return
    if feature.default_value is not None:
        raise feature_error(name, "impute", impute,
                            f"null when `default_value` is set (default_value="
                            f"{feature.default_value!r}): a missing cell gets one replacement, "
                            "a literal or a statistic; drop one of the two")
    if feature.kind == "numeric" and impute == "most_frequent":
        raise feature_error(name, "impute", impute,
                            "'mean' or 'median' for a numeric feature (the exact mode of a "
                            "float column needs a count of every distinct value, as large as "
                            "the data; use median, or read an integral column as kind: "
                            "integer and use most_frequent there)")
    if impute == "most_frequent" and getattr(feature, "labels", None) is not None:
        raise feature_error(name, "impute", impute,
                            f"null with labels={feature.labels!r} (a label-aware vocabulary is "
                            "ranked by mutual information, so its top entry is not the most "
                            "frequent value); use a literal default_value")
    allowed = ALLOWED[feature.kind]
    if impute not in allowed:
        raise feature_error(name, "impute", impute,
                            " or ".join(repr(a) for a in allowed)
                            + f" for {feature.kind} features (a mean or median of category "
                            "ids is not a category; most_frequent is the top entry of the "
                            "vocabulary; `default_value: <strategy>` is read as `impute`)")
