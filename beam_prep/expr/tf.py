"""The TensorFlow side of derived features: readable TF code text and an evaluator.

One definition serves both: each function of the table is a *recipe* written against a
small backend interface (``call("tf.math.log1p", x)``, ``const(1.0, "float64")``, ...).
:func:`render` runs the recipes with a text backend and returns the source of a plain
Python function over a dict of input tensors; :func:`evaluate` runs the same recipes with
TensorFlow and returns the tensor. Only public TF ops are used (``tf.math``, ``tf.strings``,
``tf.where``, ``tf.ragged``): no ``py_function``, no pickled lambdas, so the computation
runs in ``tf.data``, inside a SavedModel and under XLA-free TPU input pipelines alike.

Inputs are the raw columns as the layers see them (any shape; ``split`` adds a ragged
last dimension): floats (NaN = missing), int64 (``MISSING_INTEGER`` = missing), tf.string
(``""`` = missing), list columns as ``tf.RaggedTensor``. Outputs: numeric results are
float64 (cast to the model's float type afterwards), strings are tf.string with ``""`` for
missing, ``split`` gives a RaggedTensor whose rows hold no empty string.
This is the only module of ``beam_prep.expr`` that imports TensorFlow.

Example:
    >>> from beam_prep.expr import check, parse
    >>> tree = check(parse("price / (qty + 1)"), {"price": "float", "qty": "int"})
    >>> print(render(tree, name="price_per_item"))              # doctest: +NORMALIZE_WHITESPACE
    def price_per_item(inputs):
        v0 = tf.cast(inputs['price'], tf.float64)
        v1 = tf.where(tf.math.less(tf.math.abs(v0), tf.constant(2.2250738585072014e-308, \
tf.float64)), tf.math.multiply(v0, tf.constant(0.0, tf.float64)), v0)
        v2 = tf.cast(inputs['qty'], tf.int64)
        v3 = tf.where(tf.math.equal(v2, tf.constant(-9223372036854775808, tf.int64)), \
tf.constant(float('nan'), tf.float64), tf.cast(v2, tf.float64))
        v4 = tf.math.add(v3, tf.constant(1.0, tf.float64))
        v5 = tf.math.divide(v1, v4)
        return v5
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import tensorflow as tf

from beam_prep.expr.nodes import MISSING_INTEGER, Call, Column, Literal, Node
from beam_prep.expr.types import NUMERIC_FUNCTIONS

CROSS_SEPARATOR = "|"  # the same as beam_prep.expr.arrow.CROSS_SEPARATOR (a test checks)
SMALLEST_NORMAL = 2.2250738585072014e-308  # float64; smaller magnitudes are subnormal


def render(tree: Node, *, name: str) -> str:
    """Source text of ``def <name>(inputs): ...`` computing ``tree`` with TensorFlow ops.

    The text needs only ``tf`` (``import tensorflow as tf``) in its module; one statement
    per node of the tree, so no sub-expression is computed twice.

    Args:
        tree: A tree typed by ``beam_prep.expr.types.check``.
        name: The function name (a Python identifier).

    Example:
        >>> from beam_prep.expr import check, parse
        >>> print(render(check(parse("lower(city)"), {"city": "string"}), name="f"))
        def f(inputs):
            v0 = inputs['city']
            v1 = tf.strings.lower(v0)
            return v1
    """
    if not name.isidentifier():
        raise ValueError(f"`name` must be a Python identifier. Received: name={name!r}")
    backend = _Text()
    result = _build(tree, backend)
    body = "".join(f"    {line}\n" for line in backend.lines)
    return f"def {name}(inputs):\n{body}    return {result}"


def evaluate(tree: Node, inputs: Mapping[str, Any]) -> Any:
    """Builds the computation of ``tree`` on ``inputs`` (eagerly or inside a tf.function).

    Args:
        tree: A tree typed by ``beam_prep.expr.types.check``.
        inputs: Column name -> tensor (RaggedTensor for list columns).

    Returns:
        A tensor (float64, int64 or string) or, for ``split``, a RaggedTensor of strings.

    Example:
        >>> from beam_prep.expr import check, parse
        >>> tree = check(parse("split(tags, '|')"), {"tags": "string"})
        >>> evaluate(tree, {"tags": tf.constant(["a||b", ""])}).to_list()
        [[b'a', b'b'], []]
    """
    return _build(tree, _Tf(inputs))


class _Tf:
    """Backend that runs the recipes with TensorFlow."""

    def __init__(self, inputs: Mapping[str, Any]) -> None:
        self.inputs = inputs

    def input(self, name: str) -> Any:
        return self.inputs[name]

    def call(self, fn: str, *args: Any) -> Any:
        target: Any = tf
        for part in fn.split(".")[1:]:
            target = getattr(target, part)
        return target(*args)

    def const(self, value: Any, dtype: str) -> Any:
        return tf.constant(value, getattr(tf, dtype))

    def dtype(self, dtype: str) -> Any:
        return getattr(tf, dtype)

    def py(self, value: Any) -> Any:
        return value

    def let(self, value: Any) -> Any:
        return value


class _Text:
    """Backend that writes the recipes as Python source, one statement per value."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def input(self, name: str) -> str:
        return f"inputs[{name!r}]"

    def call(self, fn: str, *args: Any) -> str:
        parts = [f"[{', '.join(a)}]" if isinstance(a, list) else a for a in args]
        return f"{fn}({', '.join(parts)})"

    def const(self, value: Any, dtype: str) -> str:
        if isinstance(value, float) and value != value:
            return f"tf.constant(float('nan'), tf.{dtype})"
        return f"tf.constant({value!r}, tf.{dtype})"

    def dtype(self, dtype: str) -> str:
        return f"tf.{dtype}"

    def py(self, value: Any) -> str:
        # Regular expressions read better as raw strings: r'\\|' rather than '\\\\|'.
        trailing = len(value) - len(value.rstrip("\\")) if isinstance(value, str) else 0
        if isinstance(value, str) and "\\" in value and "'" not in value and value.isprintable() \
                and trailing % 2 == 0:
            return f"r'{value}'"
        return repr(value)

    def let(self, value: str) -> str:
        var = f"v{len(self.lines)}"
        self.lines.append(f"{var} = {value}")
        return var


