"""Checks that a generated module's copied definitions are the library's, character for character.

``beam-prep generate`` copies beam_prep's own layers and helpers into the module
(``beam_prep.codegen.layer_source``); the runtime twin imports the same definitions. The
oracle here is the library object itself (``inspect.getsource`` of the imported class or
function), not the copying code: a template holding its own copy, a stale or edited copy,
or a copy of the wrong name fails.

Example:
    >>> assert_copied(code, "per_key")                                  # doctest: +SKIP
"""

from __future__ import annotations

import ast
import importlib
import inspect

from beam_prep.codegen.layer_source import LAYER_SOURCES


def top_level_sources(code: str) -> dict[str, str]:
    """Top-level class and function name -> its source text, in a module's text."""
    return {node.name: ast.get_source_segment(code, node) or ""
            for node in ast.parse(code).body
            if isinstance(node, (ast.ClassDef, ast.FunctionDef))}


def assert_copied(code: str, family: str, names: tuple[str, ...] | None = None) -> None:
    """Every definition of ``family`` in ``code`` (or only ``names``) is the library's text.

    Args:
        code: The generated module's source.
        family: A key of ``LAYER_SOURCES``.
        names: The library names the module must define (default: the helpers and all
            layers of the family).
    """
    source = LAYER_SOURCES[family]
    module = importlib.import_module(source.module)
    renamed = dict(source.renamed)
    defined = top_level_sources(code)
    for name in names if names is not None else (*source.helpers, *source.layers):
        want = inspect.getsource(getattr(module, name)).rstrip("\n")
        as_name = renamed.get(name, name)
        if as_name != name:
            keyword = want.split(" ", 1)[0]
            assert want.startswith(f"{keyword} {name}("), want.splitlines()[0]
            want = f"{keyword} {as_name}(" + want[len(f"{keyword} {name}("):]
        assert as_name in defined, f"the module does not define {as_name}"
        assert defined[as_name] == want, f"{as_name} is not {source.module}.{name}"
