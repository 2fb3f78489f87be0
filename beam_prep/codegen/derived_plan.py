"""The plan of derived features (``expr:``) and of the raw inputs of the layers.

Raw inputs are keyed by **data column**, one per column however many features read it
(``price`` read by a numeric feature ``price_01`` with ``column: price`` and by
``expr: log1p(price)`` is one raw input ``price``). Its dtype is the type the analysis read
the column as (``beam_prep.analyzers.split_fn.required_columns``): float64, int64 or string.
A plain feature's value is its column's raw input, cast to the dtype its layers take (a
numeric feature's float64 column -> float32). A derived feature's value is computed from
the raw inputs of its expression's columns by a small named function
(``derive_<feature>``, rendered by :func:`beam_prep.expr.tf.render` in the generated
module, which the runtime twin runs too) wrapped in a
``DerivedFeature`` layer ``<feature>_expr``; the expression runs on the float64 / int64
values, as the analysis does, and only its result is cast to the feature's layer dtype.

Raw input dtypes of expression columns: ``float`` -> float64, ``int`` -> int64, ``string``
-> string (the types of the analysis' reader). A list-valued expression (``split``) reads scalar
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
from beam_prep.input_names import input_names
from beam_prep.spec.derived import input_types
from beam_prep.spec.layer_names import (
    OwnedName,
    check_unique,
    input_owned,
    spec_names,
    warn_unpredicted,
)

#: Raw input dtype of an expression input column, by its expression type (the Arrow type
#: the analysis reads it as: ``beam_prep.spec.derived.ARROW_TYPES``).
RAW_DTYPES = {"float": "float64", "int": "int64", "string": "string"}
#: Raw input dtype of a plain feature's column, by the dtype its layers take (a numeric
#: column is read as float64 by the analysis and cast to float32 inside the model).
COLUMN_DTYPES = {"float32": "float64", "int64": "int64", "string": "string"}
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
        name: Input name: the data column's name (one raw input per column).
        dtype: ``string``, ``int64`` or ``float64``: the type the analysis read it as.
        column: Data column ``raw_columns`` reads it from (the same as ``name``).
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
    """The raw inputs of planned features (``FeaturePlan`` s): one per data column, in first use.

    Raises:
        SpecError: Two features read one column with different dtypes or shapes, or two
            columns get one input name (``beam_prep.input_names``).
    """
    out: dict[str, RawInput] = {}
    owner: dict[str, str] = {}
    for fp in features:
        for raw in feature_raw_inputs(fp):
            if raw.name in out and out[raw.name] != raw:
                old = out[raw.name]
                shape = {True: "a list", False: "a scalar"}
                raise SpecError(
                    f"Feature {fp.name!r} reads column {raw.name!r} as {shape[raw.is_list]} "
                    f"{raw.dtype}, but feature {owner[raw.name]!r} reads it as "
                    f"{shape[old.is_list]} {old.dtype}. The model has one raw input per data "
                    "column. Fix: read the column with one type (e.g. convert it in an "
                    "`expr`), or write it upstream as two columns.")
            out.setdefault(raw.name, raw)
            owner.setdefault(raw.name, fp.name)
    input_names(out)  # refuses two columns that get one keras.Input name
    return tuple(out.values())


def feature_raw_inputs(fp: Any) -> list[RawInput]:
    """The raw inputs one planned feature reads (its column, its cross or expression columns)."""
    if fp.crossed:
        return [RawInput(c, fp.dtype, c) for c in fp.crossed]
    keyed = getattr(fp, "keyed", None)
    key: list[RawInput] = []
    if keyed is not None and keyed.derived is None:
        key = [RawInput(keyed.column, "string", keyed.column)]
    elif keyed is not None:
        types = input_types(keyed.derived.tree)
        key = [RawInput(c, RAW_DTYPES[types[c]], c) for c in keyed.derived.columns]
    if fp.derived is None:
        return [RawInput(fp.column, COLUMN_DTYPES[fp.dtype], fp.column, fp.list_input)] + key
    types = input_types(fp.derived.tree)
    return [RawInput(c, RAW_DTYPES[types[c]], c) for c in fp.derived.columns] + key


def check_names(features: Any, spec_features: Any = ()) -> None:
    """Refuses two planned features (``FeaturePlan`` s) whose input or layer names collide.

    The same check (:func:`beam_prep.spec.layer_names.check_unique`) as at spec load, on the
    names the plan really has: the raw inputs (data columns, shared by the features reading
    them) and the layers of the ``all``/``data`` model; the encoded outputs (the inputs of the
    ``model`` stage) and the layers. A planned name that ``spec_names`` of the spec feature
    (``spec_features``, in the same order) did not predict gets an
    :class:`~beam_prep.spec.layer_names.UnpredictedNameWarning` (an error in the tests): spec
    load could not have refused its collisions.

    Raises:
        SpecError: Naming both owners and the fix.
    """
    owned = [(fp.name, planned_names(fp)) for fp in features]
    for (name, names), f in zip(owned, spec_features):
        warn_unpredicted(name, names, spec_names(f))
    check_unique(owned)


def planned_names(fp: Any) -> list[OwnedName]:
    """The inputs, outputs and layers of one planned feature (see ``spec_names``)."""
    names = [input_owned(r.name) for r in feature_raw_inputs(fp)]
    names += [OwnedName(o.key, "output", "output", primary=o.key == fp.name)
              for o in fp.outputs]
    layers = [fp.derived.layer] if fp.derived is not None else []
    keyed = getattr(fp, "keyed", None)
    if keyed is not None and keyed.derived is not None:
        layers.append(keyed.derived.layer)
    layers += [layer.name for o in fp.outputs for layer in o.layers]
    layers += [fp.fill.name] if fp.fill is not None else []
    return names + [OwnedName(n, "layer", "layer") for n in dict.fromkeys(layers)]
