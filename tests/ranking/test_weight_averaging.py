"""``training.ema_momentum``: the trajectory is the plain one, the checkpoints hold the trained
weights, and validation, the best epoch and the returned model use their moving average,
computed here again in numpy from the checkpointed trajectory (fit and custom loops).

A resumed run continues the averages. Data: tests/ranking/test_launcher.py's
one-float-feature lists; one step per epoch, so each epoch's checkpoint is one step of the
trajectory.
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.util
import os

import numpy as np
import pytest
import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.scorers.ensemble import member_models
from tests.ranking.test_launcher import _hparams, _numpy_ndcg, _write_data

MOMENTUM = 0.6
EPOCHS = 3  # the custom loop's CheckpointManager keeps the last 3


def _trajectory(loop: str, model_dir: str, model) -> list[list[np.ndarray]]:
    """The trainable weights after each step, read back from the run's per-epoch
    checkpoints (the custom loop's hold every model variable by position)."""
    out = []
    if loop == "fit":
        for path in sorted(glob.glob(os.path.join(model_dir, "ckpt", "ckpt-*.weights.h5"))):
            model.load_weights(path)
            out.append([v.numpy() for v in model.trainable_variables])
        return out
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), os.path.join(model_dir, "ckpt"),
                                         max_to_keep=3)
    trainable = {id(v) for v in model.trainable_variables}
    positions = [i for i, v in enumerate(model.weights) if id(v) in trainable]
    for path in manager.checkpoints:
        reader = tf.train.load_checkpoint(path)
        out.append([reader.get_tensor(f"variables/{i}/.ATTRIBUTES/VARIABLE_VALUE")
                    for i in positions])
    return out


