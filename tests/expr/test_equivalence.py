"""Arrow and TensorFlow evaluations agree, for every function, on random inputs.

Rows hold the edge cases on purpose: nulls, NaN, ±inf, ±0, negatives, huge values,
MISSING_INTEGER, empty and blank strings, separators, backslashes and non-ASCII text
('ΣΑΣ', 'İ', 'ß'). The Arrow input has nulls; the TF input has the layer's markers in
their place (NaN, MISSING_INTEGER, ""), and Arrow's null results are compared as those
markers (an empty list for ``split``). Floats must agree to 1e-12 relative (exactly, in
practice, except for log/exp, whose libm may differ in the last bit).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from beam_prep.expr import MISSING_INTEGER, check, parse
from beam_prep.expr import arrow as arrow_side
from beam_prep.expr import tf as tf_side
from tests.fuzzing import examples

COLUMNS = {"a": "float", "b": "float", "c": "float", "i": "int", "j": "int",
           "s": "string", "t": "string"}

FLOATS = st.one_of(
    st.none(),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, float("nan"), float("inf"),
                     float("-inf"), 1e308, -1e308, 5e-324, -1e-310, 2.2250738585072014e-308,
                     3e-308, 709.0, 710.0, -745.0, -708.5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-50, max_value=50),
)
INTS = st.one_of(
    st.none(),
    st.sampled_from([0, 1, -1, 2**53 + 1, 2**63 - 1, MISSING_INTEGER, MISSING_INTEGER + 1]),
    st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1),
    st.integers(min_value=-5, max_value=5),
)
TEXT_ALPHABET = st.sampled_from(list("aAzZ09 |\\-_.\t\n\r\x0b\x0c") +
                                ["Σ", "ς", "σ", "İ", "ı", "ß", "ẞ", "é", "\u00a0", "\u2003",
                                 "\x85", "ﬃ", "日", "😀", "\x00"])
STRINGS = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "\t\n", "|", "||", "a||b|", "\\", "\\|", "ΣΑΣ", "İ", "ß",
                     " Straße ", "\u00a0x\u00a0"]),
    st.text(alphabet=TEXT_ALPHABET, max_size=8),
    st.text(max_size=6),
)

EXPRESSIONS = [
    "a + b", "a - b", "a * b", "a / b", "-a", "a + i", "i / j", "a * 2.5 - 1",
    "log1p(a)", "log(a)", "exp(a)", "sqrt(a)", "abs(a)", "floor(a)",
    "log1p(i)", "sqrt(i)", "abs(i)", "floor(a / 3)",
    "clip(a, b, c)", "clip(a, -1, 1)", "clip(i, 0, 100)",
    "minimum(a, b)", "minimum(a, b, c)", "minimum(i, 0.5)",
    "maximum(a, b)", "maximum(a, i, 0)",
    "lower(s)", "upper(s)", "strip(s)", "lower(strip(s))",
    "concat(s, t)", "concat(s, '-', t)", "concat(strip(s), t)",
    "cross(s, t)", "cross(s, i)", "cross(i, j, t)",
    "split(s, '|')", "split(s, ' ')", "split(s, 'a|')",
    "coalesce(a, b)", "coalesce(a, 0)", "coalesce(i, j)", "coalesce(i, -1)",
    "coalesce(i, a)", "coalesce(s, t)", "coalesce(s, 'none')", "coalesce(strip(s), 'x')",
    "float(i)", "float(a)", "str(i)", "concat(str(i), s)", "log1p(a) / (i + 1)",
]


def rows(n: int):
    return st.fixed_dictionaries({
        "a": st.lists(FLOATS, min_size=n, max_size=n),
        "b": st.lists(FLOATS, min_size=n, max_size=n),
        "c": st.lists(FLOATS, min_size=n, max_size=n),
        "i": st.lists(INTS, min_size=n, max_size=n),
        "j": st.lists(INTS, min_size=n, max_size=n),
        "s": st.lists(STRINGS, min_size=n, max_size=n),
        "t": st.lists(STRINGS, min_size=n, max_size=n),
    })


# Shrinking re-runs TensorFlow hundreds of times; the failing example is printed unshrunk.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
DATA = st.integers(min_value=1, max_value=12).flatmap(rows)
_ARROW_TYPES = {"float": pa.float64(), "int": pa.int64(), "string": pa.string()}
_MARKERS = {"float": float("nan"), "int": MISSING_INTEGER, "string": ""}
_TF_TYPES = {"float": tf.float64, "int": tf.int64, "string": tf.string}


def arrow_batch(data: dict) -> pa.RecordBatch:
    return pa.record_batch({k: pa.array(v, _ARROW_TYPES[COLUMNS[k]]) for k, v in data.items()})


def tf_inputs(data: dict) -> dict:
    out = {}
    for k, values in data.items():
        t = COLUMNS[k]
        filled = [_MARKERS[t] if v is None else v for v in values]
        if t == "string":
            filled = [v.encode("utf-8") for v in filled]
        out[k] = tf.constant(filled, _TF_TYPES[t])
    return out


def assert_same(tree, arrow_values: pa.Array, tf_values) -> None:
    if tree.type == "list_string":
        want = [[] if row is None else [v.encode("utf-8") for v in row]
                for row in arrow_values.to_pylist()]
        assert tf_values.to_list() == want
        return
    got = tf_values.numpy().tolist()
    want = [_MARKERS[tree.type] if v is None else v for v in arrow_values.to_pylist()]
    if tree.type == "string":
        assert got == [w.encode("utf-8") for w in want]
    elif tree.type == "int":
        assert got == want
    else:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if math.isnan(w) or math.isinf(w) or w == 0:
                assert (math.isnan(g) and math.isnan(w)) or g == w, (got, want)
            else:
                assert math.isclose(g, w, rel_tol=1e-12, abs_tol=0.0), (got, want)


@pytest.mark.parametrize("expr", EXPRESSIONS)
@settings(max_examples=examples(12), deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=DATA)
def test_arrow_and_tf_agree(expr, data):
    tree = check(parse(expr), COLUMNS)
    assert_same(tree, arrow_side.evaluate(tree, arrow_batch(data)),
                tf_side.evaluate(tree, tf_inputs(data)))


@settings(max_examples=examples(40), deadline=None)
@given(a=st.lists(st.tuples(STRINGS, STRINGS), min_size=2, max_size=2))
def test_cross_is_injective(a):
    data = {"s": [p[0] for p in a], "t": [p[1] for p in a]}
    batch = pa.record_batch({k: pa.array(v, pa.string()) for k, v in data.items()})
    got = arrow_side.evaluate(check(parse("cross(s, t)"), COLUMNS), batch).to_pylist()
    missing = [None in p or "" in p for p in a]
    assert [g is None for g in got] == missing
    if not any(missing):
        assert (got[0] == got[1]) == (a[0] == a[1])


def test_float32_inputs_give_the_float64_result_of_their_values():
    tree = check(parse("a / (b + 1)"), COLUMNS)
    x = np.array([1.1, 2.2, np.nan], np.float32)
    y = np.array([0.3, -1.0, 1.0], np.float32)
    got = tf_side.evaluate(tree, {"a": tf.constant(x), "b": tf.constant(y)}).numpy()
    with np.errstate(divide="ignore"):
        want = x.astype(np.float64) / (y.astype(np.float64) + 1)
    np.testing.assert_array_equal(got, want)
