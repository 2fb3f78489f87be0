"""User text never becomes code in the generated module (issue 21 item 1).

Every value that comes from the spec, the manifest or the command line (expressions, column
names, default values, mask tokens, paths, the fingerprint) is written into the module as a
Python literal, or into a comment/docstring only with every line terminator escaped. The
checks here are independent of the renderer's own guard (``beam_prep.codegen.escape``):

* planted code behind a line terminator inside ``expr:`` (spec route and edited-manifest
  route) is not executed on import;
* for hostile strings in every rendered field the module's AST has the same shape as for
  harmless strings (only string constants differ), its top level is an allow-list of
  imports, constant assignments and definitions, each hostile string comes back as a
  constant, and the text holds no raw line terminator other than ``\\n``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beam_prep.codegen import module_check
from beam_prep.codegen.render import render_module
from beam_prep.input_names import input_name
from beam_prep.io.contract.artifacts import Artifacts, manifest_fingerprint
from tests.codegen.artifact_fixtures import write_artifacts

# Every character Python's tokenizer or str.splitlines() takes as a line end, and friends.
TERMINATORS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85",
               "\u2028", "\u2029"]
NASTY = TERMINATORS + ["'", '"', "'''", '"""', "\\", "{{", "}}", "{%", "%}", "{#", "#",
                       "\x00", "\t", "é", "\U0001f600", "\u202e", "\u2066", "\u200b"]
# Line terminators Python itself ends a comment at (the others only fool splitlines()).
PYTHON_NEWLINES = {"LF": "\n", "CR": "\r", "CRLF": "\r\n"}


def _payload(marker: str) -> str:
    return f"__import__('pathlib').Path({marker!r}).write_text('pwned')"


def _planted_expr(newline: str, marker: str) -> str:
    """A valid expression whose triple-quoted literal holds a line of planted code."""
    return f'coalesce(town, """x{newline}{_payload(marker)}{newline}#""")'


def _derived_spec(expr: str) -> dict[str, Any]:
    return {"features": [{"name": "city", "kind": "string", "expr": expr}]}


def _exec_module(code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "bp_generated_injection"}
    exec(compile(code, "<generated>", "exec"), namespace)  # noqa: S102 - the test's subject
    return namespace


@pytest.mark.parametrize("newline", list(PYTHON_NEWLINES.values()), ids=list(PYTHON_NEWLINES))
def test_newline_in_expr_literal_does_not_run_on_import(newline: str, tmp_path) -> None:
    marker = str(tmp_path / "PWNED")
    art = write_artifacts(str(tmp_path / "art"), _derived_spec(_planted_expr(newline, marker)),
                          {"town": ["a", None]})
    code = render_module(Artifacts(art))
    _exec_module(code)
    assert not os.path.exists(marker), "importing the generated module ran planted code"
    assert "\r" not in code


def test_edited_manifest_with_recomputed_fingerprint_is_rendered_safely(tmp_path) -> None:
    """The manifest route: same expression planted after the analysis, fingerprint redone."""
    from beam_prep.codegen import cli

    marker = str(tmp_path / "PWNED")
    art = write_artifacts(str(tmp_path / "art"), _derived_spec("lower(town)"),
                          {"town": ["a", "b"]})
    path = os.path.join(art, "manifest.json")
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["spec"]["features"][0]["expr"] = _planted_expr("\r\n", marker)
    manifest["spec"]["features"][0]["default_value"] = "d\n" + _payload(marker)
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    out = str(tmp_path / "preprocessing.py")
    assert cli.main(["--artifacts", art, "--output", out, "--quiet"]) == 0
    with open(out, encoding="utf-8", newline="") as f:
        code = f.read()
    namespace = _exec_module(code)
    assert not os.path.exists(marker), "importing the generated module ran planted code"
    assert namespace["DEFAULT_VALUES"] == {"city": "d\n" + _payload(marker)}


# --- the AST checks ------------------------------------------------------------------------

# The allow-lists are the product's (one place to extend); the walk below is the test's own.
_IMPORTS, _CONSTANTS = module_check.IMPORTS, module_check.CONSTANTS
_CLASSES, _FUNCTIONS = module_check.CLASSES, module_check.FUNCTIONS
_FEATURE_FUNCTION = re.compile(r"(build_[A-Za-z_][A-Za-z0-9_]*_layers|derive_[A-Za-z_]\w*)")
_DATA = (ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.Name, ast.UnaryOp, ast.USub,
         ast.Load, ast.Store)


