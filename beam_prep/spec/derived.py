"""Derived features: a feature's ``expr:`` parsed, its input column types inferred, typed.

A feature with ``expr:`` (instead of ``column:``) is computed from input columns by the
expression engine (:mod:`beam_prep.expr`, docs/expressions.md). Typing needs the input
columns' types; the readers convert every column to the type the spec asks for (CSV and
JSON have no column types of their own), so the type of each input column is *inferred
from how the expression uses it* and the reader is asked for exactly that type:

==========================================  ==================================
the column is an argument of                it is read as
==========================================  ==================================
``+ - * /``, numeric functions, ``float``   ``float`` (float64; integers too:
                                            arithmetic converts them anyway)
``lower upper strip concat split``          ``string``
``cross``                                   ``string`` (integers as decimal text)
``str``                                     ``int`` (int64)
``coalesce(x, d)``                          the type ``coalesce`` must return,
                                            else the type of the other argument
the whole expression (``expr: price``)      the feature's kind: numeric ->
                                            ``float``, integer -> ``int``, else
                                            ``string``
==========================================  ==================================

The same types are the dtypes of the generated layers' raw inputs, so analysis and
layers read every column the same way. A column used with two types in one expression
(``concat(a, str(a))``) is a SpecError from the type check.

Example:
    >>> typed = derived_expression("ratio", "numeric", "price / (qty + 1)")
    >>> typed.type, input_types(typed)
    ('float', {'price': 'float', 'qty': 'float'})
"""

from __future__ import annotations

import functools

from beam_prep.errors import SpecError
from beam_prep.expr import check, parse
from beam_prep.expr.nodes import Call, Column, Literal, Node, ValueType, columns_of
from beam_prep.expr.types import NUMERIC_FUNCTIONS, STRING_FUNCTIONS

#: Result types an expression may have for each feature kind.
RESULT_TYPES: dict[str, tuple[str, ...]] = {
    "string": ("string", "list_string"),
    "text": ("string",),
    "integer": ("int",),
    "numeric": ("float", "int"),
    "hashed": ("string", "int"),
}
#: Arrow target type of the reader for each expression input type.
ARROW_TYPES: dict[str, str] = {"float": "float64", "int": "int64", "string": "string"}

_KIND_TYPE: dict[str, ValueType] = {"numeric": "float", "integer": "int"}


def _infer(node: Node, expected: ValueType | None, out: dict[str, ValueType]) -> None:
    if isinstance(node, Column):
        if expected is not None:
            out.setdefault(node.name, expected)
        return
    if isinstance(node, Literal):
        return
    fn = node.fn
    if fn in NUMERIC_FUNCTIONS or fn == "float":
        wanted: list[ValueType | None] = ["float"] * len(node.args)
    elif fn in STRING_FUNCTIONS or fn == "cross":
        wanted = ["string"] * len(node.args)
    elif fn == "split":
        wanted = ["string", None]
    elif fn == "str":
        wanted = ["int"]
    elif fn == "coalesce":
        wanted = [expected or _literal_type(node.args[1]) or _literal_type(node.args[0])] * 2
    else:
        wanted = [None] * len(node.args)
    for arg, t in zip(node.args, wanted):
        _infer(arg, t, out)


def _literal_type(node: Node) -> ValueType | None:
    if not isinstance(node, Literal):
        return None
    return "string" if isinstance(node.value, str) else "float"


def _root_type(kind: str, dtype: str | None) -> ValueType:
    if kind == "hashed":
        return "int" if dtype == "integer" else "string"
    return _KIND_TYPE.get(kind, "string")


@functools.lru_cache(maxsize=256)
def derived_expression(feature: str, kind: str, expr: str, dtype: str | None = None) -> Node:
    """The typed tree of a feature's ``expr`` (cached: specs are checked often).

    Args:
        feature: Feature name (for messages).
        kind: The feature's kind; it decides the allowed result types.
        expr: The expression text.
        dtype: ``dtype`` of a hashed feature (``string`` or ``integer``).

    Raises:
        SpecError: A parse or type error, or a result type the kind cannot take, naming
            the feature, the expression and the fix.

    Example:
        >>> derived_expression("city_clean", "string", "lower(strip(city))").type
        'string'
    """
    tree = parse(expr, feature=feature)
    types: dict[str, ValueType] = {}
    _infer(tree, _root_type(kind, dtype), types)
    for name in columns_of(tree):
        types.setdefault(name, "string")
    typed = check(tree, types, feature=feature, expr=expr)
    allowed = RESULT_TYPES[kind]
    if kind == "hashed":
        root = _root_type(kind, dtype)
        allowed = (root, "list_string") if root == "string" else (root,)
    if typed.type not in allowed:
        raise SpecError(
            f"Feature {feature!r}: `expr` {expr!r} gives a {typed.type} value, but a {kind} "
            f"feature needs {' or '.join(allowed)}. Fix: change the feature's kind, or wrap "
            "the expression (e.g. float(x), str(x), cross(a, b)) to give that type."
        )
    return typed


def input_types(tree: Node) -> dict[str, ValueType]:
    """Input column -> the type it is read as, in first-use order.

    Example:
        >>> input_types(derived_expression("c", "string", "cross(country, str(year))"))
        {'country': 'string', 'year': 'int'}
    """
    out: dict[str, ValueType] = {}

    def walk(n: Node) -> None:
        if isinstance(n, Column) and n.type is not None:
            out.setdefault(n.name, n.type)
        elif isinstance(n, Call):
            for a in n.args:
                walk(a)

    walk(tree)
    return out
