"""``expr:`` text -> an untyped expression tree, through Python's ``ast`` (never ``eval``).

Only a whitelist is accepted: numeric and string literals, column names, ``+ - * /``,
unary ``-`` (and ``+``) and calls of the functions in :data:`FUNCTIONS` by their bare name.
Everything else (attribute access, subscripts, lambdas, comprehensions, keyword arguments,
``*args``, comparisons, booleans, ``None``, unknown functions, calls on anything but a name)
is a :class:`~beam_prep.errors.SpecError` naming the feature, the expression, the offending
piece and the fix. A function name used without a call (``log1p + 1``) is an error too: the
names of the function table cannot be column names in an expression.

Example:
    >>> parse("log1p(price / (qty + 1))")
    Call(fn='log1p', args=(Call(fn='divide', args=(Column(name='price', type=None), \
Call(fn='add', args=(Column(name='qty', type=None), Literal(value=1, type=None)), \
type=None)), type=None),), type=None)
"""

from __future__ import annotations

import ast
import math

from beam_prep.errors import SpecError
from beam_prep.expr.nodes import Call, Column, Literal, Node

# Function name -> (minimum, maximum) argument count; None = no maximum.
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "log1p": (1, 1), "log": (1, 1), "exp": (1, 1), "sqrt": (1, 1), "abs": (1, 1),
    "floor": (1, 1), "clip": (3, 3), "minimum": (2, None), "maximum": (2, None),
    "lower": (1, 1), "upper": (1, 1), "strip": (1, 1), "concat": (2, None),
    "cross": (2, None), "split": (2, 2), "coalesce": (2, 2), "float": (1, 1), "str": (1, 1),
}

_BINARY = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide"}
_INT64_MAX = 2**63 - 1
_MAX_LENGTH = 2000
_MAX_SHOWN = 200  # longest echo of the expression in a message
#: Deepest nesting of an expression. The parser, the type check and the Arrow and TensorFlow
#: evaluators recurse once per level (a few frames each) under Python's limit of 1000
#: frames; 100 levels (a 101-term sum) leaves them a wide margin.
MAX_DEPTH = 100
_SMALLEST_NORMAL = 2.2250738585072014e-308


def _error(expr: str, feature: str | None, what: str, fix: str) -> SpecError:
    where = f"feature '{feature}': " if feature else ""
    shown = repr(expr) if len(expr) <= _MAX_SHOWN else repr(expr[:_MAX_SHOWN - 20]) + "..."
    return SpecError(f"{where}`expr` {shown} is not allowed: {what}. {fix}")


def _piece(expr: str, node: ast.AST) -> str:
    text = ast.get_source_segment(expr, node)
    return text if text is not None else type(node).__name__


def parse(expr: str, *, feature: str | None = None) -> Node:
    """Parses one ``expr:`` text into an untyped tree.

    Args:
        expr: The expression, Python syntax, e.g. ``"lower(strip(city))"``.
        feature: The feature name, used in error messages only.

    Returns:
        The tree (``type=None`` everywhere); type it with ``beam_prep.expr.types.check``.

    Raises:
        SpecError: The text is not a single whitelisted expression.

    Example:
        >>> parse("cross(country, device)").fn
        'cross'
    """
    if not isinstance(expr, str) or not expr.strip():
        raise _error(str(expr), feature, "it is empty or not a string",
                     "Write an expression over input columns, e.g. expr: log1p(price).")
    if len(expr) > _MAX_LENGTH:
        raise _error(expr[:40] + "...", feature, f"it is longer than {_MAX_LENGTH} characters",
                     "Split the computation over several derived features.")
    try:
        expr.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _error(expr, feature, f"it holds the lone surrogate {expr[e.start]!r} at index "
                     f"{e.start}, which has no UTF-8 form", "Remove it, or write the whole "
                     "character it was meant to be part of.") from None
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise _error(expr, feature, f"it is not a Python expression ({e.msg})",
                     "Check brackets and quotes; write one expression, no statements.") from None
    except (RecursionError, MemoryError):  # the parser's own nesting limit
        raise _too_deep(expr, feature) from None
    if _depth(tree.body) > MAX_DEPTH:
        raise _too_deep(expr, feature)
    return _convert(tree.body, expr.strip(), feature)


def _too_deep(expr: str, feature: str | None) -> SpecError:
    return _error(expr, feature, f"it nests more than {MAX_DEPTH} levels deep (a sum of n "
                  "terms nests n - 1 levels, each unary - one more)",
                  "Split the computation over several derived features, or simplify it "
                  "(e.g. --x is x).")


def _depth(root: ast.AST) -> int:
    """Nesting depth of a syntax tree, walked without recursion."""
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node)
                     if not isinstance(child, (ast.operator, ast.unaryop, ast.expr_context)))
    return deepest