def assert_top_level_allow_list(tree: ast.Module) -> None:
    """Only a docstring, the known imports, data constants and known definitions."""
    for i, node in enumerate(tree.body):
        where = f"line {getattr(node, 'lineno', '?')}: {ast.dump(node)[:120]}"
        if isinstance(node, ast.Expr):
            assert i == 0 and isinstance(node.value, ast.Constant), where
        elif isinstance(node, ast.Import):
            assert all((a.name, None) in _IMPORTS for a in node.names), where
        elif isinstance(node, ast.ImportFrom):
            assert all((node.module, a.name) in _IMPORTS for a in node.names), where
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assert all(isinstance(t, ast.Name) and t.id in _CONSTANTS for t in targets), where
            assert all(isinstance(n, _DATA) for n in ast.walk(node.value)), where
        elif isinstance(node, ast.ClassDef):
            assert node.name in _CLASSES and not node.decorator_list, where
            for item in node.body:
                assert isinstance(item, (ast.FunctionDef, ast.Expr)), where
                if isinstance(item, ast.Expr):
                    assert isinstance(item.value, ast.Constant), where
                else:
                    assert not item.decorator_list, where
        elif isinstance(node, ast.FunctionDef):
            assert node.name in _FUNCTIONS or _FEATURE_FUNCTION.fullmatch(node.name), where
            assert not node.decorator_list, where
            defaults = node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            assert all(isinstance(n, _DATA) for d in defaults for n in ast.walk(d)), where
        else:
            raise AssertionError(f"unexpected top-level statement, {where}")


def _shape(tree: ast.AST) -> str:
    """The AST with every string constant blanked: what must not depend on user text."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = "S"
    return ast.dump(tree)


def _string_constants(tree: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}


def _fields_spec(text: str, literal: str) -> dict[str, Any]:
    """A spec carrying ``text`` in every free-text field the generated module shows."""
    return {"features": [
        {"name": "country", "kind": "string", "column": "c" + text, "default_value": text,
         "mask_token": "m" + text},
        {"name": "city", "kind": "string", "expr": f"coalesce(town, {literal})",
         "default_value": "d" + text},
        {"name": "shop", "kind": "integer", "column": "s" + text, "default_value": 7},
        {"name": "title", "kind": "text", "column": "t" + text, "default_value": "x" + text},
        {"name": "price", "kind": "numeric", "column": "p" + text, "default_value": 1.5},
        {"name": "pair", "kind": "hashed", "num_bins": 8, "cross": ["a" + text, "b" + text]},
        {"name": "tags", "kind": "string", "expr": f"split(town, {literal})"},
    ]}


def _render_fields(tmp: str, text: str, literal: str) -> tuple[str, str]:
    art = write_artifacts(tmp, _fields_spec(text, literal), {})
    return render_module(Artifacts(art), default_artifacts_dir="dir" + text), art


_BENIGN_SHAPES: dict[bool, str] = {}


def _benign_shape(tmp_path, renamed: bool) -> str:
    """The shape of the module rendered from benign text (the same for every hostile text
    with the same ``renamed``: rendered once per module run)."""
    if renamed not in _BENIGN_SHAPES:
        benign, _ = _render_fields(str(tmp_path / "benign"), " q" if renamed else "q", '"q"')
        _BENIGN_SHAPES[renamed] = _shape(ast.parse(benign))
    return _BENIGN_SHAPES[renamed]


def _check_rendered(tmp_path, text: str, literal: str) -> None:
    value = ast.literal_eval(literal)
    code, _ = _render_fields(str(tmp_path / "hostile"), text, literal)
    # A column that is no valid input name adds the fixed `keras_model` helper (a switch on
    # the spec, like `has_lists`; docs/generated_layers.md): the benign text renames too then.
    renamed = any(input_name(p + text) != p + text for p in "cstpab")
    tree = ast.parse(code)
    assert_top_level_allow_list(tree)
    constants = _string_constants(tree)
    assert _shape(ast.parse(code)) == _benign_shape(tmp_path, renamed)
    for expected in ["c" + text, text, "m" + text, "d" + text, "s" + text, "t" + text,
                     "x" + text, "p" + text, "a" + text, "b" + text, "dir" + text, value]:
        assert expected in constants, f"{expected!r} is not a constant of the module"
    # No raw line terminator but LF, no NUL, no invisible or bidi control character.
    raw = sorted({c for c in code if not c.isprintable() and c != "\n"})
    assert not raw, f"raw non-printable characters in the module: {raw!r}"


@pytest.mark.parametrize("nasty", NASTY, ids=[repr(n) for n in NASTY])
def test_every_rendered_field_is_a_literal(nasty: str, tmp_path) -> None:
    text = f"a{nasty}{_payload(str(tmp_path / 'PWNED'))}{nasty}#"
    _check_rendered(tmp_path, text, repr(text))
    if all(c not in nasty for c in "\\\x00\"") and '"""' not in text:
        # The expression as the user may write it: the raw characters inside the literal.
        _check_rendered(tmp_path, text, f'"""{text}"""')


