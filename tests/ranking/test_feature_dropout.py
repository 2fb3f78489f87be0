"""``model.feature_dropout``: whole features of a list dropped while training, identity after.

Oracles: numpy (each list of a feature is all zeros or the input / (1 - rate); the dropped
share follows a binomial bound), the layers without dropout, the same checks in a JAX
subprocess, and a JAX launcher run whose jax2tf SavedModel must serve the JAX model's scores.
The TensorFlow export of a model holding the layer is checked in test_quality_scorers
(``test_ensemble_export_scores_the_mean_of_members_in_a_fresh_process``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import ModelHparams
from beam_prep.ranking.train.scorers import input_transforms
from beam_prep.ranking.train.scorers.feature_dropout import FeatureDropout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RNG = np.random.default_rng(11)

# Shared by the TensorFlow test and the JAX subprocess: returns numpy-checked facts.
CHECK = """
import numpy as np
from beam_prep.ranking.train.scorers.feature_dropout import FeatureDropout

def check(x, rate, seed):
    layer = FeatureDropout(rate, seed=seed)
    same = bool(np.array_equal(np.asarray(layer(x)), x))
    out = np.asarray(layer(x, training=True)).reshape(len(x), -1)
    flat = x.reshape(len(x), -1)
    dropped = np.all(out == 0.0, axis=1)
    kept_ok = np.allclose(out[~dropped], flat[~dropped] / (1.0 - rate), rtol=1e-6)
    return {"identity": same, "dropped": int(dropped.sum()), "kept_ok": bool(kept_ok),
            "lists": len(x)}
"""


def _check(x, rate, seed):
    scope: dict = {}
    exec(CHECK, scope)  # noqa: S102 (the same code runs in the JAX subprocess)
    return scope["check"](x, rate, seed)


def _binomial_ok(dropped: int, n: int, rate: float) -> bool:
    sd = (n * rate * (1 - rate)) ** 0.5
    return abs(dropped - n * rate) <= 5 * sd


@pytest.mark.parametrize("shape", [(2000, 4, 3, 5), (2000, 4), (2000, 3)])
def test_whole_lists_are_dropped_with_the_rate_and_kept_ones_rescaled(shape):
    x = (RNG.normal(size=shape) + 3.0).astype("float32")   # no zero in the input
    got = _check(x, 0.3, 0)
    assert got["identity"] and got["kept_ok"]
    assert _binomial_ok(got["dropped"], shape[0], 0.3), got
    assert _check(x, 0.0, 0)["dropped"] == 0


def test_rate_and_config_errors_are_one_line_with_the_field():
    for bad in (1.0, -0.1, True, "0.1"):
        with pytest.raises(SpecError, match=r"`model.feature_dropout` must be a number >= 0 "
                                            r"and < 1") as err:
            FeatureDropout(bad)
        assert "\n" not in str(err.value)
        with pytest.raises(SpecError, match=r"feature_dropout") as err:
            ModelHparams(feature_dropout=bad).validate()
        assert "\n" not in str(err.value)
    ModelHparams(feature_dropout=0.2).validate()
    layer = FeatureDropout.from_config(FeatureDropout(0.25, seed=3, name="f_drop").get_config())
    assert (layer.rate, layer.seed, layer.name) == (0.25, 3, "f_drop")


def test_input_transforms_end_with_the_dropout_and_equal_the_plain_chain_at_inference():
    f = RNG.lognormal(size=(64, 4, 2)).astype("float32")
    stats = {"f": {"edges": np.quantile(f.reshape(-1, 2), np.linspace(0, 1, 5), axis=0).T}}
    hp = {"input_transform": "piecewise_linear", "piecewise_bins": 4}
    with_drop = input_transforms(ModelHparams(**hp, feature_dropout=0.5), ["f"], stats)
    plain = input_transforms(ModelHparams(**hp), ["f"], stats)["f"]
    np.testing.assert_array_equal(np.asarray(with_drop["f"](f)), np.asarray(plain(f)))
    # no transform: the dropout alone; drawn per list, the whole [L, D, bins] block at once
    alone = input_transforms(ModelHparams(input_transform="none", feature_dropout=0.5), ["g"],
                             {})["g"]
    assert isinstance(alone, FeatureDropout)
    # with an embedding, the dropout comes after it: dropped lists are zero embeddings
    emb = input_transforms(ModelHparams(**hp, feature_embedding_dim=3, feature_dropout=0.5),
                           ["f"], stats)["f"]
    out = np.asarray(emb(f)).reshape(64, -1)
    assert out.shape == (64, 4 * 2 * 3)
    assert input_transforms(ModelHparams(input_transform="none"), ["f"], stats) == {}


def test_the_same_checks_hold_on_the_jax_backend():
    pytest.importorskip("jax")
    script = CHECK + """
import json
x = (np.random.default_rng(1).normal(size=(2000, 4, 3, 5)) + 3.0).astype("float32")
print("RESULT " + json.dumps(check(x, 0.3, 0)))
"""
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    got = json.loads(lines[-1][len("RESULT "):])
    assert got["identity"] and got["kept_ok"] and _binomial_ok(got["dropped"], 2000, 0.3), got


JAX_TRAIN = """
import json, os, sys
import numpy as np
import tensorflow as tf
from beam_prep.ranking.train.backend import make_launcher
from beam_prep.ranking.train.scorers.feature_dropout import FeatureDropout
from tests.ranking import test_launcher as tl
from tests.ranking.train_fixtures import served_like
tmp = sys.argv[1]
paths = tl._write_data(os.path.join(tmp, "data"))
hp = tl._hparams(paths, os.path.join(tmp, "model"), epochs=2, early_stopping_metric=None)
hp = type(hp).from_dict({**hp.to_dict(), "distribution": {"backend": "jax"}}, overrides=[
    "model.feature_dropout=0.5", "training.export_dir=" + os.path.join(tmp, "export")])
lau = make_launcher(hp)
res = lau.run()
records = [r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(paths["valid"]))]
feats, _ = lau.datasets.parse_fn(tf.constant(records))
pre = lau.preprocessor(feats)
scores = np.asarray(res.model(pre, training=False))
trained = np.asarray(res.model(pre, training=True))
np.save(os.path.join(tmp, "jax_scores.npy"), served_like(scores, feats["__mask__"]))
print("RESULT " + json.dumps({
    "valid": paths["valid"], "steps": res.steps, "export": res.export_path,
    "dropout_layers": sum(isinstance(x, FeatureDropout) for x in res.model.layers),
    "training_differs": bool(np.abs(trained - scores).max() > 1e-6)}))
"""

TF_SERVE = """
import json, sys
import numpy as np
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
records = [r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(sys.argv[2]))]
s = model.signatures["serving_default"](serialized=tf.constant(records))["scores"].numpy()
print("RESULT " + json.dumps(s.tolist()))
"""


def _result(script: str, args: list[str], backend: str) -> object:
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": ROOT,
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.slow  # default suite time; covered by the TF / single-device twins
def test_jax_launcher_trains_with_feature_dropout_and_the_export_serves_its_scores(tmp_path):
    """JAX training with the layer; the jax2tf SavedModel scores = the JAX model's (TF side)."""
    pytest.importorskip("jax")
    got = _result(JAX_TRAIN, [str(tmp_path)], "jax")
    assert got["dropout_layers"] >= 1 and got["training_differs"] and got["steps"] > 0
    served = np.asarray(_result(TF_SERVE, [got["export"], got["valid"]], "tensorflow"))
    np.testing.assert_allclose(served, np.load(tmp_path / "jax_scores.npy"), atol=1e-5)
