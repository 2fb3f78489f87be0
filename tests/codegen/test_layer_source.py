"""The one copying mechanism (``beam_prep.codegen.layer_source``), without TensorFlow.

Whether each rendered module's copies are the library's text is checked where such a module
is built (``tests/copied_source.py``: per_key, per_key_buckets, list, derived, numeric,
missing); here: the registry names real definitions that the module's allow-list accepts,
no template carries its own copy of one, and the text is assembled as documented.
"""

from __future__ import annotations

import ast
import glob
import os
import re

import pytest

from beam_prep.codegen import module_check
from beam_prep.codegen.layer_source import LAYER_SOURCES, copied_names, layer_source
from beam_prep.errors import ArtifactError

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "templates")


@pytest.mark.parametrize("family", sorted(LAYER_SOURCES))
def test_every_family_copies_plain_definitions_the_allow_list_accepts(family: str) -> None:
    code = layer_source(family)
    defined = [n.name for n in ast.parse(code).body]
    assert tuple(defined) == copied_names(family)
    assert set(defined) <= module_check.CLASSES | module_check.FUNCTIONS


def test_no_template_defines_a_copied_name() -> None:
    copied = {name for family in LAYER_SOURCES for name in copied_names(family)}
    templates = glob.glob(os.path.join(TEMPLATES, "*.j2"))
    assert templates
    for path in templates:
        with open(path, encoding="utf-8") as f:
            defined = set(re.findall(r"^(?:class|def) ([A-Za-z_][A-Za-z0-9_]*)", f.read(),
                                     re.MULTILINE))
        assert not defined & copied, f"{os.path.basename(path)} defines {defined & copied}"


def test_helpers_first_then_the_chosen_layers_in_order() -> None:
    code = layer_source("numeric", ("PiecewiseLinear", "SignedLog1p"))
    assert [n.name for n in ast.parse(code).body] == [
        "_numeric_ops", "PiecewiseLinear", "SignedLog1p"]
    assert "\n\n\nclass PiecewiseLinear(" in code and "\n\n\n\n" not in code
    assert not code.endswith("\n")  # the template places the blank lines after it
    assert layer_source("numeric", ()) == "" and layer_source("missing", ()) == ""


def test_a_renamed_definition_changes_its_header_only() -> None:
    code = layer_source("list")
    assert "\ndef _padded_list(value: Any, dtype: str, padding: Any) -> Any:\n" in code
    assert "padded_list(" not in code.replace("def _padded_list(", "")


@pytest.mark.parametrize("family,layers", [("nope", None), ("numeric", ("FillMissing",)),
                                           ("per_key", ("PerKeyBucketize",))])
def test_unknown_family_or_layer_is_refused(family: str, layers: tuple[str, ...] | None) -> None:
    with pytest.raises(ArtifactError, match="No layer source"):
        layer_source(family, layers)
