"""Derived-feature expressions: ``expr:`` text -> a whitelisted tree -> Arrow or TensorFlow.

* :func:`parse` (``beam_prep.expr.parse``): text -> untyped tree, via ``ast``, never ``eval``.
* :func:`check` (``beam_prep.expr.types``): types the tree against the input columns.
* ``beam_prep.expr.arrow.evaluate``: the analysis side, vectorised ``pyarrow.compute``.
* ``beam_prep.expr.tf``: the layer side (TensorFlow code text and an evaluator); the only
  module of this package that imports TensorFlow, so importing this package does not.

The function table and the missing-value rules are in docs/expressions.md.

Example:
    >>> tree = check(parse("lower(strip(city))"), {"city": "string"}, feature="city_clean")
    >>> tree.type
    'string'
"""

from __future__ import annotations

from beam_prep.expr.nodes import MISSING_INTEGER, Call, Column, Literal, Node, ValueType
from beam_prep.expr.parse import FUNCTIONS, parse
from beam_prep.expr.types import check

__all__ = ["FUNCTIONS", "MISSING_INTEGER", "Call", "Column", "Literal", "Node", "ValueType",
           "check", "parse"]
