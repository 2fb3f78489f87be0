"""Real analysis -> generated module -> adapt() agreement; train, export, delete, serve.

Runs `pipelines/analyze.py` on the bundled sample CSV (2,000 rows, a few seconds).
"""

from __future__ import annotations

import csv
import os
import shutil

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from beam_prep.codegen.render import generate  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "examples", "data", "sample.csv")
SPEC = os.path.join(ROOT, "examples", "spec.yaml")


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    from beam_prep.pipelines import analyze

    out = str(tmp_path_factory.mktemp("e2e") / "artifacts")
    analyze.run(["--spec", SPEC, "--input", SAMPLE, "--output", out])
    module_path = str(tmp_path_factory.mktemp("e2e_module") / "preprocessing.py")
    generate(out, module_path)
    return out, import_module_from(module_path, "bp_generated_e2e"), module_path


def _column(name):
    with open(SAMPLE, encoding="utf-8") as f:
        return [row[name] for row in csv.DictReader(f)]


def test_real_analysis_agrees_with_adapt(analyzed) -> None:
    _, pp, _ = analyzed
    layers = pp.build_layers()
    country = np.array([[v] for v in _column("country") if v])
    ref = keras.layers.StringLookup(output_mode="one_hot")
    ref.adapt(country)
    probe = tf.constant([["US"], ["JP"], ["nowhere"], [""]])
    got = layers["country"][1](layers["country"][0](probe))
    np.testing.assert_array_equal(got.numpy(), np.asarray(ref(probe)).astype("float32"))

    reviews = np.array([[v] for v in _column("review") if v])
    ref = keras.layers.TextVectorization(ngrams=2, max_tokens=200, output_mode="tf_idf")
    ref.adapt(reviews)
    probe = tf.constant([["Great, shoes too small!"], ["unseen words here"], [""]])
    assert layers["review"][0].get_vocabulary() == ref.get_vocabulary()
    np.testing.assert_array_equal(layers["review"][0](probe).numpy(), np.asarray(ref(probe)))

    stores = np.array([[int(v)] for v in _column("store_id")], np.int64)
    ref = keras.layers.IntegerLookup()
    ref.adapt(stores)
    ours = layers["store_id"][0]
    counts = {t: int((stores == t).sum()) for t in ref.get_vocabulary()[1:]}
    # Same tokens; both count-descending (ties may differ: Keras by value, ours like TFT).
    assert sorted(ours.get_vocabulary()[1:]) == sorted(counts)
    assert [counts[t] for t in ours.get_vocabulary()[1:]] == \
        [counts[t] for t in ref.get_vocabulary()[1:]]

    ages = np.array([[float(v)] for v in _column("age") if v], np.float32)
    ref = keras.layers.Normalization()
    ref.adapt(ages)
    probe = tf.constant([[18.0], [50.0], [80.0]])
    np.testing.assert_allclose(layers["age"][0](probe).numpy(), np.asarray(ref(probe)),
                               rtol=1e-5)

    prices = np.array([float(v) for v in _column("price") if v and v != "nan"])
    ref = keras.layers.Discretization(num_bins=8)
    ref.adapt(prices.reshape(-1, 1).astype(np.float32))
    ours_b = layers["price_bucket"][0](prices.reshape(-1, 1)).numpy().ravel()
    ref_b = np.asarray(ref(prices.reshape(-1, 1))).ravel()
    assert np.abs(ours_b.astype(int) - ref_b.astype(int)).max() <= 1
    assert (ours_b == ref_b).mean() > 0.97
    # Each boundary sits at its quantile within the sketch's epsilon (0.01) plus ties.
    bounds = layers["price_bucket"][0].bin_boundaries
    ranks = [(prices < b).mean() for b in bounds]
    assert np.allclose(ranks, np.arange(1, 8) / 8, atol=0.02)


def test_train_export_delete_artifacts_and_serve(analyzed, tmp_path) -> None:
    import tensorflow_hub as hub

    from examples.train_and_export import run

    artifacts, _, module_path = analyzed
    copy = str(tmp_path / "artifacts")
    shutil.copytree(artifacts, copy)
    result = run(copy, str(tmp_path / "model"), preprocessing=module_path, epochs=1,
                 batch_size=256)
    assert result["max_abs_diff_saved_model"] == 0.0
    assert result["max_abs_diff_tfsm_layer"] == 0.0
    shutil.rmtree(copy)  # the vocabularies must travel as SavedModel assets
    export_dir = result["export_dir"]
    assert os.listdir(os.path.join(export_dir, "assets"))
    raw, want = result["raw_inputs"], result["predictions"]
    assert want.shape == (6, 1) and np.isfinite(want).all()
    loaded = tf.saved_model.load(export_dir)  # keep a reference: its variables live in it
    served = loaded.serve(raw).numpy()
    np.testing.assert_array_equal(served, want)
    # dtype="float64": a Keras layer casts float inputs to its dtype (numeric columns are
    # float64).
    tfsm = keras.layers.TFSMLayer(export_dir, call_endpoint="serve", dtype="float64")(raw)
    np.testing.assert_array_equal(np.asarray(tfsm), want)
    hub_model = hub.load(export_dir)
    np.testing.assert_array_equal(hub_model.signatures["serving_default"](**raw)["output_0"]
                                  .numpy(), want)
    layer = hub.KerasLayer(export_dir, signature="serving_default",
                           signature_outputs_as_dict=True, dtype="float64")
    np.testing.assert_array_equal(layer(raw)["output_0"].numpy(), want)