def _build(node: Node, b: Any) -> Any:
    if isinstance(node, Literal):
        dtype = {"float": "float64", "int": "int64", "string": "string"}[str(node.type)]
        return b.const(node.value, dtype)
    if isinstance(node, Column):
        if node.type == "float":
            v = b.let(b.call("tf.cast", b.input(node.name), b.dtype("float64")))
            # Subnormal -> signed zero, as the Arrow side reads it (and as the CPU kernels'
            # flush-to-zero would make it in most, but not all, ops: negative/abs keep it).
            tiny = b.call("tf.math.less", b.call("tf.math.abs", v),
                          b.const(SMALLEST_NORMAL, "float64"))
            return b.let(b.call("tf.where", tiny,
                                b.call("tf.math.multiply", v, b.const(0.0, "float64")), v))
        if node.type == "int":
            return b.let(b.call("tf.cast", b.input(node.name), b.dtype("int64")))
        return b.let(b.input(node.name))
    args = [_build(a, b) for a in node.args]
    if node.fn in NUMERIC_FUNCTIONS or node.fn == "float" or (
            node.fn == "coalesce" and node.type == "float"):
        args = [_as_float(b, v, a) for v, a in zip(args, node.args)]
    return b.let(_RECIPES[node.fn](b, node, args))


def _as_float(b: Any, value: Any, node: Node) -> Any:
    if node.type != "int":
        return value
    if isinstance(node, Literal):
        return b.const(float(node.value), "float64")
    return b.let(b.call("tf.where", _is_missing(b, value, "int"), b.const(float("nan"), "float64"),
                        b.call("tf.cast", value, b.dtype("float64"))))


