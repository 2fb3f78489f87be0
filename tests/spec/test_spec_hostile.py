"""Hostile spec values (issue 21 item 6): each is a SpecError naming field, value and fix.

Before the fixes, large integers passed validation and failed late (overflow in numpy/TF, a
bad_alloc in the quantile sketch), a YAML alias bomb made a message of hundreds of MB, and the
expression parser raised RecursionError / let lone surrogates and NFKC-normalised names through.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from beam_prep.config.build import MAX_SHOWN, shown
from beam_prep.errors import SpecError
from beam_prep.expr import check, parse
from beam_prep.expr.arrow import column_types, evaluate
from beam_prep.expr.parse import MAX_DEPTH
from beam_prep.spec import Spec

BIG = 10**23  # beyond int64 (9.2e18)

# (feature entry, field, the words of the fix that must appear)
HOSTILE = [
    ("{name: a, kind: string, min_count: 1e23}", "min_count", "1.0e+23 with a dot"),
    ("{name: a, kind: string, min_count: 1.0e+23}", "min_count", "not an integer"),
    (f"{{name: a, kind: string, min_count: {BIG}}}", "min_count", "int64 range"),
    ("{name: a, kind: text, ngrams: 1e23}", "ngrams", "YAML reads a number"),
    (f"{{name: a, kind: text, ngrams: {BIG}}}", "ngrams", "int64 range"),
    ("{name: a, kind: text, ngrams: 17}", "ngrams", "no larger than 16"),
    ("{name: a, kind: numeric, num_buckets: 100000000}", "num_buckets",
     "no larger than 1,000,000"),
    ("{name: a, kind: numeric, num_buckets: 10, epsilon: 1.0e-300}", "epsilon", "[1e-06, 1)"),
    ("{name: a, kind: numeric, num_buckets: 10, epsilon: 1e-300}", "epsilon",
     "YAML reads a number"),
    (f"{{name: a, kind: integer, default_value: {BIG}}}", "default_value", "int64 range"),
    (f"{{name: a, kind: integer, default_value: -{BIG}}}", "default_value", "int64 range"),
    (f"{{name: a, kind: integer, mask_token: {2**63}}}", "mask_token", "int64 range"),
    ("{name: a, kind: string, num_oov_indices: 1e23}", "num_oov_indices", "YAML reads"),
    (f"{{name: a, kind: string, num_oov_indices: {2**40}}}", "num_oov_indices",
     "no larger than 2,147,483,647"),
    (f"{{name: a, kind: hashed, num_bins: {2**31}}}", "num_bins", "int32"),
    (f"{{name: a, kind: hashed, num_bins: 8, salt: {BIG}}}", "salt", "int64 range"),
    (f"{{name: a, kind: text, max_tokens: {2**31}}}", "max_tokens", "int32"),
    (f"{{name: a, kind: string, shape: list, max_values: {2**31}}}", "max_values", "int32"),
    (f"{{name: a, kind: numeric, default_value: {10**400}}}", "default_value", "float64 range"),
    ('{name: a, kind: string, default_value: "\\ud800"}', "default_value", "lone surrogate"),
]


def _load(entry: str) -> Spec:
    return Spec.from_yaml_text(f"features:\n  - {entry}\n")


@pytest.mark.parametrize(("entry", "field", "fix"), HOSTILE)
def test_hostile_value_is_a_spec_error_naming_field_value_and_fix(entry, field, fix):
    with pytest.raises(SpecError) as e:
        _load(entry)
    message = str(e.value)
    assert f"`{field}` must be" in message and f"Received: {field}=" in message
    assert fix in message
    assert len(message) < 700


@pytest.mark.parametrize("entry", [
    "{name: a, kind: numeric, num_buckets: 1000000, epsilon: 1.0e-6}",
    f"{{name: a, kind: integer, default_value: {2**63 - 1}, mask_token: {-(2**63)}}}",
    "{name: a, kind: text, ngrams: 16}",
    f"{{name: a, kind: hashed, num_bins: {2**31 - 1}, salt: {2**63 - 1}}}",
])
def test_the_bounds_themselves_are_accepted(entry):
    _load(entry)


def _bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]"
              for i in range(1, levels + 1)]
    lines.append(f"features: [{{name: x, kind: numeric, num_buckets: *a{levels}}}]")
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_is_refused_quickly_with_a_short_message():
    start = time.monotonic()
    with pytest.raises(SpecError) as e:  # 9**6 = 531,441 strings once expanded
        Spec.from_yaml_text(_bomb(6))
    assert time.monotonic() - start < 5
    assert "aliases" in str(e.value) and "100,000" in str(e.value)
    assert len(str(e.value)) < 400


def test_a_billion_laughs_is_refused_without_expanding_it():
    start = time.monotonic()
    with pytest.raises(SpecError, match="aliases"):
        Spec.from_yaml_text(_bomb(9))  # 9**9 = 387M strings: never built
    assert time.monotonic() - start < 5


def test_a_few_aliases_still_work():
    text = ("features:\n  - &b {name: a, kind: string, top_k: 3}\n"
            "  - {<<: *b, name: c}\n")
    spec = Spec.from_yaml_text(text)
    assert spec.names() == ("a", "c") and spec.feature("c").top_k == 3


def test_echoed_values_are_capped():
    with pytest.raises(SpecError) as e:
        _load("{name: a, kind: string, top_k: '" + "x" * 100_000 + "'}")
    assert len(str(e.value)) < 2 * MAX_SHOWN + 100
    with pytest.raises(SpecError) as e:  # an unknown key that is huge: did-you-mean capped
        _load("{name: a, kind: string, " + "top_kk" * 10_000 + ": 1}")
    assert len(str(e.value)) < 3 * MAX_SHOWN + 200
    assert len(shown([[1] * 10] * 10**6)) <= MAX_SHOWN


# --- expression parser -----------------------------------------------------------------


def _spec_error(expr: str) -> str:
    with pytest.raises(SpecError) as e:
        _load("{name: f, kind: numeric, expr: '" + expr + "'}")
    assert len(str(e.value)) < 700
    return str(e.value)


def test_a_999_term_sum_is_a_spec_error_not_a_recursion_error():
    assert "nests more than 100 levels" in _spec_error("+".join(["x"] * 999))


def test_1990_unary_minus_is_a_spec_error_not_a_recursion_error():
    assert "nests more than 100 levels" in _spec_error("-" * 1990 + "x")


def test_deep_parentheses_are_a_spec_error():
    message = _spec_error("(" * 300 + "x" + ")" * 300)
    assert "nests" in message or "not a Python expression" in message


def test_the_deepest_allowed_expression_parses_types_and_evaluates():
    expr = "+".join(["x"] * MAX_DEPTH)  # MAX_DEPTH terms: MAX_DEPTH - 1 levels of BinOp
    batch = pa.record_batch({"x": pa.array([1.5, 2.0])})
    got = evaluate(check(parse(expr), column_types(batch.schema)), batch).to_pylist()
    assert got == [1.5 * MAX_DEPTH, 2.0 * MAX_DEPTH]


def test_a_lone_surrogate_in_a_string_literal_is_a_spec_error():
    with pytest.raises(SpecError, match="lone surrogate"):
        _load("{name: f, kind: string, expr: 'concat(c, \"\\ud800\")'}")


def test_a_lone_surrogate_in_the_expression_text_is_a_spec_error():
    with pytest.raises(SpecError, match="lone surrogate"):
        parse("concat(c, '\ud800')", feature="f")


def test_a_fullwidth_identifier_does_not_read_the_ascii_column():
    message = _spec_error("\uff58 + 1")  # fullwidth x
    assert "NFKC" in message and "`x`" in message


def test_an_identifier_unchanged_by_nfkc_is_still_a_column():
    tree = parse("größe + 1")
    assert tree.args[0].name == "größe"


# --- the same through the command line: one line, exit 1, no traceback --------------------

CLI_CASES = [entry for entry, _, _ in HOSTILE] + [
    "{name: f, kind: numeric, expr: '" + "+".join(["x"] * 999) + "'}",
    "{name: f, kind: numeric, expr: '" + "-" * 1990 + "x'}",
    "{name: f, kind: numeric, expr: '\uff58 + 1'}",
]


@pytest.mark.parametrize("entry", CLI_CASES + ["<bomb>"], ids=range(len(CLI_CASES) + 1))
def test_a_hostile_spec_is_one_line_from_the_cli(tmp_path, capsys, entry):
    from beam_prep import cli

    spec = tmp_path / "spec.yaml"
    spec.write_text(_bomb(6) if entry == "<bomb>" else f"features:\n  - {entry}\n")
    (tmp_path / "d.csv").write_text("x,a\n1,b\n")
    code = cli.main(["analyze", "--spec", str(spec), "--input", str(tmp_path / "d.csv"),
                     "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 800, err
    assert err.startswith("beam-prep analyze: error: ")
