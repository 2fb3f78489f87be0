"""List features: which features take a list of values per row, and their field checks.

A string, integer or hashed feature is a *list feature* when it reads a list-valued input:
a Parquet list column, a multi-value tf.Example feature or a JSONL array (declared with
``shape: list``), or an expression whose result is a list (``expr: split(s, '|')``, a list
without any declaration). ``shape`` is optional: null means "scalar for a column, list for a
list-valued expression"; writing it explicitly must agree with the expression.

=================  ==========================================================================
field              meaning for a list feature
=================  ==========================================================================
``shape: list``    the input column holds a list per row (the analysis counts every value)
``max_values: N``  ``output_mode: int`` gives a dense ``[batch, N]`` output: the row's first N
                   values, padded with index 0; null = a ragged ``[batch, None]`` output
``output_mode``    ``int`` (above), ``multi_hot`` (1 for each value present in the row) or
                   ``count`` (how often); ``one_hot`` is refused (a row has many values)
=================  ==========================================================================

Not allowed on a list feature: ``mask_token`` (index 0 is the padding, reserved
automatically), ``default_value`` (a missing list is an empty row) and ``cross``.

Example:
    >>> from beam_prep.spec import StringFeature
    >>> is_list(StringFeature("tags", shape="list", max_values=5))
    True
    >>> is_list(StringFeature("tags", expr="split(tag_text, '|')"))
    True
    >>> StringFeature("tags", max_values=5).validate()
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: Feature 'tags': `max_values` must be null unless the feature \
is a list (add shape: list for a list column, or use a list expression such as split(s, \
'|')). Received: max_values=5
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from beam_prep.config import field_error, shown
from beam_prep.errors import SpecError

Shape = Literal["scalar", "list"]
SHAPE_OPTIONS: tuple[str, ...] = get_args(Shape)
LIST_KINDS: tuple[str, ...] = ("string", "integer", "hashed")
_MAX_VALUES = 2**31 - 1  # the padded [batch, N] output: N is an int32 dimension


def _fail(feature: Any, field: str, value: Any, allowed: str) -> SpecError:
    return field_error(f"Feature {shown(feature.name, 80)}", field, value, allowed)


def _expression_is_list(feature: Any) -> bool:
    tree = feature.expression()
    return tree is not None and tree.type == "list_string"


def is_list(feature: Any) -> bool:
    """Whether ``feature`` takes a list of values per row (see the module docstring)."""
    if feature.kind not in LIST_KINDS:
        return False
    return getattr(feature, "shape", None) == "list" or _expression_is_list(feature)


def check_list_fields(feature: Any) -> None:
    """Checks ``shape`` and ``max_values`` and what a list feature cannot have.

    Raises:
        SpecError: Naming the field, its value and the fix.
    """
    shape, max_values = feature.shape, feature.max_values
    if max_values is not None and (isinstance(max_values, bool) or not isinstance(max_values, int)
                                   or not 1 <= max_values <= _MAX_VALUES):
        big = isinstance(max_values, int) and max_values > _MAX_VALUES
        raise _fail(feature, "max_values", max_values, "a positive integer or null" if not big
                    else f"a positive integer no larger than {_MAX_VALUES:,} or null (the "
                    "padded output's length is an int32 dimension)")
    listy = _expression_is_list(feature)
    if shape == "scalar" and listy:
        raise _fail(feature, "shape", shape,
                    f"'list' or null: `expr` {feature.expr!r} gives a list per row")
    if shape == "list" and feature.expr is not None and not listy:
        raise _fail(feature, "shape", shape,
                    f"'scalar' or null: `expr` {feature.expr!r} gives one value per row (a list "
                    "expression is split(s, 'sep'))")
    if not is_list(feature):
        if max_values is not None:
            raise _fail(feature, "max_values", max_values,
                        "null unless the feature is a list (add shape: list for a list column, "
                        "or use a list expression such as split(s, '|'))")
        return
    if feature.output_mode == "one_hot":
        raise _fail(feature, "output_mode", "one_hot",
                    "'int', 'multi_hot' or 'count' for a list feature (one_hot encodes one "
                    "value per row; multi_hot marks every value of the row)")
    if max_values is not None and feature.output_mode != "int":
        raise _fail(feature, "max_values", max_values,
                    f"null when output_mode={feature.output_mode!r} (max_values pads the int "
                    "output; multi_hot and count already give one fixed-size row)")
    reserved = {"mask_token": "index 0 is the padding of a list feature and is reserved "
                              "automatically: drop mask_token",
                "default_value": "a missing list is an empty row: drop default_value (or fill "
                                 "missing lists before the analysis)",
                "cross": "a hashed cross reads scalar columns: drop shape: list"}
    for field, why in reserved.items():
        value = getattr(feature, field, None)
        if value is not None:
            raise _fail(feature, field, value, f"null for a list feature ({why})")
