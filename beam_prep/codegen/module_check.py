"""The shape the generated module must have, checked on its AST before it is written.

A second line of defence behind ``beam_prep.codegen.escape``: whatever a template or a
value does, ``beam-prep generate`` refuses to write a module whose import would run
anything but imports, constant data assignments and definitions.

* Top level (:func:`check_module`): the docstring, the known (absolute) imports,
  assignments of literal data (constants, tuples, lists, dicts, names) to known constants,
  the known classes (dotted-name bases, methods only) and functions
  (``build_<feature>_layers``, ``derive_<feature>`` and the fixed helpers), without
  decorators and with literal defaults; no raw line
  terminator but ``\\n`` anywhere in the text (no non-printable character at all: no
  ``\\r``, ``\\x85``, ``\\u2028``, NUL, bidi control...).
* A derived feature's function (:func:`check_derived_function`): ``def derive_x(inputs):``,
  then ``vN = <TensorFlow calls over inputs['column'], vK and constants>`` lines and
  ``return vN``.

Example:
    >>> check_derived_function("def derive_x(inputs):\\n    return inputs['x']", "derive_x")
"""

from __future__ import annotations

import ast
import re

from beam_prep.errors import ArtifactError

IMPORTS = frozenset({("__future__", "annotations"), ("hashlib", None), ("json", None),
                     ("math", None), ("os", None), ("collections.abc", "Callable"),
                     ("typing", "Any"),
                     ("keras", None), ("tensorflow", None), ("sys", None), ("types", None),
                     ("collections.abc", "Sequence"), ("warnings", None)})
CONSTANTS = frozenset({
    "FINGERPRINT", "ARTIFACTS_DIR", "INPUT_DTYPES", "INPUT_COLUMNS", "INPUT_NAMES", "LIST_INPUTS",
    "LIST_PADDING", "RAGGED_OUTPUTS", "OUTPUTS", "OUTPUT_SPECS", "STAGES", "_FILES",
    "EMPTY_VOCABULARY_TOKEN", "EMPTY_VOCABULARY_INTEGER", "MISSING_INTEGER", "DEFAULT_VALUES",
    "IMPUTED", "MISSING_INDICATORS", "TARGET_OOV_TOKEN", "BUILDERS"})
CLASSES = frozenset({"ArtifactMismatchError", "FillMissing", "ListEncoding", "DerivedFeature",
                     "PerKeyScaling", "PerKeyCount", "PerKeyBucketize", "SignedLog1p",
                     "RobustScaling", "PiecewiseLinear", "MissingIndicator"})
FUNCTIONS = frozenset({
    "feature_values", "_artifact_path", "_read_bytes", "check_artifacts", "_tf_idf_state",
    "_target_state", "_per_key_state", "_per_key_columns", "_per_key_bytes", "_key_tensor",
    "_per_key_bucket_state",
    "build_layers", "raw_inputs", "input_signature", "_apply", "build_preprocessor",
    "encoded_inputs", "raw_columns", "make_dataset_fn", "build_inference_model",
    "_padded_list", "_layers_fn", "_apply_on_tf", "_on_tf", "_cast", "_call", "_numeric_ops",
    "keras_model", "_missing_mask", "parse_examples", "export_saved_model"})
_PER_FEATURE = re.compile(r"build_[A-Za-z_][A-Za-z0-9_]*_layers|derive_[A-Za-z_][A-Za-z0-9_]*")
_DATA = (ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.Name, ast.UnaryOp, ast.USub,
         ast.Load)

_VALUE = re.compile(r"v[0-9]+")


def _unprintable(source: str) -> list[str]:
    """Characters other than ``\\n`` that are not printable (line ends, NUL, bidi controls)."""
    return sorted({c for c in source if c != "\n" and not c.isprintable()})


def _refuse(why: str, node: ast.AST | None = None) -> ArtifactError:
    where = f" (line {node.lineno})" if node is not None and hasattr(node, "lineno") else ""
    return ArtifactError(
        f"The generated module is refused{where}: {why}. Nothing was written. This is a bug "
        "of the code generator or a hostile value it let through: please report it with the "
        "spec. (A new constant, import or function in templates/ must be added to the "
        "allow-list in beam_prep/codegen/module_check.py.)"
    )


def _is_data(node: ast.AST | None) -> bool:
    return node is None or all(isinstance(n, _DATA) for n in ast.walk(node))


