"""The plan of derived features (``expr:``) and of the raw inputs of the layers.

A plain feature has one raw input, named like the feature, reading its column. A derived
feature has none of its own: it reads one raw input per input column of its expression,
named like the column (deduplicated: two derived features reading ``price`` share the raw
input ``price``, and so does a plain feature called ``price`` that reads column
``price`` with the same dtype). Its value is computed from those raw inputs by a small
named function (``derive_<feature>``, rendered by :func:`beam_prep.expr.tf.render` in the
generated module, built by :func:`beam_prep.expr.tf.evaluate` in the runtime twin) wrapped
in a ``DerivedFeature`` layer ``<feature>_expr``, then cast to the feature's layer dtype,
before the feature's layers.

Raw input dtypes of expression columns: ``float`` -> float32 (as every numeric raw input),
``int`` -> int64, ``string`` -> string. A list-valued expression (``split``) reads scalar
columns and gives a ``(batch, None)`` string value padded with ``""``, the form a list raw
input has (beam_prep.codegen.list_plan). A hashed cross (``cross: [a, b]``) reads the raw
inputs ``a`` and ``b`` and feeds their tuple to ``keras.layers.HashedCrossing``.
:func:`check_names` refuses input and layer names that collide. This module imports neither
Keras nor TensorFlow.

Example:
    >>> from beam_prep.spec import NumericFeature
    >>> plan = derived_plan(NumericFeature("ratio", expr="price / (qty + 1)"), "float32")
    >>> plan.function, plan.columns
    ('derive_ratio', ('price', 'qty'))
"""

from __future__ import annotations

import dataclasses
from typing import Any

from beam_prep.errors import SpecError
from beam_prep.spec.derived import input_types

#: Raw input dtype of an expression input column, by its expression type.
RAW_DTYPES = {"float": "float32", "int": "int64", "string": "string"}
DERIVED_LAYER_CLASS = "DerivedFeature"
DERIVED_SUFFIX = "_expr"


@dataclasses.dataclass(frozen=True)
class DerivedPlan:
    """How a derived feature's value is computed from raw inputs.

    Attributes:
        expr: The expression text of the spec.
        tree: Its typed tree (``beam_prep.expr``).
        function: Name of the generated function, ``derive_<feature>``.
        columns: The raw inputs it reads (expression input columns, first-use order).
        output_dtype: The dtype the feature's layers take (the result is cast to it).
        layer: Name of the ``DerivedFeature`` layer, ``<feature>_expr``.
        list_output: The value is a list per row: ``(batch, None)`` padded with ``""``.
    """

    expr: str
    tree: Any
    function: str
    columns: tuple[str, ...]
    output_dtype: str
    layer: str
    list_output: bool = False


@dataclasses.dataclass(frozen=True)
class RawInput:
    """One raw input of the preprocessor, shape ``(batch, 1)`` or, for a list, ``(batch, None)``.

    Attributes:
        name: Input name (a feature's name, or an expression input column's).
        dtype: ``string``, ``int64`` or ``float32``.
        column: Data column ``raw_columns`` reads it from.
        is_list: A list column (``shape: list``): ``(batch, None)``, padded with the missing
            value of ``dtype`` (``""`` or ``MISSING_INTEGER``).
    """

    name: str
    dtype: str
    column: str
    is_list: bool = False


def derived_plan(feature: Any, output_dtype: str) -> DerivedPlan:
    """The derived plan of a feature with ``expr`` (its layers take ``output_dtype``).

    A list-valued expression (``split``) gives a ``(batch, None)`` value padded with ``""``
    (:attr:`DerivedPlan.list_output`), the form of a list raw input.
    """
    tree = feature.expression()
    return DerivedPlan(feature.expr, tree, f"derive_{feature.name}",
                       tuple(input_types(tree)), output_dtype, feature.name + DERIVED_SUFFIX,
                       tree.type == "list_string")


def crossing_layer(feature: Any) -> tuple[str, str, tuple]:
    """``(class, name, args)`` of a hashed cross: ``keras.layers.HashedCrossing`` in int mode
    (other output modes add a CategoryEncoding, as for Hashing)."""
    return ("HashedCrossing", f"{feature.name}_crossing",
            (("num_bins", feature.num_bins), ("output_mode", "int")))


def raw_inputs_of(features: Any) -> tuple[RawInput, ...]:
    """The deduplicated raw inputs of planned features (``FeaturePlan`` s), in first use.

    Raises:
        SpecError: Two raw inputs of one name read different columns or dtypes.
    """
    out: dict[str, RawInput] = {}
    owner: dict[str, str] = {}
    for fp in features:
        if fp.crossed:
            wanted = [RawInput(c, fp.dtype, c) for c in fp.crossed]
        elif fp.derived is None:
            wanted = [RawInput(fp.name, fp.dtype, fp.column, fp.list_input)]
        else:
            types = input_types(fp.derived.tree)
            wanted = [RawInput(c, RAW_DTYPES[types[c]], c) for c in fp.derived.columns]
        for raw in wanted:
            if raw.name in out and out[raw.name] != raw:
                old = out[raw.name]
                raise SpecError(
                    f"Feature {fp.name!r} needs a raw input {raw.name!r} ({raw.dtype}, column "
                    f"{raw.column!r}), but feature {owner[raw.name]!r} already has a raw input "
                    f"of that name ({old.dtype}, column {old.column!r}). Keras inputs need "
                    "unique names. Fix: rename the feature, or read the column with one type.")
            out.setdefault(raw.name, raw)
            owner.setdefault(raw.name, fp.name)
    return tuple(out.values())


def check_names(features: Any) -> None:
    """Refuses two planned features (``FeaturePlan`` s) whose input or layer names collide.

    Raises:
        SpecError: Naming both owners and the fix.
    """
    owner: dict[str, str] = {}
    for fp in features:
        names = ([("layer", fp.derived.layer)] if fp.derived is not None else []
                 if fp.crossed else [("input", fp.name)])
        names += [("output", o.key) for o in fp.outputs if o.key != fp.name]
        names += [("layer", layer.name) for o in fp.outputs for layer in o.layers]
        names += [("layer", fp.fill.name)] if fp.fill is not None else []
        for what, n in names:
            if n in owner:
                raise SpecError(
                    f"Feature {fp.name!r}: its {what} name {n!r} collides with {owner[n]}. "
                    "Keras needs unique input and layer names. Fix: rename one of the features."
                )
            owner[n] = f"the {what} of feature {fp.name!r}"
