"""Type checking of an expression tree against the input columns' types.

:func:`check` returns the same tree with every node's ``type`` set, or raises a
:class:`~beam_prep.errors.SpecError` naming the feature, the expression, the offending call
and the fix. The rules (see docs/expressions.md):

* Arithmetic (``+ - * /``, unary ``-``) and the numeric functions take ``int`` or ``float``
  and always return ``float`` (float64): integers are converted first.
* ``lower``, ``upper``, ``strip`` take and return ``string``; ``concat`` takes strings;
  ``cross`` takes strings or ints and returns ``string``; ``split(s, 'sep')`` takes a
  string and a non-empty string literal and returns ``list_string``.
* ``coalesce(x, d)``: both numeric (``int`` only if both are ``int``) or both ``string``.
* ``float(x)``: number -> ``float``; ``str(x)``: ``int`` -> ``string``.
* Every call reads at least one column: constant sub-expressions (``log(2)``) are refused;
  write the number instead. ``list_string`` columns can only be used as a whole.

Example:
    >>> from beam_prep.expr.parse import parse
    >>> check(parse("log1p(qty)"), {"qty": "int"}).type
    'float'
"""

from __future__ import annotations

from collections.abc import Mapping

from beam_prep.errors import SpecError
from beam_prep.expr.nodes import VALUE_TYPES, Call, Column, Literal, Node, ValueType

NUMERIC_FUNCTIONS = frozenset({"add", "subtract", "multiply", "divide", "negate", "log1p",
                               "log", "exp", "sqrt", "abs", "floor", "clip", "minimum",
                               "maximum"})
STRING_FUNCTIONS = frozenset({"lower", "upper", "strip", "concat"})
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "negate": "unary -"}


def check(tree: Node, column_types: Mapping[str, ValueType], *, feature: str | None = None,
          expr: str | None = None) -> Node:
    """Types a parsed tree; the result is what the evaluators take.

    Args:
        tree: An untyped tree from ``beam_prep.expr.parse.parse``.
        column_types: Input column name -> ``"float"``, ``"int"``, ``"string"`` or
            ``"list_string"``.
        feature: The feature name, for messages.
        expr: The expression text, for messages.

    Returns:
        The tree with every ``type`` set.

    Raises:
        SpecError: An unknown column, a wrong argument type, a constant sub-expression, or
            an expression that reads no column.

    Example:
        >>> from beam_prep.expr.parse import parse
        >>> check(parse("cross(country, year)"), {"country": "string", "year": "int"}).type
        'string'
    """
    for name, t in column_types.items():
        if t not in VALUE_TYPES:
            raise SpecError(f"Column type must be one of {VALUE_TYPES}. Received: "
                            f"{name}={t!r}")
    checker = _Checker(column_types, feature, expr)
    typed = checker.visit(tree)
    if isinstance(typed, Literal):
        raise checker.error("it reads no column",
                            "A derived feature is computed from input columns; use a plain "
                            "feature with default_value for a constant.")
    return typed


class _Checker:
    def __init__(self, column_types: Mapping[str, ValueType], feature: str | None,
                 expr: str | None) -> None:
        self.column_types = column_types
        self.feature = feature
        self.expr = expr

    def error(self, what: str, fix: str) -> SpecError:
        where = f"feature '{self.feature}': " if self.feature else ""
        text = f"`expr` {self.expr!r}" if self.expr else "the expression"
        return SpecError(f"{where}{text}: {what}. {fix}")

    def visit(self, node: Node) -> Node:
        if isinstance(node, Column):
            if node.name not in self.column_types:
                known = ", ".join(sorted(self.column_types)) or "(none)"
                raise self.error(f"unknown column `{node.name}`",
                                 f"Use one of the input columns: {known}.")
            return Column(node.name, self.column_types[node.name])
        if isinstance(node, Literal):
            t: ValueType = ("string" if isinstance(node.value, str)
                            else "int" if isinstance(node.value, int) else "float")
            return Literal(node.value, t)
        args = tuple(self.visit(a) for a in node.args)
        if all(isinstance(a, Literal) for a in args):
            raise self.error(f"{self.show(node.fn)} is applied to constants only",
                             "Compute the constant yourself and write the number or string.")
        return Call(node.fn, args, self.result(node.fn, args))

    def show(self, fn: str) -> str:
        return f"operator {_OPERATORS[fn]}" if fn in _OPERATORS else f"{fn}()"

    def wrong(self, fn: str, i: int, arg: Node, wanted: str, fix: str) -> SpecError:
        what = f"`{arg.name}`" if isinstance(arg, Column) else f"argument {i + 1}"
        return self.error(f"{self.show(fn)} needs {wanted}, but {what} is {arg.type}", fix)

    def result(self, fn: str, args: tuple[Node, ...]) -> ValueType:
        types = [a.type for a in args]
        if fn in NUMERIC_FUNCTIONS or fn == "float":
            for i, (a, t) in enumerate(zip(args, types)):
                if t not in ("int", "float"):
                    raise self.wrong(fn, i, a, "numbers",
                                     "Use it on numeric columns; numbers in text columns are "
                                     "not converted (declare the column as numeric).")
            return "float"
        if fn in STRING_FUNCTIONS:
            for i, (a, t) in enumerate(zip(args, types)):
                if t != "string":
                    fix = ("Convert integers with str(x) first." if t == "int" else
                           "Use it on string columns or string results.")
                    raise self.wrong(fn, i, a, "strings", fix)
            return "string"
        if fn == "cross":
            for i, (a, t) in enumerate(zip(args, types)):
                if t not in ("string", "int") or isinstance(a, Literal):
                    raise self.wrong(fn, i, a, "string or integer columns",
                                     "Cross categorical values; bucketize floats first.")
            return "string"
        if fn == "split":
            if types[0] != "string":
                raise self.wrong(fn, 0, args[0], "a string to split",
                                 "Split a string column, e.g. split(tags, '|').")
            if not isinstance(args[1], Literal) or types[1] != "string":
                raise self.error("split() needs a string literal as separator",
                                 "Write the separator in quotes, e.g. split(tags, '|').")
            return "list_string"
        if fn == "coalesce":
            if set(types) <= {"int", "float"}:
                return "int" if types == ["int", "int"] else "float"
            if types == ["string", "string"]:
                return "string"
            raise self.error(f"coalesce() needs two numbers or two strings, got {types[0]} "
                             f"and {types[1]}", "Give a default of the value's type, e.g. "
                             "coalesce(price, 0) or coalesce(city, 'unknown').")
        if fn == "str":
            if types[0] != "int":
                raise self.wrong(fn, 0, args[0], "an integer",
                                 "str() converts integers only; floats have no single text "
                                 "form on both sides (floor() them and keep them numeric).")
            return "string"
        raise self.error(f"unknown function `{fn}`", "See docs/expressions.md.")