_ALPHABET = st.sampled_from(NASTY + list(string.ascii_letters[:6]) + [" ", "(", ")"])


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(_ALPHABET, min_size=1, max_size=8))
def test_fuzz_every_rendered_field(pieces: list[str], tmp_path) -> None:
    text = "".join(pieces)
    _check_rendered(tmp_path, text, repr(text))
    if all(c not in text for c in "\\\x00\"\r"):
        _check_rendered(tmp_path, text, f'"""{text}"""')


def test_templates_cannot_print_unescaped_text() -> None:
    """A future template edit printing a raw value fails at generation, not in the module."""
    from beam_prep.codegen.render import _environment

    env = _environment()
    with pytest.raises(TypeError, match="without escaping"):
        env.from_string("# {{ x }}").render(x="a\nimport os")
    with pytest.raises(TypeError, match="without escaping"):
        env.from_string("N = {{ n }}").render(n=3)
    assert env.from_string("# {{ x | comment }}").render(x="a\nb") == "# a\\nb"


@pytest.mark.parametrize("planted", [
    "import subprocess\n", "os.system('x')\n", "X = open('f')\n", "if True:\n    pass\n",
    "@staticmethod\ndef build_x_layers():\n    pass\n", "def f(a=print()):\n    pass\n",
    "class FillMissing:\n    print()\n", "INPUT_DTYPES = dict()\n", "x = 1\r",
    "# a\u2028b\n", "# a\u202eb\n",
    # A base class expression runs on import (found by the hostile review: was accepted).
    "class FillMissing(__import__('os').system('x') or object):\n    \"\"\"D.\"\"\"\n",
    "class FillMissing(os.environ['X'] or object):\n    def f(self):\n        pass\n",
    # A relative import reads a sibling file of the module (was accepted: names only).
    "from . import os\n", "from .. import json\n",
])
def test_module_check_refuses_code_beyond_definitions(planted: str) -> None:
    from beam_prep.codegen.module_check import check_module
    from beam_prep.errors import ArtifactError

    ok = '"""Doc."""\n\nfrom __future__ import annotations\n\nimport os\n\nSTAGES = ("a",)\n'
    check_module(ok)
    with pytest.raises(ArtifactError, match="generated module is refused"):
        check_module(ok + planted)


@pytest.mark.parametrize("body", [
    "    v0 = inputs['a']\n    v1 = __import__('os')\n    return v1",
    "    v0 = inputs['a'].numpy()\n    return v0",
    "    v0 = inputs[print()]\n    return v0",
    "    x = inputs['a']\n    return x",
    "    v0 = tf.constant(1, tf.int64)\n    return lambda: v0",
])
def test_derived_function_check_refuses_other_shapes(body: str) -> None:
    from beam_prep.codegen.module_check import check_derived_function
    from beam_prep.errors import ArtifactError

    check_derived_function("def derive_a(inputs):\n    v0 = tf.strings.lower(inputs['a'])\n"
                           "    return v0", "derive_a")
    with pytest.raises(ArtifactError, match="generated module is refused"):
        check_derived_function("def derive_a(inputs):\n" + body, "derive_a")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), b"x", [1], {}])
def test_literal_refuses_what_is_not_a_plain_finite_literal(value) -> None:
    from beam_prep.codegen.escape import literal
    from beam_prep.errors import ArtifactError

    with pytest.raises(ArtifactError, match="cannot be written into the generated module"):
        literal(value)


@pytest.mark.parametrize("value", ["", "\x00", "a\u2028b", "\ud800", "\\'\"", 0, -1, 2**70,
                                   -0.0, 1e-320, True, None])
def test_literal_reads_back_as_the_value(value) -> None:
    from beam_prep.codegen.escape import literal

    source = literal(value)
    back = ast.literal_eval(source)
    assert type(back) is type(value) and repr(back) == repr(value)
    assert source.isprintable()