def _convert(node: ast.AST, expr: str, feature: str | None) -> Node:
    piece = _piece(expr, node)
    if isinstance(node, ast.Constant):
        return _literal(node.value, piece, expr, feature)
    if isinstance(node, ast.Name):
        if piece != node.id:  # Python's tokenizer NFKC-normalises identifiers
            raise _error(expr, feature, f"the name `{piece}` is read by Python as `{node.id}` "
                         "(identifiers are NFKC-normalised, e.g. a fullwidth letter becomes "
                         "its ASCII twin), so it would read another column",
                         f"Write `{node.id}` if that column is meant; a column whose name "
                         "changes under NFKC is read with a plain `column:` feature.")
        if node.id in FUNCTIONS:
            raise _error(expr, feature, f"`{node.id}` is a function used without a call",
                         f"Call it, e.g. {node.id}(x); a column with that name cannot be "
                         "used in an expression (rename it with a plain `column:` feature).")
        return Column(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _convert(node.operand, expr, feature)
        if isinstance(node.op, ast.UAdd):
            return inner
        if isinstance(inner, Literal) and not isinstance(inner.value, str):
            return Literal(-inner.value)
        return Call("negate", (inner,))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return Call(_BINARY[type(node.op)], (_convert(node.left, expr, feature),
                                             _convert(node.right, expr, feature)))
    if isinstance(node, ast.Call):
        return _call(node, piece, expr, feature)
    raise _error(expr, feature, f"`{piece}` ({_describe(node)}) is outside the whitelist",
                 "Use only numbers, 'strings', column names, + - * /, unary - and the "
                 "functions of docs/expressions.md.")


def _literal(value: object, piece: str, expr: str, feature: str | None) -> Literal:
    if isinstance(value, bool) or value is None or not isinstance(value, (int, float, str)):
        raise _error(expr, feature, f"the constant `{piece}` is not a number or a string",
                     "Use a numeric literal such as 1 or 0.5, or a quoted string.")
    if isinstance(value, int) and abs(value) > _INT64_MAX:
        raise _error(expr, feature, f"the integer `{piece}` does not fit in int64",
                     "Write it as a float (e.g. 1e20) or use a smaller number.")
    if isinstance(value, float) and not math.isfinite(value):
        raise _error(expr, feature, f"the constant `{piece}` is not finite",
                     "Write a finite number; NaN and inf come from the data only.")
    if isinstance(value, float) and 0 < abs(value) < _SMALLEST_NORMAL:
        raise _error(expr, feature, f"the constant `{piece}` is subnormal (TensorFlow "
                     "flushes it to zero)", "Write 0 or a number of magnitude >= 2.3e-308.")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise _error(expr, feature, f"the string `{piece}` holds the lone surrogate "
                         f"{value[e.start]!r}, which has no UTF-8 form",
                         "Remove it, or write the whole character (e.g. '\\U0001F600' "
                         "instead of a surrogate pair).") from None
    if value == "":
        raise _error(expr, feature, "the empty string '' is the missing value of strings",
                     "Use coalesce() to replace missing values by a non-empty string.")
    return Literal(value)


def _call(node: ast.Call, piece: str, expr: str, feature: str | None) -> Call:
    if not isinstance(node.func, ast.Name):
        raise _error(expr, feature, f"`{piece}` calls `{_piece(expr, node.func)}`, not a "
                     "function name", "Call a function of docs/expressions.md by its bare "
                     "name, e.g. lower(city) instead of city.lower().")
    name = node.func.id
    if name not in FUNCTIONS:
        raise _error(expr, feature, f"`{name}` is not a known function",
                     f"Use one of: {', '.join(sorted(FUNCTIONS))}.")
    if node.keywords:
        raise _error(expr, feature, f"`{piece}` passes keyword arguments",
                     f"Pass the arguments of {name}() by position.")
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise _error(expr, feature, f"`{piece}` unpacks arguments with *",
                     f"List the arguments of {name}() one by one.")
    low, high = FUNCTIONS[name]
    n = len(node.args)
    if n < low or (high is not None and n > high):
        wanted = str(low) if low == high else f"at least {low}" if high is None \
            else f"{low} to {high}"
        raise _error(expr, feature, f"{name}() takes {wanted} argument(s), got {n} in `{piece}`",
                     "See the function table in docs/expressions.md.")
    return Call(name, tuple(_convert(a, expr, feature) for a in node.args))


def _describe(node: ast.AST) -> str:
    kinds = {ast.Attribute: "attribute access", ast.Subscript: "a subscript",
             ast.Lambda: "a lambda", ast.ListComp: "a comprehension",
             ast.SetComp: "a comprehension", ast.DictComp: "a comprehension",
             ast.GeneratorExp: "a comprehension", ast.Compare: "a comparison",
             ast.BoolOp: "a boolean operator", ast.IfExp: "a conditional expression",
             ast.NamedExpr: "an assignment", ast.JoinedStr: "an f-string",
             ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a dict", ast.Set: "a set",
             ast.BinOp: "an operator other than + - * /",
             ast.UnaryOp: "a unary operator other than -"}
    return kinds.get(type(node), type(node).__name__)
