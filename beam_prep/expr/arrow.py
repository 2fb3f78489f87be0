"""Evaluates a typed expression tree on Arrow data with vectorised ``pyarrow.compute``.

No per-row Python: every node is one or a few Arrow kernels over whole arrays (``split``
also uses NumPy on the offsets). Never imports TensorFlow: the analysis runs without it.

Missing values (the same rules as :mod:`beam_prep.expr.tf`; see docs/expressions.md):
columns are read with the layer's missing markers mapped to null (``""`` for strings,
``MISSING_INTEGER`` for integers; floats keep NaN as a value), a null argument gives a null
result, and a string result ``""`` (``strip('  ')``) or a list with no element is null.

Example:
    >>> import pyarrow as pa
    >>> from beam_prep.expr.parse import parse
    >>> from beam_prep.expr.types import check
    >>> batch = pa.record_batch({"price": [3.0, None]})
    >>> tree = check(parse("price / 2"), column_types(batch.schema))
    >>> evaluate(tree, batch).to_pylist()
    [1.5, None]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.errors import InputError
from beam_prep.expr.nodes import MISSING_INTEGER, Call, Column, Literal, Node, ValueType

CROSS_SEPARATOR = "|"
CROSS_ESCAPE = "\\"

_NAN = pa.scalar(float("nan"), pa.float64())
_SMALLEST_NORMAL = 2.2250738585072014e-308
# Operations that can turn normal float64 inputs into a subnormal result.
_MAY_UNDERFLOW = frozenset({"add", "subtract", "multiply", "divide", "exp"})


def column_types(schema: pa.Schema) -> dict[str, ValueType]:
    """Value types of the columns of an Arrow schema that expressions can read.

    Floating -> ``float``, integer -> ``int``, (large) string -> ``string``, list of strings
    -> ``list_string``; other columns are left out (an expression naming them is an unknown
    column).

    Example:
        >>> column_types(pa.schema([("a", pa.float32()), ("b", pa.list_(pa.string()))]))
        {'a': 'float', 'b': 'list_string'}
    """
    out: dict[str, ValueType] = {}
    for field in schema:
        t = field.type
        if pa.types.is_floating(t):
            out[field.name] = "float"
        elif pa.types.is_integer(t):
            out[field.name] = "int"
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            out[field.name] = "string"
        elif ((pa.types.is_list(t) or pa.types.is_large_list(t))
              and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type))):
            out[field.name] = "list_string"
    return out


def evaluate(tree: Node, data: pa.RecordBatch | pa.Table) -> pa.Array:
    """Computes a derived column.

    Args:
        tree: A tree typed by ``beam_prep.expr.types.check``.
        data: The input rows; every column the tree reads must be present.

    Returns:
        One array of ``len(data)`` values: float64, int64, string or list<string>.

    Raises:
        InputError: A column the tree reads is absent from ``data``.

    Example:
        >>> from beam_prep.expr.parse import parse
        >>> from beam_prep.expr.types import check
        >>> batch = pa.record_batch({"c": [" Berlin ", "  "]})
        >>> evaluate(check(parse("lower(strip(c))"), {"c": "string"}), batch).to_pylist()
        ['berlin', None]
    """
    if isinstance(data, pa.Table):
        parts = [evaluate(tree, b) for b in data.to_batches()]
        if not parts:
            return evaluate(tree, pa.RecordBatch.from_pylist([], schema=data.schema))
        return pa.concat_arrays(parts)
    return _Evaluator(data).visit(tree)


class _Evaluator:
    def __init__(self, batch: pa.RecordBatch) -> None:
        self.batch = batch

    def visit(self, node: Node) -> pa.Array | pa.Scalar:
        if isinstance(node, Literal):
            return pa.scalar(node.value, _ARROW_TYPES[node.type])
        if isinstance(node, Column):
            return self.column(node)
        args = [self.visit(a) for a in node.args]
        if node.fn in _FLOAT_ARGS:
            args = [_as_float(v, a.type) for v, a in zip(args, node.args)]
        result = _FUNCTIONS[node.fn](node, args)
        return _flush_subnormal(result) if node.fn in _MAY_UNDERFLOW else result

    def column(self, node: Column) -> pa.Array:
        index = self.batch.schema.get_field_index(node.name)
        if index < 0:
            raise InputError(f"Column `{node.name}` is read by a derived feature but absent "
                             f"from the input. Received columns: {self.batch.schema.names}")
        x = self.batch.column(index)
        if node.type == "float":
            return _flush_subnormal(x.cast(pa.float64()))
        if node.type == "int":
            x = x.cast(pa.int64())
            return pc.if_else(pc.equal(x, MISSING_INTEGER), None, x)
        if node.type == "string":
            return _blank_to_null(x.cast(pa.string()))
        return x.cast(pa.list_(pa.string()))


_ARROW_TYPES = {"float": pa.float64(), "int": pa.int64(), "string": pa.string()}


def _as_float(value: pa.Array | pa.Scalar, t: ValueType | None) -> pa.Array | pa.Scalar:
    # Round to nearest beyond 2**53, as tf.cast does (a safe cast would refuse).
    return value.cast(pa.float64(), safe=False) if t == "int" else value


def _flush_subnormal(x: pa.Array) -> pa.Array:
    # x * 0.0 keeps the sign of zero; NaN and null fail the test and pass through.
    # beam_prep.expr.tf reads float columns with the same rule.
    return pc.if_else(pc.less(pc.abs(x), _SMALLEST_NORMAL), pc.multiply(x, 0.0), x)


def _blank_to_null(x: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(x, ""), pa.scalar(None, pa.string()), x)


def _nan_propagating(kernel: Callable, args: list) -> pa.Array:
    # Arrow's element-wise min/max skip NaN; IEEE (and TensorFlow) propagate it.
    result = kernel(*args, skip_nulls=False)
    any_nan = pc.is_nan(args[0])
    for a in args[1:]:
        any_nan = pc.or_(any_nan, pc.is_nan(a))
    return pc.if_else(any_nan, _NAN, result)


def _escape(value: pa.Array, t: ValueType | None) -> pa.Array:
    text = value.cast(pa.string()) if t == "int" else value
    # replace_substring is slow; most columns hold neither character, which one NumPy pass
    # over the UTF-8 bytes shows (an ASCII byte never occurs inside a multi-byte character;
    # bytes outside the slice or under nulls can only cause a needless replace).
    data = text.buffers()[2]
    if data is None:
        return text
    raw = np.frombuffer(data, dtype=np.uint8)
    for char, escaped in ((CROSS_ESCAPE, CROSS_ESCAPE * 2),
                          (CROSS_SEPARATOR, CROSS_ESCAPE + CROSS_SEPARATOR)):
        if (raw == ord(char)).any():
            text = pc.replace_substring(text, char, escaped)
    return text


def _split(s: pa.Array, sep: str) -> pa.Array:
    pieces = pc.split_pattern(s, sep)
    flat = pc.list_flatten(pieces)
    parent = pc.list_parent_indices(pieces)
    keep = pc.greater(pc.binary_length(flat), 0)
    values = pc.filter(flat, keep)
    counts = np.bincount(pc.filter(parent, keep).to_numpy(zero_copy_only=False),
                         minlength=len(s))
    offsets = np.zeros(len(s) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    empty = pa.array(counts == 0)
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=empty)


def _coalesce(node: Call, args: list) -> pa.Array:
    x, default = args
    if node.type == "float":
        x = _as_float(x, node.args[0].type)
        x = pc.if_else(pc.is_nan(x), pa.scalar(None, pa.float64()), x)
        default = _as_float(default, node.args[1].type)
    return pc.coalesce(x, default)


_FLOAT_ARGS = frozenset({"add", "subtract", "multiply", "divide", "negate", "log1p", "log",
                         "exp", "sqrt", "abs", "floor", "clip", "minimum", "maximum", "float"})

_FUNCTIONS: dict[str, Callable[[Call, list], pa.Array]] = {
    "add": lambda n, a: pc.add(*a),
    "subtract": lambda n, a: pc.subtract(*a),
    "multiply": lambda n, a: pc.multiply(*a),
    "divide": lambda n, a: pc.divide(*a),
    "negate": lambda n, a: pc.negate(a[0]),
    "log1p": lambda n, a: pc.log1p(a[0]),
    "log": lambda n, a: pc.ln(a[0]),
    "exp": lambda n, a: pc.exp(a[0]),
    "sqrt": lambda n, a: pc.sqrt(a[0]),
    "abs": lambda n, a: pc.abs(a[0]),
    "floor": lambda n, a: pc.floor(a[0]),
    "minimum": lambda n, a: _nan_propagating(pc.min_element_wise, a),
    "maximum": lambda n, a: _nan_propagating(pc.max_element_wise, a),
    "clip": lambda n, a: _nan_propagating(
        pc.min_element_wise, [_nan_propagating(pc.max_element_wise, a[:2]), a[2]]),
    "lower": lambda n, a: pc.ascii_lower(a[0]),
    "upper": lambda n, a: pc.ascii_upper(a[0]),
    "strip": lambda n, a: _blank_to_null(pc.ascii_trim_whitespace(a[0])),
    "concat": lambda n, a: pc.binary_join_element_wise(*a, ""),
    "cross": lambda n, a: pc.binary_join_element_wise(
        *[_escape(v, x.type) for v, x in zip(a, n.args)], CROSS_SEPARATOR),
    "split": lambda n, a: _split(a[0], a[1].as_py()),
    "coalesce": _coalesce,
    "float": lambda n, a: a[0],
    "str": lambda n, a: a[0].cast(pa.string()),
}
