"""The one way user text enters generated code: checked literals, safe comments, identifiers.

Every value of the spec, the manifest or the command line that the code generator writes
(feature and column names, expressions, default values, mask tokens, paths, checksums, the
fingerprint) goes through one of these functions, and each returns :class:`Code`:

* :func:`literal` - a Python literal (``repr``-based), parsed back and compared with the
  value before it is returned: a string can only ever be one string constant;
* :func:`comment` / :func:`docstring` - text for a ``#`` comment or a docstring, with every
  character that is not printable escaped (``\\n``, ``\\r``, ``\\x0b``, ``\\x0c``,
  ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``, ``\\u2029``, NUL, ...), so no line terminator
  that Python's tokenizer or ``str.splitlines()`` knows can end the comment early;
* :func:`identifier` - an ASCII identifier (part of a function name), refused otherwise.

The Jinja environment of ``render.py`` is built with :func:`finalize`, which refuses any
``{{ ... }}`` value that is not :class:`Code`: a template that prints a raw string fails at
generation time instead of writing user text into code.

Example:
    >>> literal('a"\\n')
    '\\'a"\\\\n\\''
    >>> comment("x\\ny")
    'x\\\\ny'
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from beam_prep.errors import ArtifactError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Code(str):
    """Source text made safe by a function of this module (the only thing templates print)."""


def _refuse(value: Any, why: str) -> ArtifactError:
    shown = repr(value)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    return ArtifactError(
        f"The value {shown} cannot be written into the generated module: {why}. Fix: correct "
        "the spec (or the manifest) so that the value is a plain string, integer, finite "
        "number, boolean or null, then re-run `beam-prep analyze` and `beam-prep generate`."
    )


def _string(text: str) -> str:
    """``repr`` of a string, in double quotes when it has none (ruff-format style)."""
    source = repr(text)
    if source.startswith("'") and '"' not in text:
        source = '"' + source[1:-1].replace("\\'", "'") + '"'
    return source


def literal(value: Any, *, double_quotes: bool = True) -> Code:
    """A Python literal for a scalar (str, int, float, bool, None), checked to read back.

    The source is parsed with :mod:`ast`: it must be one constant (or a negated number) that
    evaluates to the same value and type, on one line of printable characters. Strings
    are in double quotes unless they hold one (``double_quotes=False``: ``repr``'s choice).

    Raises:
        ArtifactError: A non-finite float, or a value of another type.

    Example:
        >>> literal("it's"), literal(-1.5), literal(None)
        ('"it\\'s"', '-1.5', 'None')
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise _refuse(value, "it is not a finite number")
    if isinstance(value, str):
        value = str(value)
        source = _string(value) if double_quotes else repr(value)
    elif value is None or isinstance(value, (bool, int, float)):
        # numpy scalars (subclasses) are written as the plain Python value.
        if not isinstance(value, bool) and value is not None:
            value = int(value) if isinstance(value, int) else float(value)
        source = repr(value)
    else:
        raise _refuse(value, f"a {type(value).__name__} is not a plain literal")
    node = ast.parse(source, mode="eval").body
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    back = ast.literal_eval(source)
    if (not isinstance(node, ast.Constant) or type(back) is not type(value)
            or repr(back) != repr(value) or not source.isprintable()):
        raise _refuse(value, "it does not read back as the same literal")
    return Code(source)


def _printable(text: str) -> str:
    """``text`` with every non-printable character written as its escape (``\\u2028``)."""
    if not isinstance(text, str):
        raise _refuse(text, "comments and docstrings take text")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def comment(text: str) -> Code:
    """Text for the rest of a ``#`` comment line: printable characters only (others escaped).

    Example:
        >>> comment("price / (qty + 1)")
        'price / (qty + 1)'
    """
    return Code(_printable(text))


def docstring(text: str) -> Code:
    """Text for the inside of a ``\"\"\"`` docstring: backslashes doubled, ``\"\"\"`` broken up,
    other non-printable characters escaped (so the docstring reads as the text).

    Example:
        >>> docstring('a \"\"\" b \\\\ c')
        "a ''' b \\\\\\\\ c"
    """
    return Code(_printable(text.replace("\\", "\\\\").replace('"""', "'''")))


def identifier(name: str) -> Code:
    """An ASCII identifier (a feature name inside a function name), refused otherwise.

    Raises:
        ArtifactError: ``name`` is not letters, digits and underscores, not starting with
            a digit.
    """
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise _refuse(name, "a feature name must be a Python identifier (letters, digits, "
                            "underscore; not starting with a digit)")
    return Code(name)


def finalize(value: Any) -> Code:
    """Jinja ``finalize``: only :class:`Code` may be printed by a template.

    Raises:
        TypeError: A template printed a value that did not go through this module.
    """
    if isinstance(value, Code):
        return value
    raise TypeError(
        f"A template printed {value!r} ({type(value).__name__}) without escaping it. Fix the "
        "template: pass user values through `| py` (a literal), `| comment`, `| docwrap` or "
        "`| ident` (beam_prep/codegen/escape.py)."
    )
