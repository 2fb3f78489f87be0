"""Arrow evaluation against hand-computed values (math module and written-out results)."""

from __future__ import annotations

import math
import subprocess
import sys

import pyarrow as pa
import pytest

from beam_prep.errors import InputError
from beam_prep.expr import MISSING_INTEGER, check, parse
from beam_prep.expr.arrow import column_types, evaluate

NAN = float("nan")
INF = float("inf")
BATCH = pa.record_batch({
    "x": pa.array([4.0, 0.0, -1.0, None, NAN, INF], pa.float64()),
    "y": pa.array([2.0, 0.0, 0.0, 1.0, 1.0, -INF], pa.float32()),
    "n": pa.array([3, 0, -1, None, MISSING_INTEGER, 7], pa.int64()),
    "s": pa.array(["  Ab ", "", None, "ΣΑΣ", "a||b|", "İß\u00a0"], pa.string()),
    "t": pa.array(["c|d", "x", "y", "\\", "z", "w"], pa.string()),
})


def run(expr: str) -> list:
    return evaluate(check(parse(expr), column_types(BATCH.schema)), BATCH).to_pylist()


def same(got: list, want: list) -> bool:
    return len(got) == len(want) and all(
        (g is None and w is None) or (g is not None and w is not None and (
            (isinstance(w, float) and math.isnan(w) and math.isnan(g)) or g == w))
        for g, w in zip(got, want))


CASES = [
    ("x + 1", [5.0, 1.0, 0.0, None, NAN, INF]),
    ("x / y", [2.0, NAN, -INF, None, NAN, NAN]),
    ("x - n", [1.0, 0.0, 0.0, None, None, INF]),
    ("x * 0", [0.0, 0.0, -0.0, None, NAN, NAN]),
    ("-n", [-3.0, 0.0, 1.0, None, None, -7.0]),
    ("log1p(x)", [math.log1p(4.0), 0.0, -INF, None, NAN, INF]),
    ("log(x)", [math.log(4.0), -INF, NAN, None, NAN, INF]),
    ("exp(y)", [math.exp(2.0), 1.0, 1.0, math.e, math.e, 0.0]),
    ("sqrt(x)", [2.0, 0.0, NAN, None, NAN, INF]),
    ("abs(n)", [3.0, 0.0, 1.0, None, None, 7.0]),
    ("floor(x / 3)", [1.0, 0.0, -1.0, None, NAN, INF]),
    ("clip(x, 0, 1)", [1.0, 0.0, 0.0, None, NAN, 1.0]),
    ("clip(x, 1, 0)", [0.0, 0.0, 0.0, None, NAN, 0.0]),
    ("minimum(x, y)", [2.0, 0.0, -1.0, None, NAN, -INF]),
    ("maximum(x, n, 0)", [4.0, 0.0, 0.0, None, None, INF]),
    ("lower(s)", ["  ab ", None, None, "ΣΑΣ", "a||b|", "İß\u00a0"]),
    ("upper(s)", ["  AB ", None, None, "ΣΑΣ", "A||B|", "İß\u00a0"]),
    ("strip(s)", ["Ab", None, None, "ΣΑΣ", "a||b|", "İß\u00a0"]),
    ("concat(s, '-', t)", ["  Ab -c|d", None, None, "ΣΑΣ-\\", "a||b|-z", "İß\u00a0-w"]),
    ("cross(t, n)", ["c\\|d|3", "x|0", "y|-1", None, None, "w|7"]),
    ("cross(s, t)", ["  Ab |c\\|d", None, None, "ΣΑΣ|\\\\", "a\\|\\|b\\||z", "İß\u00a0|w"]),
    ("split(s, '|')", [["  Ab "], None, None, ["ΣΑΣ"], ["a", "b"], ["İß\u00a0"]]),
    ("split(t, '|')", [["c", "d"], ["x"], ["y"], ["\\"], ["z"], ["w"]]),
    ("coalesce(x, -5)", [4.0, 0.0, -1.0, -5.0, -5.0, INF]),
    ("coalesce(n, 9)", [3, 0, -1, 9, 9, 7]),
    ("coalesce(n, x)", [3.0, 0.0, -1.0, None, NAN, 7.0]),
    ("coalesce(s, t)", ["  Ab ", "x", "y", "ΣΑΣ", "a||b|", "İß\u00a0"]),
    ("float(n)", [3.0, 0.0, -1.0, None, None, 7.0]),
    ("str(n)", ["3", "0", "-1", None, None, "7"]),
]


