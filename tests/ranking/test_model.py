"""Hparams validation, preprocessor/scorer behaviour, and training on the TF Ranking sample."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo
from beam_prep.ranking.train.hparams import ModelHparams, RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.model import RankingModelBuilder
from beam_prep.ranking.train.preprocessor import Preprocessor
from tests.ranking.train_fixtures import (
    SPEC,
    config_yaml,
    copy_sample,
    elwc_parse_fn,
    sample_layers,
)
from tests.sample_data import TFRANKING


@pytest.mark.parametrize("override,match", [
    ("data.list_size=0", r"`data`: `list_size` must be a positive integer. Received: list_size=0"),
    ("training.loss=hinge", r"`training`: `loss` must be one of .*Received: loss='hinge'"),
    ("model.dropout=1.5", r"`model`: `dropout` must be a number >= 0.0 and < 1.0"),
    ("distribution.strategy=ps", r"`distribution`: `strategy` must be one of"),
    ("model.colour=1", r"`model`: `colour` must be one of the known keys \['hidden_sizes', "),
    ("training", r"Overrides look like `section.key=value`"),
    ("training.softmax_targets=gain", r"`training`: `softmax_targets` must be one of 'labels', "
                                      r"'gains' \(did you mean 'gains'\?\). "
                                      r"Received: softmax_targets='gain'"),
])
def test_hparams_errors_name_field_and_value(tmp_path, override, match):
    text = config_yaml({"spec": "s.json", "train": "t"}, str(tmp_path))
    with pytest.raises(SpecError, match=match):
        RankingHparams.from_yaml_text(text, overrides=[override])


def test_softmax_targets_with_another_loss_names_the_value_to_set(tmp_path):
    text = config_yaml({"spec": "s.json", "train": "t"}, str(tmp_path))
    with pytest.raises(SpecError, match=r"only applies to `loss: softmax`. Received: "
                       r"softmax_targets='gains' with loss='approx_ndcg'; set "
                       r"training.softmax_targets=labels \(the default\)"):
        RankingHparams.from_yaml_text(text, overrides=["training.softmax_targets=gains",
                                                       "training.loss=approx_ndcg"])
    hp = RankingHparams.from_yaml_text(text, overrides=[
        "training.softmax_targets=gains", "training.loss=approx_ndcg",
        "training.softmax_targets=labels"])  # what the message says: accepted
    assert hp.training.loss == "approx_ndcg"


def test_hparams_round_trip_and_override(tmp_path):
    text = config_yaml({"spec": "s.json", "train": "t"}, str(tmp_path))
    hp = RankingHparams.from_yaml_text(text, overrides=["model.hidden_sizes=[7, 3]"])
    assert hp.model.hidden_sizes == (7, 3)
    assert RankingHparams.from_dict(hp.to_dict()) == hp


def test_scorer_is_the_same_ffn_on_every_entry_with_context_broadcast():
    spec = ElwcFeatureSpec(context=(FeatureInfo("c", "float", (2,), 0.0),),
                           example=(FeatureInfo("x", "float", (), 0.0),))
    pre = Preprocessor(spec, {}, list_size=3)
    rng = np.random.default_rng(0)
    feats = {"c": tf.constant(rng.normal(size=(2, 2)), tf.float32),
             "x": tf.constant(rng.normal(size=(2, 3)), tf.float32)}
    inputs = pre(feats)
    spec_in = {k: tf.TensorSpec([None, *v.shape[1:]], v.dtype) for k, v in inputs.items()}
    model = RankingModelBuilder(pre, ModelHparams(hidden_sizes=(5, 4))).build(spec_in)
    got = model(inputs).numpy()
    # Independent forward pass in numpy from the model's weights: concat(x, c) -> relu MLP.
    w = [v.numpy() for v in model.weights]
    want = np.zeros((2, 3))
    for b in range(2):
        for i in range(3):
            h = np.concatenate([[feats["x"].numpy()[b, i]], feats["c"].numpy()[b]])
            h = np.maximum(h @ w[0] + w[1], 0)
            h = np.maximum(h @ w[2] + w[3], 0)
            want[b, i] = (h @ w[4] + w[5])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_preprocessor_pads_ids_to_static_shape_and_sizes_tables(tmp_path):
    pre = Preprocessor(SPEC, sample_layers(), list_size=4, sequence_length=6)
    with open(TFRANKING + "/vocab.txt", encoding="utf-8") as f:
        vocab_text = f.read()
    vocab_lines = len(vocab_text.split("\n")[:-1])
    # StringLookup: 1 OOV + the tokens, +1 because ragged ids are shifted so 0 = padding.
    assert pre.id_rows == {"query_tokens": vocab_lines + 2, "document_tokens": vocab_lines + 2}
    out = pre({"query_tokens": tf.ragged.constant([["relevant", "zzz"]]),
               "document_tokens": tf.RaggedTensor.from_uniform_row_length(
                   tf.ragged.constant([["answer"], [], [], []]), 4)})
    vocab = vocab_text.split()
    want_ids = [[vocab.index("relevant") + 2, 1, 0, 0, 0, 0]]  # OOV 0 -> 1
    assert out["query_tokens"].numpy().tolist() == want_ids
    assert out["document_tokens"].shape == (1, 4, 6)
    assert out["document_tokens"].numpy()[0, 0, 0] == vocab.index("answer") + 2
    assert out["document_tokens"].numpy()[0, 1:].sum() == 0


def test_string_feature_without_layer_is_refused():
    with pytest.raises(SpecError, match="'query_tokens' holds strings"):
        Preprocessor(SPEC, {}, list_size=4)


@pytest.mark.parametrize("loop", ["fit", pytest.param("custom", marks=pytest.mark.slow)])
def test_train_on_sample_then_resume(tmp_path, loop):
    paths = copy_sample(tmp_path)
    model_dir = str(tmp_path / "model")
    text = config_yaml(paths, model_dir, loop=loop, epochs=2, steps=3)

    def launch(epochs):
        hp = RankingHparams.from_yaml_text(text, overrides=[f"training.epochs={epochs}"])
        return RankingLauncher(hp, layers=sample_layers(), vocab_rows={},
                               parse_fn=elwc_parse_fn(SPEC, 4)).run()

    first = launch(2)
    assert first.steps == 6
    assert len(first.history["loss"]) == 2 and "val_ndcg_2" in first.history
    assert first.history["loss"][-1] < first.history["loss"][0]
    # Second run with one more epoch resumes from model_dir: only 3 more steps.
    second = launch(3)
    assert second.steps == 9
    assert len(second.history["loss"]) == 1