def _is_missing(b: Any, value: Any, t: str | None) -> Any:
    if t == "float":
        return b.call("tf.math.is_nan", value)
    if t == "int":
        return b.call("tf.math.equal", value, b.const(MISSING_INTEGER, "int64"))
    return b.call("tf.math.equal", value, b.const("", "string"))


def _any_missing(b: Any, node: Call, args: list, types: list) -> Any:
    # Literals are never missing (the parser refuses ''), so only non-literals are tested.
    tests = [_is_missing(b, v, t) for v, t, a in zip(args, types, node.args)
             if not isinstance(a, Literal)]
    condition = tests[0]
    for t in tests[1:]:
        condition = b.call("tf.math.logical_or", condition, t)
    return condition


def _fold(fn: str) -> Callable[[Any, Call, list], Any]:
    def recipe(b: Any, node: Call, args: list) -> Any:
        result = args[0]
        for a in args[1:]:
            result = b.call(fn, result, a)
        return result
    return recipe


def _unary(fn: str) -> Callable[[Any, Call, list], Any]:
    return lambda b, node, args: b.call(fn, args[0])


def _join(b: Any, node: Call, args: list, separator: str) -> Any:
    # Every argument is a string here (cross turned integers into text, "" when missing).
    joined = b.call("tf.strings.join", list(args), b.py(separator))
    missing = _any_missing(b, node, args, ["string"] * len(args))
    return b.call("tf.where", missing, b.const("", "string"), joined)


def _cross(b: Any, node: Call, args: list) -> Any:
    escaped = []
    for v, a in zip(args, node.args):
        if a.type == "int":
            v = b.let(b.call("tf.where", _is_missing(b, v, "int"), b.const("", "string"),
                             b.call("tf.strings.as_string", v)))
        v = b.call("tf.strings.regex_replace", v, b.py("\\\\"), b.py("\\\\\\\\"))
        escaped.append(b.let(b.call("tf.strings.regex_replace", v, b.py("\\|"),
                                    b.py("\\\\|"))))
    return _join(b, node, escaped, CROSS_SEPARATOR)


def _split(b: Any, node: Call, args: list) -> Any:
    pieces = b.let(b.call("tf.strings.split", args[0], b.py(node.args[1].value)))
    # One statement for the condition keeps the rendered lines short.
    keep = b.let(b.call("tf.math.greater", b.call("tf.strings.length", pieces),
                        b.const(0, "int32")))
    return b.call("tf.ragged.boolean_mask", pieces, keep)


def _coalesce(b: Any, node: Call, args: list) -> Any:
    return b.call("tf.where", _is_missing(b, args[0], node.type), args[1], args[0])


def _str(b: Any, node: Call, args: list) -> Any:
    return b.call("tf.where", _is_missing(b, args[0], "int"), b.const("", "string"),
                  b.call("tf.strings.as_string", args[0]))


_RECIPES: dict[str, Callable[[Any, Call, list], Any]] = {
    "add": _fold("tf.math.add"),
    "subtract": _fold("tf.math.subtract"),
    "multiply": _fold("tf.math.multiply"),
    "divide": _fold("tf.math.divide"),
    "negate": _unary("tf.math.negative"),
    "log1p": _unary("tf.math.log1p"),
    "log": _unary("tf.math.log"),
    "exp": _unary("tf.math.exp"),
    "sqrt": _unary("tf.math.sqrt"),
    "abs": _unary("tf.math.abs"),
    "floor": _unary("tf.math.floor"),
    # tf.math.minimum/maximum propagate NaN (IEEE), like the Arrow side's explicit check.
    "minimum": _fold("tf.math.minimum"),
    "maximum": _fold("tf.math.maximum"),
    "clip": lambda b, n, a: b.call("tf.math.minimum", b.call("tf.math.maximum", a[0], a[1]),
                                   a[2]),
    "lower": _unary("tf.strings.lower"),
    "upper": _unary("tf.strings.upper"),
    "strip": _unary("tf.strings.strip"),
    "concat": lambda b, n, a: _join(b, n, a, ""),
    "cross": _cross,
    "split": _split,
    "coalesce": _coalesce,
    "float": lambda b, n, a: a[0],
    "str": _str,
}
