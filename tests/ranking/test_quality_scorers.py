"""DASALC scorer (masking, permutation equivariance), input transforms, ensembles, config errors."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import ModelHparams, RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.scorers.dasalc import DasalcScorer
from beam_prep.ranking.train.scorers.ensemble import average_model, member_models
from tests.ranking.train_fixtures import (
    SAMPLE,
    SPEC,
    config_yaml,
    copy_sample,
    elwc_parse_fn,
    sample_layers,
    served_like,
)

L = 5
RNG = np.random.default_rng(3)


def _dasalc(**hp):
    hp = ModelHparams(scorer="dasalc", hidden_sizes=(8,), attention_dim=8, **hp)
    return DasalcScorer(context_names=("q",), example_names=("f", "g"), id_rows={},
                        sequence_features=(), list_size=L, hparams=hp)


def _batch(mask):
    return {"q": RNG.normal(size=(len(mask), 2)).astype("float32"),
            "f": RNG.normal(size=(len(mask), L, 3)).astype("float32"),
            "g": RNG.lognormal(size=(len(mask), L, 1)).astype("float32"),
            "__mask__": np.asarray(mask, "float32")}


def _warm(scorer):
    # a few training-mode calls move the batch-norm statistics away from their init
    for _ in range(3):
        scorer(_batch([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]), training=True)


def test_dasalc_shapes_and_missing_mask_error():
    scorer = _dasalc()
    b = _batch([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert tuple(scorer(b).shape) == (2, L)
    del b["__mask__"]
    with pytest.raises(SpecError, match="needs the list mask"):
        scorer(b)


@pytest.mark.parametrize("symbolic", [True, False])
def test_dasalc_builds_every_sublayer_without_keras_warning(symbolic):
    # Keras warns "`build()` was called on layer 'scorer' ... unbuilt state" when a sublayer
    # stays unbuilt; the scorer once inherited the feed-forward layers it never calls.
    scorer = _dasalc()
    b = _batch([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    if symbolic:
        b = {k: keras.Input(v.shape[1:], name=k) for k, v in b.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scorer(b)
    unbuilt = [layer.name for layer in scorer._flatten_layers() if not layer.built]
    assert unbuilt == []
    assert len(scorer.weights) > 0


def test_dasalc_is_permutation_equivariant():
    scorer = _dasalc(input_noise=0.0)
    _warm(scorer)
    b = _batch([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    perm = np.array([3, 0, 4, 1, 2])
    pb = {k: (v[:, perm] if k != "q" else v) for k, v in b.items()}
    s = np.asarray(scorer(b, training=False))
    ps = np.asarray(scorer(pb, training=False))
    np.testing.assert_allclose(ps, s[:, perm], rtol=1e-5, atol=1e-5)
    # the attention sees the list: the same document scores differently in another list
    other = dict(b)
    other["f"] = b["f"].copy()
    other["f"][:, 1:4] += 3.0
    assert abs(float(np.asarray(scorer(other, training=False))[0, 0]) - s[0, 0]) > 1e-6


@pytest.mark.parametrize("training", [False, True])
def test_dasalc_padding_never_changes_real_scores(training):
    scorer = _dasalc(input_noise=0.0)
    _warm(scorer)
    mask = [[1, 1, 0, 0, 0], [1, 1, 1, 1, 0]]
    b = _batch(mask)
    junk = {k: v.copy() for k, v in b.items()}
    pad = np.asarray(mask, bool) == 0
    junk["f"][pad] = 1e3 * RNG.normal(size=junk["f"][pad].shape)
    junk["g"][pad] = -77.0
    s = np.asarray(scorer(b, training=training))
    js = np.asarray(scorer(junk, training=training))
    np.testing.assert_allclose(js[~pad], s[~pad], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("override,match", [
    ("model.scorer=transformer", r"`model`: `scorer` must be one of 'dnn', 'dasalc'. "
                                 r"Received: scorer='transformer'"),
    ("model.input_transform=log", r"`model`: `input_transform` must be one of 'auto', 'none', "
                                  r"'log1p', 'piecewise_linear', 'robust'"),
    ("model.ensemble=0", r"`model`: `ensemble` must be an integer from 1 to 100. "
                         r"Received: ensemble=0"),
    ("model.ensemble=1000000000", r"`model`: `ensemble` must be an integer from 1 to 100. "
                                  r"Received: ensemble=1000000000"),
    ("model.attention_dim=10", r"`model`: `attention_dim` must be a multiple of "
                               r"attention_heads=4. Received: attention_dim=10"),
    ("model.input_noise=-0.1", r"`model`: `input_noise` must be a number >= 0.0"),
    ("model.attention_layers=-1", r"`attention_layers` must be an integer >= 0"),
])
def test_scorer_config_errors_name_field_and_value(tmp_path, override, match):
    text = config_yaml({"spec": "s.json", "train": "t"}, str(tmp_path))
    over = [override] + (["model.attention_heads=4"] if "attention_dim" in override else [])
    with pytest.raises(SpecError, match=match):
        RankingHparams.from_yaml_text(text, overrides=over)


def test_input_transform_auto_resolves_per_scorer():
    # log1p for every scorer: finite for any float32 (tests/ranking/test_run_safety.py).
    assert ModelHparams().resolved_input_transform == "log1p"
    assert ModelHparams(scorer="dasalc").resolved_input_transform == "log1p"
    assert ModelHparams(scorer="dasalc", input_transform="robust"
                        ).resolved_input_transform == "robust"


def test_average_model_is_the_mean_of_members():
    inp = {"x": keras.Input((L, 3), name="x")}
    members = []
    for i in range(3):
        keras.utils.set_random_seed(i)
        out = keras.layers.Reshape((L,))(keras.layers.Dense(1)(inp["x"]))
        members.append(keras.Model(inp, out))
    spec = {"x": tf.TensorSpec([None, L, 3], tf.float32)}
    avg = average_model(members, spec)
    x = {"x": RNG.normal(size=(4, L, 3)).astype("float32")}
    want = np.mean([np.asarray(m(x)) for m in members], axis=0)
    np.testing.assert_allclose(np.asarray(avg(x)), want, rtol=1e-5, atol=1e-5)
    got = member_models(avg)  # the members themselves, in member order
    assert len(got) == 3 and all(g is m for g, m in zip(got, members))
    assert member_models(members[0]) == []
    with pytest.raises(SpecError, match="ensemble"):
        average_model([], spec)


LOAD_SCRIPT = """
import sys, numpy as np, tensorflow as tf
loaded = tf.saved_model.load(sys.argv[1])
records = [r.numpy() for r in tf.data.TFRecordDataset(sys.argv[2])]
s = loaded.signatures["serving_default"](serialized=tf.constant(records))["scores"].numpy()
np.save(sys.argv[3], s)
print("SIGNATURES", " ".join(sorted(loaded.signatures)))
"""


# the feature embedding (after piecewise-linear encoding) is exported with the model too, and
# so is the feature dropout (identity at inference)
FEATURE_EMBEDDING = ("model.input_transform=piecewise_linear", "model.piecewise_bins=4",
                     "model.feature_embedding_dim=3")


# All slow (default suite time: ~25 s a case). The default suite keeps the parts: the mean of
# the members (test_average_model_is_the_mean_of_members), a 2-member ensemble's export served
# in a fresh process (test_serving_lists.py, dnn-2) and the fused feature embedding's scores
# (test_tf_feed.py).
@pytest.mark.slow
@pytest.mark.parametrize("scorer,extra", [
    ("dnn", (*FEATURE_EMBEDDING, "model.feature_dropout=0.5")),  # all three
    pytest.param("dnn", (), marks=pytest.mark.slow),
    pytest.param("dnn", FEATURE_EMBEDDING, marks=pytest.mark.slow),
    pytest.param("dasalc", (), marks=pytest.mark.slow)])
def test_ensemble_export_scores_the_mean_of_members_in_a_fresh_process(tmp_path, scorer, extra):
    paths = copy_sample(tmp_path)
    export_dir = str(tmp_path / "export")
    hp = RankingHparams.from_yaml_text(
        config_yaml(paths, str(tmp_path / "m"), epochs=1, steps=2),
        overrides=[f"training.export_dir={export_dir}", "model.ensemble=2",
                   f"model.scorer={scorer}", "model.attention_dim=8", "model.attention_layers=1",
                   *extra])
    launcher = RankingLauncher(hp, layers=sample_layers(), vocab_rows={},
                               parse_fn=elwc_parse_fn(SPEC, 4))
    result = launcher.run()
    assert result.export_path == export_dir
    assert {"member_0/loss", "member_1/loss"} <= set(result.history)
    assert os.path.isdir(tmp_path / "m" / "member_1")
    members = [layer for layer in result.model.layers if isinstance(layer, keras.Model)]
    assert len(members) == 2
    records = [r.numpy() for r in tf.data.TFRecordDataset(SAMPLE)]
    features, _ = launcher.datasets.parse_fn(tf.constant(records))
    pre = launcher.preprocessor(features)
    per_member = [np.asarray(m(pre, training=False)) for m in members]
    assert np.abs(per_member[0] - per_member[1]).max() > 1e-4  # different seeds
    want = served_like(np.mean(per_member, axis=0), features["__mask__"])
    out = str(tmp_path / "scores.npy")
    proc = subprocess.run([sys.executable, "-c", LOAD_SCRIPT, export_dir, SAMPLE, out],
                          check=True, capture_output=True, text=True, timeout=300)
    np.testing.assert_allclose(np.load(out), want, rtol=1e-5, atol=1e-5)
    # the per-document signature is exported too
    signatures = [x for x in proc.stdout.splitlines() if x.startswith("SIGNATURES ")]
    assert signatures[-1].split()[1:] == ["score_examples", "serving_default"]


def test_feature_stats_use_real_entries_only_and_match_numpy():
    from beam_prep.ranking.train.scorers import input_transforms
    from beam_prep.ranking.train.scorers.input_stats import feature_stats

    f = RNG.lognormal(size=(6, L, 1))
    labels = np.array([[1, 0, -1, -1, -1]] * 3 + [[2, 1, 0, 0, -1]] * 3, "float32")
    f[labels < 0] = 1e6  # padding must not move the statistics
    q = RNG.normal(size=(6, 2))
    batches = [({"f": f[:3], "q": q[:3]}, labels[:3]), ({"f": f[3:], "q": q[3:]}, labels[3:])]
    stats = feature_stats(batches, ["f", "q"], bins=4)
    real = f[labels >= 0][:, 0]
    np.testing.assert_allclose(stats["f"]["median"], [np.median(real)], rtol=1e-6)
    np.testing.assert_allclose(stats["f"]["edges"][0],
                               np.percentile(real, [0, 25, 50, 75, 100]), rtol=1e-6)
    np.testing.assert_allclose(stats["q"]["median"], np.median(q, axis=0), rtol=1e-6)
    layers = input_transforms(ModelHparams(input_transform="piecewise_linear",
                                           piecewise_bins=4), ["f", "q"], stats)
    assert tuple(layers["f"](f).shape) == (6, L, 1, 4)
    with pytest.raises(SpecError, match="needs statistics of feature 'g'"):
        input_transforms(ModelHparams(input_transform="robust"), ["g"], stats)
    assert input_transforms(ModelHparams(input_transform="none"), ["f"], stats) == {}
    # The default (auto) is log1p for every scorer: finite for any float32.
    default = input_transforms(ModelHparams(), ["f"], stats)["f"]
    assert type(default).__name__ == "SignedLog1p"
    np.testing.assert_allclose(default(np.float32([[3e38]])), [[np.log1p(3e38)]], rtol=1e-6)


@pytest.mark.parametrize("expand", [False, True])
def test_feature_embedding_matches_numpy_per_value_dense(expand):
    from beam_prep.ranking.train.scorers.feature_embedding import FeatureEmbedding

    x = RNG.normal(size=(2, L, 3) if expand else (2, L, 3, 4)).astype("float32")
    layer = FeatureEmbedding(5, expand=expand)
    out = np.asarray(layer(x))
    w, b = (np.asarray(v) for v in layer.weights)
    xe = x[..., None] if expand else x
    assert w.shape == (3, xe.shape[-1], 5) and b.shape == (3, 5)
    want = np.zeros((2, L, 3, 5))
    for d in range(3):  # every value has its own weights: a Dense per value, then ReLU
        want[:, :, d, :] = np.maximum(xe[:, :, d, :] @ w[d] + b[d], 0.0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape(x.shape) == (2, L, 3, 5)


def test_feature_embedding_follows_the_input_transform():
    from beam_prep.ranking.train.scorers import input_transforms

    f = RNG.lognormal(size=(2, L, 3)).astype("float32")
    stats = {"f": {"edges": np.quantile(f.reshape(-1, 3), np.linspace(0, 1, 5), axis=0).T}}
    ple = input_transforms(ModelHparams(input_transform="piecewise_linear", piecewise_bins=4,
                                        feature_embedding_dim=6), ["f"], stats)["f"]
    assert tuple(np.shape(ple(f))) == (2, L, 3, 6)
    raw = input_transforms(ModelHparams(feature_embedding_dim=2), ["f"], {})["f"]
    assert tuple(np.shape(raw(f))) == (2, L, 3, 2)
    with pytest.raises(SpecError, match=r"`feature_embedding_dim` must be an integer >= 0"):
        ModelHparams(feature_embedding_dim=-1).validate()
    with pytest.raises(SpecError, match=r"`embedding_dim` must be a positive integer"):
        ModelHparams(embedding_dim=0).validate()


def test_members_retrace_quietly_drops_only_the_retracing_warning():
    """Each member traces the shared preprocessing again; TensorFlow's warning about it is
    dropped inside the block, other TensorFlow warnings are kept, and outside it nothing
    changes."""
    import logging

    from beam_prep.ranking.train.scorers.ensemble import members_retrace_quietly

    class Keep(logging.Handler):
        def __init__(self):
            super().__init__(logging.WARNING)
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    log, keep = logging.getLogger("tensorflow"), Keep()
    retrace = ("5 out of the last 5 calls to <bound method Preprocessor.__call__> "
               "triggered tf.function retracing. Tracing is expensive")
    log.addHandler(keep)
    try:
        with members_retrace_quietly():
            log.warning(retrace)
            log.warning("a real warning")
        log.warning(retrace)
    finally:
        log.removeHandler(keep)
    assert keep.messages == ["a real warning", retrace]
