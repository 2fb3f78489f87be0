"""The one way beam_prep's own layer code enters the generated module: copied definitions.

The generated module imports only Keras and TensorFlow (training code imports it without
beam_prep), so it cannot import beam_prep's custom layers. ``beam-prep
generate`` copies their definitions instead, from the source text of the module that
defines them, read as a file without importing Keras. Each layer and helper has one
definition, which the generated module (run in memory by the runtime twin) and the
ranking launcher's ``model.input_transform`` run.

:data:`LAYER_SOURCES` names, per family of layers, the module and the definitions copied;
templates call :func:`layer_source` (a Jinja global of ``render.py``) where the family's
code goes. A definition is a top-level class or function without decorators; its text is
copied as written (comments and docstring included), definitions separated by two blank
lines. The text is our own code, not user data; it still passes
``beam_prep.codegen.module_check`` with the rest of the module.

Example:
    >>> "class SignedLog1p(" in layer_source("numeric", ("SignedLog1p",))
    True
    >>> layer_source("numeric", ())
    ''
    >>> layer_source("list").count("\\ndef _padded_list(")
    1
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
from collections.abc import Mapping

from beam_prep.codegen.derived_plan import DERIVED_LAYER_CLASS
from beam_prep.codegen.escape import Code
from beam_prep.codegen.list_plan import LIST_LAYER_CLASS
from beam_prep.codegen.per_key_bucket_plan import BUCKET_LAYER_CLASS
from beam_prep.codegen.per_key_plan import PER_KEY_COUNT_CLASS, PER_KEY_LAYER_CLASS
from beam_prep.codegen.plan_types import FILL_MISSING_CLASS, INDICATOR_CLASS
from beam_prep.codegen.scaling_plan import NUMERIC_LAYER_CLASSES
from beam_prep.errors import ArtifactError


@dataclasses.dataclass(frozen=True)
class LayerSource:
    """Definitions of one beam_prep module copied into the generated module.

    Attributes:
        module: The dotted name of the module holding the definitions.
        layers: The classes (or functions) a template may choose from, in rendering order.
        helpers: Definitions the layers call, copied first whenever any layer is.
        renamed: ``(name in module, name in generated module)`` pairs: a public helper of
            the runtime twin that the generated module keeps private.
    """

    module: str
    layers: tuple[str, ...]
    helpers: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()


LAYER_SOURCES: Mapping[str, LayerSource] = {
    "numeric": LayerSource("beam_prep.codegen.numeric_layers", NUMERIC_LAYER_CLASSES,
                           helpers=("_numeric_ops",)),
    "missing": LayerSource("beam_prep.codegen.missing", (FILL_MISSING_CLASS, INDICATOR_CLASS),
                           helpers=("_missing_mask",)),
    "list": LayerSource("beam_prep.codegen.list_layer", (LIST_LAYER_CLASS, "padded_list"),
                        renamed=(("padded_list", "_padded_list"),)),
    "per_key": LayerSource("beam_prep.codegen.per_key_layer",
                           (PER_KEY_LAYER_CLASS, PER_KEY_COUNT_CLASS), helpers=("_key_tensor",)),
    "per_key_buckets": LayerSource("beam_prep.codegen.per_key_bucket_layer",
                                   (BUCKET_LAYER_CLASS,)),
    "derived": LayerSource("beam_prep.codegen.derived_layer", (DERIVED_LAYER_CLASS,)),
    "keras_model": LayerSource("beam_prep.codegen.keras_model", ("keras_model",)),
}


@functools.lru_cache(maxsize=16)
def definitions(module: str) -> dict[str, str]:
    """Top-level class and function name -> its source text, of undecorated definitions.

    Raises:
        ArtifactError: The module's source file cannot be found.
    """
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


def copied_names(family: str) -> tuple[str, ...]:
    """Every name a family can define in the generated module (helpers first, renamed).

    Example:
        >>> copied_names("list")
        ('ListEncoding', '_padded_list')
    """
    source = LAYER_SOURCES[family]
    renamed = dict(source.renamed)
    return tuple(renamed.get(n, n) for n in (*source.helpers, *source.layers))


def layer_source(family: str, layers: tuple[str, ...] | None = None) -> Code:
    """The source of a family's helpers and the chosen layers, as the generated module has it.

    Args:
        family: A key of :data:`LAYER_SOURCES`.
        layers: The family's layers to copy, in this order (the plan's); None: all of them.

    Returns:
        Python source, definitions separated by two blank lines (empty when ``layers`` is).

    Raises:
        ArtifactError: An unknown family or layer, or a name that is not a plain
            (undecorated) top-level definition of the family's module.
    """
    source = LAYER_SOURCES.get(family)
    chosen = source.layers if source is not None and layers is None else layers or ()
    if source is None or not set(chosen) <= set(source.layers):
        raise ArtifactError(f"No layer source {family!r} with layers {chosen!r}: a bug of "
                            "the code generator, please report it.")
    if not chosen:
        return Code("")
    found = definitions(source.module)
    names = (*source.helpers, *chosen)
    missing = [n for n in names if n not in found]
    if missing:
        raise ArtifactError(f"{source.module} has no plain definition of {missing}: "
                            "reinstall beam_prep.")
    renamed = dict(source.renamed)
    return Code("\n\n\n".join(_renamed(found[n], n, renamed[n]) if n in renamed else found[n]
                               for n in names))


def _renamed(text: str, name: str, new: str) -> str:
    """A definition's text with the name in its header (``def name(``) replaced (only there)."""
    keyword = "class " if text.startswith("class ") else "def "
    if not text.startswith(keyword + name):
        raise ArtifactError(f"The definition of {name} does not start with {keyword}{name}: "
                            "reinstall beam_prep.")
    return keyword + new + text[len(keyword) + len(name):]
