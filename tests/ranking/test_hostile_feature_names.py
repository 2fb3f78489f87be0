"""Issue 21 (hostile review): ELWC feature names Keras refuses as layer names.

make-elwc keeps any column name as the ELWC feature name (``price/usd``, ``c d``); the
trainer's feature dict stays keyed by it and only the ``keras.Input`` / layer names go
through ``beam_prep.input_names.input_name``. Before the fix ``create_inputs`` raised
Keras' raw ``ValueError: Argument name ... cannot contain character '/'``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo
from beam_prep.ranking.train.hparams import ModelHparams
from beam_prep.ranking.train.model import RankingModelBuilder
from beam_prep.ranking.train.preprocessor import Preprocessor
from tests.ranking.train_fixtures import VOCAB, served_like


def test_hostile_float_feature_names_build_and_score_like_numpy():
    spec = ElwcFeatureSpec(context=(FeatureInfo("ctx/usd", "float", (2,), 0.0),),
                           example=(FeatureInfo("price/usd", "float", (), 0.0),))
    pre = Preprocessor(spec, {}, list_size=3)
    rng = np.random.default_rng(0)
    feats = {"ctx/usd": tf.constant(rng.normal(size=(2, 2)), tf.float32),
             "price/usd": tf.constant(rng.normal(size=(2, 3)), tf.float32)}
    inputs = pre(feats)
    assert set(inputs) == {"ctx/usd", "price/usd"}  # the dict keys stay the feature names
    spec_in = {k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in inputs.items()}
    model = RankingModelBuilder(pre, ModelHparams(hidden_sizes=(5, 4))).build(spec_in)
    got = model(inputs).numpy()
    w = [v.numpy() for v in model.weights]  # oracle: the same MLP in numpy
    want = np.zeros((2, 3))
    for b in range(2):
        for i in range(3):
            h = np.concatenate([[feats["price/usd"].numpy()[b, i]], feats["ctx/usd"].numpy()[b]])
            h = np.maximum(h @ w[0] + w[1], 0)
            h = np.maximum(h @ w[2] + w[3], 0)
            want[b, i] = (h @ w[4] + w[5])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_hostile_id_feature_name_gets_an_embedding():
    import keras

    spec = ElwcFeatureSpec(context=(FeatureInfo("q tokens", "string", (None,)),),
                           example=(FeatureInfo("doc/tokens", "string", (None,)),))
    layers = {"q tokens": keras.layers.StringLookup(vocabulary=VOCAB, name="q_lookup"),
              "doc/tokens": keras.layers.StringLookup(vocabulary=VOCAB, name="doc_lookup")}
    pre = Preprocessor(spec, layers, list_size=2, sequence_length=3)
    inputs = pre({"q tokens": tf.ragged.constant([["relevant"]]),
                  "doc/tokens": tf.RaggedTensor.from_uniform_row_length(
                      tf.ragged.constant([["answer"], []]), 2)})
    spec_in = {k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in inputs.items()}
    model = RankingModelBuilder(pre, ModelHparams(hidden_sizes=(4,))).build(spec_in)
    got = model(inputs).numpy()
    assert got.shape == (1, 2) and np.isfinite(got).all()


RENAMED = {"query_tokens": "q tokens", "document_tokens": "doc/tokens"}


def _renamed(record: bytes) -> bytes:
    from tensorflow_serving.apis import input_pb2

    elwc = input_pb2.ExampleListWithContext()
    elwc.ParseFromString(record)
    for features in [elwc.context.features, *(e.features for e in elwc.examples)]:
        for old, new in RENAMED.items():
            if old in features.feature:
                features.feature[new].CopyFrom(features.feature[old])
                del features.feature[old]
    return elwc.SerializeToString()


def test_train_and_export_with_hostile_feature_names(tmp_path):
    """The TF Ranking sample with its features renamed 'q tokens' / 'doc/tokens'."""
    import keras

    from beam_prep.ranking.train.export import ELWC_SIGNATURE
    from beam_prep.ranking.train.hparams import RankingHparams
    from beam_prep.ranking.train.launcher import RankingLauncher
    from tests.ranking.train_fixtures import (
        SAMPLE,
        SPEC,
        config_yaml,
        copy_sample,
        elwc_parse_fn,
        hand_elwc,
    )

    paths = copy_sample(tmp_path)
    records = [_renamed(r.numpy()) for r in tf.data.TFRecordDataset(SAMPLE)]
    with tf.io.TFRecordWriter(os.path.join(paths["dir"], "train-00000.tfrecord")) as w:
        for r in records:
            w.write(r)
    spec = ElwcFeatureSpec(
        context=(FeatureInfo("q tokens", "string", (None,)),),
        example=(FeatureInfo("doc/tokens", "string", (None,)),), label=SPEC.label)
    spec.save(paths["spec"])
    layers = {n: keras.layers.StringLookup(vocabulary=paths["vocab"], name=f"lookup_{i}")
              for i, n in enumerate(RENAMED.values())}
    export_dir = str(tmp_path / "export")
    hp = RankingHparams.from_yaml_text(config_yaml(paths, str(tmp_path / "m"), epochs=1),
                                       overrides=[f"training.export_dir={export_dir}"])
    launcher = RankingLauncher(hp, layers=layers, vocab_rows={}, parse_fn=elwc_parse_fn(spec, 4))
    result = launcher.run()
    records.append(_renamed(hand_elwc()))
    features, _ = launcher.datasets.parse_fn(tf.constant(records))
    want = result.model(launcher.preprocessor(features), training=False).numpy()
    loaded = tf.saved_model.load(export_dir)
    got = loaded.signatures[ELWC_SIGNATURE](serialized=tf.constant(records))["scores"].numpy()
    np.testing.assert_allclose(got, served_like(want, features["__mask__"]), rtol=1e-5,
                               atol=1e-5)
    assert np.ptp(got[-1, :3]) > 1e-4  # the renamed features reach the scorer


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_distributed_tables_and_jax_export_with_hostile_feature_names(backend, tmp_path):
    """keras_rs tables named after 'doc/tokens'; the JAX launcher and its jax2tf export (~30 s)."""
    import json
    import subprocess
    import sys

    if backend == "jax":
        pytest.importorskip("jax")
    run = subprocess.run(
        [sys.executable, "-m", "tests.ranking.hostile_names_worker", backend, str(tmp_path)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "KERAS_BACKEND": backend})
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["max_diff"] < 1e-5 and out["spread"] > 1e-4, out
