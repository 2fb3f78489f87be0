"""The source of ``beam_prep.codegen.numeric_layers``' layers, for the generated module.

The generated module imports only Keras and TensorFlow (training code imports it without
beam_prep), so it cannot import :class:`~beam_prep.codegen.numeric_layers.SignedLog1p`,
``RobustScaling`` or ``PiecewiseLinear``: ``beam-prep generate`` copies their definitions
(and the ``_numeric_ops`` helper they call) from that module's source text, read as a file
without importing Keras. One definition, so the generated layers, the runtime twin and the
ranking launcher's ``model.input_transform`` compute the same thing. The text is our own
code, not user data; it still passes ``beam_prep.codegen.module_check`` with the rest.

Example:
    >>> "class SignedLog1p(" in numeric_layers_source(("SignedLog1p",))
    True
    >>> numeric_layers_source(())
    ''
"""

from __future__ import annotations

import ast
import functools
import importlib.util

from beam_prep.codegen.escape import Code
from beam_prep.errors import ArtifactError

MODULE = "beam_prep.codegen.numeric_layers"
HELPER = "_numeric_ops"


@functools.lru_cache(maxsize=1)
def _definitions() -> dict[str, str]:
    """Top-level class and function name -> its source text (without decorators)."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or spec.origin is None:
        raise ArtifactError(f"Cannot find the source of {MODULE}: reinstall beam_prep.")
    with open(spec.origin, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and not node.decorator_list:
            out[node.name] = ast.get_source_segment(text, node) or ""
    return out


def numeric_layers_source(classes: tuple[str, ...]) -> Code:
    """``_numeric_ops`` and the named classes, in that order, separated by two blank lines.

    Args:
        classes: Class names of ``numeric_layers`` (the plan's, in a fixed order).

    Returns:
        Python source (empty when ``classes`` is empty).

    Raises:
        ArtifactError: A name is not a plain (undecorated) definition of the module.
    """
    if not classes:
        return Code("")
    found = _definitions()
    missing = [c for c in (HELPER, *classes) if c not in found]
    if missing:
        raise ArtifactError(f"{MODULE} has no plain definition of {missing}: reinstall "
                            "beam_prep.")
    return Code("\n\n\n".join(found[c] for c in (HELPER, *classes)))
