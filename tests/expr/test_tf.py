"""The TF side: rendered code = evaluator, tf.data, SavedModel round trip, hand values."""

from __future__ import annotations

import math

import pytest
import tensorflow as tf

from beam_prep.expr import MISSING_INTEGER, check, parse
from beam_prep.expr import arrow as arrow_side
from beam_prep.expr import tf as tf_side

COLUMNS = {"price": "float", "qty": "int", "city": "string", "country": "string",
           "device": "string", "tags": "string"}
INPUTS = {
    "price": tf.constant([10.0, float("nan"), 0.0, -3.0], tf.float32),
    "qty": tf.constant([4, 1, MISSING_INTEGER, -1], tf.int64),
    "city": tf.constant([" Berlin ", "PARIS", "", "\tRoma\n"]),
    "country": tf.constant(["DE", "FR", "IT", ""]),
    "device": tf.constant(["mobile", "desk|top", "tv", "tv"]),
    "tags": tf.constant(["a|b", "", "||c", "d"]),
}
EXPECTED = {
    "log1p(price)": [math.log1p(10.0), math.nan, 0.0, math.nan],
    "price / (qty + 1)": [2.0, math.nan, math.nan, -math.inf],
    "lower(strip(city))": [b"berlin", b"paris", b"", b"roma"],
    "cross(country, device)": [b"DE|mobile", b"FR|desk\\|top", b"IT|tv", b""],
    "concat(country, '-', str(qty))": [b"DE-4", b"FR-1", b"", b""],
    "coalesce(qty, 0)": [4, 1, 0, -1],
    "clip(price, 0, 5)": [5.0, math.nan, 0.0, 0.0],
    "split(tags, '|')": [[b"a", b"b"], [], [b"c"], [b"d"]],
}


def values(t):
    return t.to_list() if isinstance(t, tf.RaggedTensor) else t.numpy().tolist()


def same(got, want):
    # Floats to 1e-12 relative: TF's log1p may differ from libm's in the last bit.
    def equal(g, w):
        if isinstance(w, float) and math.isfinite(w):
            return math.isclose(g, w, rel_tol=1e-12)
        return (isinstance(w, float) and math.isnan(w) and math.isnan(g)) or g == w
    return len(got) == len(want) and all(equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("expr", sorted(EXPECTED))
def test_evaluator_values_and_rendered_code_agree(expr):
    tree = check(parse(expr), COLUMNS)
    evaluated = values(tf_side.evaluate(tree, INPUTS))
    assert same(evaluated, EXPECTED[expr]), evaluated
    namespace = {"tf": tf}
    exec(tf_side.render(tree, name="derived"), namespace)  # our own generated code
    assert same(values(namespace["derived"](INPUTS)), EXPECTED[expr])


def test_rendered_code_is_plain_tf():
    text = tf_side.render(check(parse("cross(country, device)"), COLUMNS), name="country_x")
    assert text.startswith("def country_x(inputs):\n")
    assert "py_function" not in text and "lambda" not in text
    assert r"tf.strings.regex_replace(v0, r'\\', r'\\\\')" in text
    with pytest.raises(ValueError, match="name='not valid'"):
        tf_side.render(check(parse("lower(city)"), COLUMNS), name="not valid")


def test_works_in_tf_data_batches():
    trees = {e: check(parse(e), COLUMNS) for e in EXPECTED}
    dataset = tf.data.Dataset.from_tensor_slices(INPUTS).batch(3).map(
        lambda row: {e: tf_side.evaluate(t, row) for e, t in trees.items()})
    got = {e: [] for e in EXPECTED}
    for batch in dataset:
        for e in EXPECTED:
            got[e].extend(values(batch[e]))
    for e, want in EXPECTED.items():
        assert same(got[e], want), (e, got[e])


def test_savedmodel_round_trip(tmp_path):
    trees = {f"f{i}": check(parse(e), COLUMNS) for i, e in enumerate(sorted(EXPECTED))}
    signature = {k: tf.TensorSpec([None], v.dtype, name=k) for k, v in INPUTS.items()}

    class Derived(tf.Module):
        @tf.function(input_signature=[signature])
        def __call__(self, inputs):
            return {k: tf_side.evaluate(t, inputs) for k, t in trees.items()}

    tf.saved_model.save(Derived(), str(tmp_path / "model"))
    del Derived
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    out = loaded(INPUTS)
    for i, e in enumerate(sorted(EXPECTED)):
        assert same(values(out[f"f{i}"]), EXPECTED[e]), e


def test_separator_constants_agree():
    assert tf_side.CROSS_SEPARATOR == arrow_side.CROSS_SEPARATOR