def _numpy_average(steps: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Keras' rule: the first step's average is the weights, then m * avg + (1 - m) * w."""
    expected = steps[0]
    for weights in steps[1:]:
        expected = [MOMENTUM * e + (1 - MOMENTUM) * w for e, w in zip(expected, weights)]
    return expected


@pytest.mark.parametrize("loop", ["fit", "custom"])
def test_validation_and_the_model_use_the_moving_average(tmp_path, loop):
    paths = _write_data(str(tmp_path / "data"))
    settings = dict(loop=loop, optimizer="sgd", learning_rate=0.3, epochs=EPOCHS,
                    steps_per_epoch=1, steps_per_execution=1, early_stopping_metric=None)
    plain = RankingLauncher(_hparams(paths, str(tmp_path / "plain"), **settings)).run()
    launcher = RankingLauncher(_hparams(paths, str(tmp_path / "ema"), ema_momentum=MOMENTUM,
                                        **settings))
    averaged = launcher.run()
    final = [v.numpy() for v in averaged.model.trainable_variables]

    # The validation NDCG of the last epoch is that of the returned model's scores.
    labels, scores = [], []
    for features, y in launcher.datasets.valid_dataset():
        labels.append(y.numpy())
        scores.append(averaged.model(features, training=False).numpy())
    got = _numpy_ndcg(np.concatenate(labels), np.concatenate(scores), 2)
    assert got == pytest.approx(averaged.history["val_ndcg_2"][-1], abs=1e-6)

    steps = _trajectory(loop, str(tmp_path / "ema"), averaged.model)
    assert len(steps) == EPOCHS
    # Averaging does not change the trajectory: the last checkpoint is the plain run's end.
    for a, b in zip(steps[-1], plain.model.trainable_variables):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    expected = _numpy_average(steps)
    for got_w, want in zip(final, expected):
        np.testing.assert_allclose(got_w, want, rtol=1e-5, atol=1e-6)
    assert any(not np.allclose(f, s) for f, s in zip(final, steps[-1]))  # not the last step


@pytest.mark.slow  # default suite time; members train as single models (tests above)
def test_each_ensemble_member_serves_its_own_average(tmp_path):
    paths = _write_data(str(tmp_path / "data"))
    hp = _hparams(paths, str(tmp_path / "ens"), optimizer="sgd", learning_rate=0.3,
                  epochs=EPOCHS, steps_per_epoch=1, steps_per_execution=1,
                  early_stopping_metric=None, ema_momentum=MOMENTUM)
    hp = dataclasses.replace(hp, model=dataclasses.replace(hp.model, ensemble=2))
    members = member_models(RankingLauncher(hp).run().model)
    assert len(members) == 2
    for i, member in enumerate(members):
        final = [v.numpy() for v in member.trainable_variables]
        steps = _trajectory("fit", str(tmp_path / "ens" / f"member_{i}"), member)  # loads them
        for got_w, want in zip(final, _numpy_average(steps)):
            np.testing.assert_allclose(got_w, want, rtol=1e-5, atol=1e-6)


# custom: slow (default suite time); its checkpoint holds the optimizer's variables, the
# averages among them, as test_loop.py's restart test shows for the model's
@pytest.mark.parametrize("loop", ["fit", pytest.param("custom", marks=pytest.mark.slow)])
def test_a_resumed_run_continues_the_averages(tmp_path, loop):
    """3 epochs in one run == 2 epochs, then a rerun with 3: the restored averages go on."""
    paths = _write_data(str(tmp_path / "data"))
    settings = dict(loop=loop, optimizer="sgd", learning_rate=0.3, steps_per_epoch=1,
                    steps_per_execution=1, early_stopping_metric=None, ema_momentum=MOMENTUM)
    whole = RankingLauncher(_hparams(paths, str(tmp_path / "a"), epochs=3, **settings)).run()
    RankingLauncher(_hparams(paths, str(tmp_path / "b"), epochs=2, **settings)).run()
    resumed = RankingLauncher(_hparams(paths, str(tmp_path / "b"), epochs=3, **settings)).run()
    assert resumed.steps == 3
    for a, b in zip(whole.model.get_weights(), resumed.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_resume_cannot_switch_averaging_on_or_off(tmp_path):
    """Either way the optimizer's checkpoint (the averages are its variables) would not
    restore; --retrain starts over; another momentum resumes."""
    paths = _write_data(str(tmp_path / "data"))
    settings = dict(steps_per_epoch=1, steps_per_execution=1, early_stopping_metric=None)
    model_dir = str(tmp_path / "run")
    RankingLauncher(_hparams(paths, model_dir, epochs=1, **settings)).run()
    with pytest.raises(SpecError, match=r"The run in .* trained 1 epoch with other settings, "
                       r"and a rerun cannot change them: training.ema_momentum: \"off\" when "
                       r"trained, \"on\" now\."):
        RankingLauncher(_hparams(paths, model_dir, epochs=2, ema_momentum=MOMENTUM,
                                 **settings)).run()
    retrained = RankingLauncher(_hparams(paths, model_dir, epochs=1, ema_momentum=MOMENTUM,
                                         retrain=True, **settings)).run()
    assert retrained.state.settings["training.ema_momentum"] == "on" and retrained.steps == 1
    with pytest.raises(SpecError, match=r"training.ema_momentum: \"on\" when trained, "
                                        r"\"off\" now"):
        RankingLauncher(_hparams(paths, model_dir, epochs=2, **settings)).run()
    resumed = RankingLauncher(_hparams(paths, model_dir, epochs=2, ema_momentum=0.9,
                                       **settings)).run()
    assert resumed.steps == 2  # another momentum resumes
    assert resumed.state.settings["training.ema_momentum"] == "on"


@pytest.mark.parametrize("value", [0, 1, 1.5, "high", True])
def test_ema_momentum_is_validated(value):
    text = ("data: {feature_spec: f, train_pattern: t, list_size: 2, train_batch_size: 1}\n"
            "training: {model_dir: m}")
    with pytest.raises(SpecError, match=r"ema_momentum"):
        RankingHparams.from_yaml_text(text, overrides=[f"training.ema_momentum={value}"])


@pytest.mark.slow  # ~30 s: a JAX subprocess (tests/ranking/jax_worker.py's "ema" mode)
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
def test_jax_fit_averages_resumes_and_refuses_a_switch_as_on_tensorflow(tmp_path):
    from tests.ranking.test_jax_backend import _worker

    got = _worker("ema", tmp_path)
    steps = [[np.asarray(w) for w in step] for step in got["trajectory"]]
    assert len(steps) == EPOCHS
    for a, b in zip(steps[-1], got["plain"]):  # the trajectory is the plain run's
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    for a, b in zip(got["averaged"], _numpy_average(steps)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert any(not np.allclose(a, b) for a, b in zip(got["averaged"], got["plain"]))
    assert got["resumed_steps"] == 3
    for a, b in zip(got["whole"], got["resumed"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert 'training.optimizer: "sgd" when trained, "adam" now' in got["refused"]