def _is_dotted_name(node: ast.AST) -> bool:
    """``Name`` or ``a.b.Name``: what a base class may be (nothing that calls or indexes)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _check_function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    if node.decorator_list or isinstance(node, ast.AsyncFunctionDef):
        raise _refuse(f"function {node.name} has a decorator or is async", node)
    defaults = node.args.defaults + node.args.kw_defaults
    if not all(_is_data(d) for d in defaults):
        raise _refuse(f"function {node.name} has a default that is not a literal", node)


def _check_statement(node: ast.stmt, first: bool) -> None:
    if isinstance(node, ast.Expr):
        if not (first and isinstance(node.value, ast.Constant)):
            raise _refuse("an expression statement at module level", node)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        if isinstance(node, ast.ImportFrom) and node.level:  # `from . import os`: a sibling
            raise _refuse("a relative import", node)
        module = node.module if isinstance(node, ast.ImportFrom) else None
        names = [(module, a.name) if module else (a.name, None) for a in node.names]
        if not all(n in IMPORTS for n in names):
            raise _refuse(f"an unexpected import {names}", node)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not all(isinstance(t, ast.Name) and t.id in CONSTANTS for t in targets):
            raise _refuse("an assignment to an unexpected name", node)
        if not _is_data(node.value):
            raise _refuse("a module-level value that is not literal data", node)
    elif isinstance(node, ast.ClassDef):
        if node.name not in CLASSES or node.decorator_list or node.keywords:
            raise _refuse(f"an unexpected class {node.name}", node)
        if not all(_is_dotted_name(b) for b in node.bases):  # bases run on import
            raise _refuse(f"class {node.name} has a base that is not a dotted name", node)
        for item in node.body:
            if isinstance(item, ast.FunctionDef):
                _check_function(item)
            elif not (isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)):
                raise _refuse(f"class {node.name} has a statement that is not a method", item)
    elif isinstance(node, ast.FunctionDef):
        if node.name not in FUNCTIONS and not _PER_FEATURE.fullmatch(node.name):
            raise _refuse(f"an unexpected function {node.name}", node)
        _check_function(node)
    else:
        raise _refuse(f"an unexpected {type(node).__name__} statement at module level", node)


def check_module(source: str) -> None:
    """Refuses generated source whose import could do more than define things.

    Raises:
        ArtifactError: A raw line terminator other than ``\\n``, a syntax error, or a
            top-level statement outside the allow-list.
    """
    raw = _unprintable(source)
    if raw:
        raise _refuse(f"it contains the raw characters {raw!r}")
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise _refuse(f"it is not valid Python ({e.msg}, line {e.lineno})") from None
    first = tree.body[:1] and tree.body[0]
    for node in tree.body:
        _check_statement(node, node is first)
    if not any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body):
        raise _refuse("`from __future__ import annotations` is missing (annotations would run)")


def _check_value(node: ast.AST) -> None:
    """A derived function's right-hand side: tf calls over inputs, values and literals."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            if n.keywords:
                raise _refuse("a keyword argument in a derived function", n)
            if isinstance(func, ast.Name) and func.id == "float" and len(n.args) == 1 and \
                    isinstance(n.args[0], ast.Constant) and n.args[0].value == "nan":
                continue
            while isinstance(func, ast.Attribute):
                func = func.value
            if not (isinstance(func, ast.Name) and func.id == "tf"):
                raise _refuse("a call that is not a TensorFlow function in a derived function", n)
        elif isinstance(n, ast.Subscript):
            if not (isinstance(n.value, ast.Name) and n.value.id == "inputs"
                    and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)):
                raise _refuse("a subscript other than inputs['column'] in a derived function", n)
        elif isinstance(n, ast.Name):
            if n.id not in ("tf", "inputs", "float") and not _VALUE.fullmatch(n.id):
                raise _refuse(f"the unexpected name {n.id} in a derived function", n)
        elif not isinstance(n, (ast.Attribute, ast.Constant, ast.List, ast.UnaryOp, ast.USub,
                                ast.Load)):
            raise _refuse(f"a {type(n).__name__} in a derived function", n)


def check_derived_function(source: str, name: str) -> None:
    """Refuses a derived feature's function unless it has the one expected shape.

    Raises:
        ArtifactError: The text is not ``def <name>(inputs):`` with ``vN = ...`` lines
            (TensorFlow calls only) and a ``return``.
    """
    if _unprintable(source):
        raise _refuse(f"the function {name} contains a raw non-printable character")
    tree = ast.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        raise _refuse(f"the function {name} is not one function definition")
    fn = tree.body[0]
    args = fn.args
    if fn.name != name or fn.decorator_list or [a.arg for a in args.args] != ["inputs"] or (
            args.defaults or args.kwonlyargs or args.vararg or args.kwarg or args.posonlyargs):
        raise _refuse(f"the function {name} has an unexpected signature", fn)
    *body, last = fn.body
    for stmt in body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and _VALUE.fullmatch(stmt.targets[0].id)):
            raise _refuse(f"the function {name} has a statement other than vN = ...", stmt)
        _check_value(stmt.value)
    if not (isinstance(last, ast.Return) and last.value is not None):
        raise _refuse(f"the function {name} does not end with a return", last)
    _check_value(last.value)
