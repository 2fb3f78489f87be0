"""The layer plan of list features: a list of values per row (``shape: list``, ``split``).

A list feature's raw input is ``(batch, None)``: the row's values padded on the right with
the *missing value* of its dtype (``""`` for strings, ``MISSING_INTEGER`` = -2⁶³ for
integers); ``raw_columns`` pads a ``tf.RaggedTensor`` or ``tf.SparseTensor`` (what
``tf.io.parse_example`` gives a multi-value feature) that way, and a derived list
(``split``) comes out of its ``DerivedFeature`` layer in the same form. A missing value
inside a row is skipped, as the analysis skips null list elements.

Index convention (the same for the generated module and the runtime twin):

===========  ====================================  ==========================================
kind         first layer                           indices
===========  ====================================  ==========================================
string,      StringLookup / IntegerLookup with     0 = padding (the missing value is the
integer      ``mask_token`` = the missing value    lookup's mask token), OOV from 1, tokens
                                                   from ``1 + num_oov_indices``
hashed       Hashing(``num_bins + 1``,             0 = padding, values in ``1..num_bins``
             ``mask_value`` = the missing value)   (= the scalar Hashing bin + 1)
===========  ====================================  ==========================================

so padding never collides with OOV or a real value. Then a ``ListEncoding`` layer
``<name>_list`` (:mod:`beam_prep.codegen.list_layer`) makes the output:

=========================  ===========================  =====================================
output_mode                output                       value
=========================  ===========================  =====================================
int, ``max_values: N``     int64 ``(batch, N)``         the row's first N indices, then 0s
int, no max_values         int64 RaggedTensor           the row's indices (no padding)
                           ``(batch, None)``
multi_hot / count          float32 ``(batch, depth)``   per row: 1 / the number of times for
                                                        each index ≥ 1; column ``i - 1`` for
                                                        index ``i`` (padding never counts)
=========================  ===========================  =====================================

``depth`` is ``num_oov_indices + vocabulary size`` (``num_bins`` for hashed): the columns
of a scalar feature's multi_hot output, so one vocabulary means one layout. This module
imports neither Keras nor TensorFlow.

Example:
    >>> fp = as_list(planned_tags, spec.feature("tags"))     # doctest: +SKIP
    >>> [layer.cls for layer in fp.outputs[0].layers]       # doctest: +SKIP
    ['StringLookup', 'ListEncoding']
"""

from __future__ import annotations

import dataclasses
from typing import Any

from beam_prep.codegen.plan_types import (
    EMPTY_VOCABULARY_INTEGER,
    MISSING_INTEGER,
    FeaturePlan,
    LayerPlan,
    OutputPlan,
)

LIST_LAYER_CLASS = "ListEncoding"
LIST_SUFFIX = "_list"
#: The missing value (= padding) of a list raw input, by dtype.
PADDING = {"string": "", "int64": MISSING_INTEGER}


def _args(layer: LayerPlan, **changes: Any) -> LayerPlan:
    args = dict(layer.args)
    args.update(changes)
    return dataclasses.replace(layer, args=tuple(args.items()))


def _first_layer(fp: FeaturePlan, f: Any, padding: Any) -> LayerPlan:
    """The lookup (mask = padding) or Hashing (one more bin, mask_value = padding)."""
    layer = fp.outputs[0].layers[0]
    if layer.cls == "Hashing":
        return _args(layer, num_bins=f.num_bins + 1, mask_value=padding)
    vocabulary = dict(layer.args)["vocabulary"]
    if vocabulary == [EMPTY_VOCABULARY_INTEGER]:
        # The integer sentinel is the mask here; any other never-seen value does.
        vocabulary = [EMPTY_VOCABULARY_INTEGER + 1]
    return _args(layer, vocabulary=vocabulary, mask_token=padding)


def as_list(fp: FeaturePlan, f: Any) -> FeaturePlan:
    """Turns the plan of a scalar string/integer/hashed feature into its list plan.

    Args:
        fp: The feature's scalar plan (lookup or Hashing, maybe a CategoryEncoding).
        f: The spec feature (``f.is_list()``; mask_token and default_value are null, as the
            spec validation guarantees).

    Returns:
        The plan with a ``(batch, None)`` raw input (unless derived) and a ListEncoding.
    """
    value_dtype = fp.derived.output_dtype if fp.derived is not None else fp.dtype
    padding = PADDING[value_dtype]
    first = _first_layer(fp, f, padding)
    old = fp.outputs[0]
    name = f"{f.name}{LIST_SUFFIX}"
    if f.output_mode == "int" and f.max_values is not None:
        encode = LayerPlan(LIST_LAYER_CLASS, name, (("mode", "pad"),
                                                    ("max_values", f.max_values)))
        output = OutputPlan(old.key, (first, encode), width=f.max_values)
        shape = f"int64 (batch, {f.max_values}): the first {f.max_values} indices, 0-padded"
    elif f.output_mode == "int":
        encode = LayerPlan(LIST_LAYER_CLASS, name, (("mode", "ragged"),))
        output = OutputPlan(old.key, (first, encode), width=None, ragged=True)
        shape = "a ragged int64 (batch, None)"
    else:
        depth = old.width
        encode = LayerPlan(LIST_LAYER_CLASS, name, (("mode", f.output_mode),
                                                    ("num_tokens", depth)))
        output = OutputPlan(old.key, (first, encode), dtype="float32", width=depth)
        shape = f"float32 (batch, {depth}), padding not counted"
    what = ("from the expression" if fp.derived is not None
            else f"(raw input (batch, None) padded with {padding!r})")
    summary = fp.summary
    if first.cls == "Hashing":
        summary += f" Index 0 = padding, values in 1..{f.num_bins}."
    else:
        oov = f.num_oov_indices
        summary = summary.replace(
            f"mask=None, {oov} OOV slot(s), tokens from index {oov}",
            f"index 0 = padding, {oov} OOV slot(s) from 1, tokens from index {oov + 1}")
    summary += f" A list per row {what}; output {shape}."
    return dataclasses.replace(fp, outputs=(output,), summary=summary,
                               list_input=fp.derived is None)