@pytest.mark.parametrize("expr,want", CASES)
def test_arrow_values(expr, want):
    got = run(expr)
    assert same(got, want), (expr, got, want)


def test_cross_is_unambiguous_and_decodable():
    batch = pa.record_batch({"a": ["a|b", "a", "a\\", "a", "x\\|y"],
                             "b": ["c", "b|c", "|c", "\\|c", "z"]})
    got = evaluate(check(parse("cross(a, b)"), column_types(batch.schema)), batch).to_pylist()
    assert len(set(got)) == 5
    assert got == ["a\\|b|c", "a|b\\|c", "a\\\\|\\|c", "a|\\\\\\|c", "x\\\\\\|y|z"]


def test_table_input_gives_one_array_and_empty_input_works():
    table = pa.Table.from_batches([BATCH, BATCH])
    tree = check(parse("x + 1"), column_types(BATCH.schema))
    assert evaluate(tree, table).to_pylist()[6:8] == [5.0, 1.0]
    assert len(evaluate(tree, BATCH.slice(0, 0))) == 0
    split = check(parse("split(s, '|')"), column_types(BATCH.schema))
    assert evaluate(split, BATCH.slice(0, 0)).type == pa.list_(pa.string())


def test_absent_column_is_an_input_error():
    tree = check(parse("z + 1"), {"z": "float"})
    with pytest.raises(InputError, match="`z`"):
        evaluate(tree, BATCH)


def test_column_types_from_schema():
    schema = pa.schema([("f", pa.float32()), ("i", pa.int32()), ("s", pa.large_string()),
                        ("l", pa.list_(pa.string())), ("b", pa.bool_())])
    assert column_types(schema) == {"f": "float", "i": "int", "s": "string",
                                    "l": "list_string"}


def test_analysis_side_does_not_import_tensorflow():
    code = ("import sys, beam_prep.expr, beam_prep.expr.arrow; "
            "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_missing_integer_matches_the_layers():
    from beam_prep.codegen.plan import MISSING_INTEGER as LAYERS_MISSING_INTEGER

    assert MISSING_INTEGER == LAYERS_MISSING_INTEGER


def test_regressions_found_by_the_equivalence_tests():
    # Subnormal float64 inputs read as signed zeros, and 3e-308 - 2.5e-308 (a subnormal
    # result) is flushed, as TensorFlow's CPU kernels do; int64 beyond 2**53 rounds to the
    # nearest float64 (tf.cast) instead of failing Arrow's safe cast.
    batch = pa.record_batch({"x": pa.array([5e-324, -1e-310, 3e-308], pa.float64()),
                             "n": pa.array([2**53 + 1, 2**63 - 1, -(2**63) + 1], pa.int64())})
    types = column_types(batch.schema)

    def run_on(expr):
        return evaluate(check(parse(expr), types), batch).to_pylist()

    got = run_on("-x")
    assert got == [0.0, 0.0, -3e-308] and math.copysign(1, got[1]) == 1.0
    assert run_on("x - 2.5e-308")[2] == 0.0
    assert run_on("exp(x - 708.5)") == [0.0, 0.0, 0.0]  # exp(-708.5) = 2.0e-308, subnormal
    assert run_on("float(n)") == [9007199254740992.0, 9223372036854775808.0,
                                  -9223372036854775808.0]
