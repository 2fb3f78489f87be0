"""The source of the layers copied into the generated module (numeric scaling, missing).

The generated module imports only Keras and TensorFlow (training code imports it without
beam_prep), so it cannot import :class:`~beam_prep.codegen.numeric_layers.SignedLog1p`,
``RobustScaling`` or ``PiecewiseLinear``: ``beam-prep generate`` copies their definitions
(and the ``_numeric_ops`` helper they call) from that module's source text, read as a file
without importing Keras. One definition, so the generated layers, the runtime twin and the
ranking launcher's ``model.input_transform`` compute the same thing. The text is our own
code, not user data; it still passes ``beam_prep.codegen.module_check`` with the rest.
``FillMissing`` and ``MissingIndicator`` (with their ``_missing_mask`` helper) are copied the
same way from ``beam_prep.codegen.missing`` (:func:`missing_layers_source`), and
``keras_model`` from ``beam_prep.codegen.keras_model`` (:func:`keras_model_source`).

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


MISSING_MODULE = "beam_prep.codegen.missing"
MISSING_HELPER = "_missing_mask"


@functools.lru_cache(maxsize=4)
def _definitions(module: str) -> dict[str, str]:
    """Top-level class and function name -> its source text (without decorators)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ArtifactError(f"Cannot find the source of {module}: reinstall beam_prep.")
    with open(spec.origin, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and not node.decorator_list:
            out[node.name] = ast.get_source_segment(text, node) or ""
    return out


def _copied(module: str, names: tuple[str, ...]) -> Code:
    found = _definitions(module)
    missing = [c for c in names if c not in found]
    if missing:
        raise ArtifactError(f"{module} has no plain definition of {missing}: reinstall "
                            "beam_prep.")
    return Code("\n\n\n".join(found[c] for c in names))


def numeric_layers_source(classes: tuple[str, ...]) -> Code:
    """``_numeric_ops`` and the named classes, in that order, separated by two blank lines.

    Args:
        classes: Class names of ``numeric_layers`` (the plan's, in a fixed order).

    Returns:
        Python source (empty when ``classes`` is empty).

    Raises:
        ArtifactError: A name is not a plain (undecorated) definition of the module.
    """
    return _copied(MODULE, (HELPER, *classes)) if classes else Code("")


def missing_layers_source(classes: tuple[str, ...]) -> Code:
    """``_missing_mask`` and the named classes of ``beam_prep.codegen.missing`` (or ``''``).

    Example:
        >>> "def _missing_mask(" in missing_layers_source(("MissingIndicator",))
        True
    """
    return _copied(MISSING_MODULE, (MISSING_HELPER, *classes)) if classes else Code("")


def keras_model_source() -> Code:
    """``keras_model`` of ``beam_prep.codegen.keras_model`` (a module with a renamed input).

    Example:
        >>> "def keras_model(" in keras_model_source()
        True
    """
    return _copied("beam_prep.codegen.keras_model", ("keras_model",))