def test_end_to_end_spec_analyze_generate_import(tmp_path) -> None:
    """spec -> analyze -> generate -> import: no side effect, and the layers still work."""
    pytest.importorskip("tensorflow")
    import numpy as np
    from beam_prep.pipelines import analyze

    from beam_prep.codegen import cli
    from tests.codegen.conftest import import_module_from

    marker = str(tmp_path / "PWNED")
    literal = f"none\r{_payload(marker)}\r#"
    expr = f'coalesce(town, """{literal}""")'
    (tmp_path / "spec.yaml").write_text(json.dumps(_derived_spec(expr)), encoding="utf-8")
    (tmp_path / "data.csv").write_text("town\nBerlin\nParis\nBerlin\n\n", encoding="utf-8")
    art = str(tmp_path / "artifacts")
    analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", str(tmp_path / "data.csv"),
                 "--output", art])
    out = str(tmp_path / "preprocessing.py")
    assert cli.main(["--artifacts", art, "--output", out, "--quiet"]) == 0
    module = import_module_from(out, "bp_generated_injection_e2e")
    assert not os.path.exists(marker), "importing the generated module ran planted code"
    # The expression keeps its value: Python reads the CRs of the literal as newlines.
    derived = module.derive_city({"town": np.array([["Berlin"], [""]], object)})
    assert [v.decode() for v in derived.numpy()[:, 0]] == ["Berlin", ast.literal_eval(
        f'"""{literal}"""')]
    with open(os.path.join(art, "vocab", "city.txt"), encoding="utf-8") as f:
        vocabulary = f.read().splitlines()
    encoded = module.make_dataset_fn(art)({"town": np.array([["Paris"], ["Berlin"], ["x"]],
                                                            object)})
    # num_oov_indices=1: OOV is 0, the vocabulary starts at 1.
    expected = [1 + vocabulary.index("Paris"), 1 + vocabulary.index("Berlin"), 0]
    assert encoded["city"].numpy()[:, 0].tolist() == expected
    assert not os.path.exists(marker)


_MANIFEST_EDITS = {
    "sha256": ("country", "files", "vocabulary", "sha256"),
    "path": ("country", "files", "vocabulary", "path"),
    "bytes": ("country", "files", "vocabulary", "bytes"),
    "mean": ("age", "stats", "mean"),
    "min": ("age", "stats", "min"),
    "max": ("age", "stats", "max"),
    "boundaries": ("price", "stats", "boundaries"),
    "vocabulary_size": ("country", "stats", "vocabulary_size"),
    "document_count": ("review", "stats", "document_count"),
    "column": ("spec", "country", "column"),
    "mask_token": ("spec", "title", "mask_token"),
}


@pytest.mark.parametrize("field", list(_MANIFEST_EDITS))
def test_hostile_manifest_values_are_refused_or_inert(field: str, all_kinds_artifacts: str,
                                                      tmp_path) -> None:
    """Any manifest value (fingerprint recomputed) is refused or rendered as a literal.

    Raw ValueErrors for wrong types (a string as ``bytes``) are issue 21 item 5's (manifest
    validation); here only "no code from the manifest runs" is checked.
    """
    import shutil

    from beam_prep.errors import BeamPrepError

    marker = str(tmp_path / "PWNED")
    hostile = "vocab/x\r\n" + _payload(marker) + "\n#"
    art = str(tmp_path / "art")
    shutil.copytree(all_kinds_artifacts, art)
    path = os.path.join(art, "manifest.json")
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    *keys, last = _MANIFEST_EDITS[field]
    if keys[0] == "spec":
        features = {f["name"]: f for f in manifest["spec"]["features"]}
        features[keys[1]][last] = hostile
    else:
        entry = manifest["features"]
        for key in keys:
            entry = entry[key]
        entry[last] = [hostile] if field == "boundaries" else hostile
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    try:
        code = render_module(Artifacts(art))  # verify=False: reach the renderer if possible
    except (BeamPrepError, ValueError, TypeError, KeyError):
        return
    tree = ast.parse(code)
    assert_top_level_allow_list(tree)
    assert "\r" not in code
    _exec_module(code)
    assert not os.path.exists(marker)


@pytest.mark.parametrize("golden", ["preprocessing_all_kinds.py", "preprocessing_defaults.py"])
def test_golden_modules_pass_the_allow_list(golden: str) -> None:
    """The committed goldens (every kind, tf_idf, buckets, defaults) have only allowed shapes."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden", golden)
    with open(path, encoding="utf-8") as f:
        code = f.read()
    assert_top_level_allow_list(ast.parse(code))
    module_check.check_module(code)
