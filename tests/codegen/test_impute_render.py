"""A hostile most frequent token becomes the imputed value: rendered as an inert literal."""

from __future__ import annotations

import ast
import os

import pytest

from beam_prep.codegen.module_check import check_module
from beam_prep.codegen.render import render_module
from beam_prep.io.contract.artifacts import LINE_BREAK_CHARS, Artifacts
from tests.codegen.artifact_fixtures import write_artifacts
from tests.codegen.test_injection import NASTY, _payload

WRITABLE = [n for n in NASTY if not any(c in n for c in LINE_BREAK_CHARS) and n]


@pytest.mark.parametrize("nasty", WRITABLE, ids=[repr(n) for n in WRITABLE])
def test_hostile_imputed_token_is_a_literal(nasty: str, tmp_path) -> None:
    marker = str(tmp_path / "PWNED")
    token = f"a{nasty}{_payload(marker)}{nasty}#"
    spec = {"features": [{"name": "c", "kind": "string", "impute": "most_frequent",
                          "missing_indicator": True}]}
    art = write_artifacts(str(tmp_path / "art"), spec, {"c": [token, token, "x", None]})
    assert Artifacts(art).stats("c")["imputed_value"] == token
    code = render_module(Artifacts(art))
    check_module(code)
    tree = ast.parse(code)
    (values,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                 and n.targets[0].id == "DEFAULT_VALUES"]
    assert ast.literal_eval(values) == {"c": token}
    # No raw non-printable character in the module (the token's are escaped in the literal).
    assert not [c for c in code if not c.isprintable() and c != "\n"]
    assert not os.path.exists(marker)
