"""The training budget follows the data (issue 34): ``steps_per_epoch: auto`` is one pass over
the training lists, ``training.lr_schedule`` (warm-up, cosine, plateau) against a numpy
formula, the plateau rule, and a resumed run continuing the schedule where it stopped.

Data: tests/ranking/test_launcher.py's one-float-feature lists.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.lr_schedule import (
    PlateauRule,
    RankingSchedule,
    learning_rate_at,
    make_schedule,
)
from beam_prep.ranking.train.optimizers import make_optimizer
from beam_prep.ranking.train.run_state import EpochTracker, RunState
from tests.ranking.test_launcher import _hparams, _write_data


def _numpy_rates(steps: np.ndarray, *, lr: float, warmup: int, total: int,
                 floor: float, cosine: bool) -> np.ndarray:
    """The schedule written out independently: linear warm-up, then cosine to ``floor``."""
    out = np.full(steps.shape, lr, dtype=np.float64)
    if cosine:
        progress = np.clip((steps - warmup) / (total - warmup), 0.0, 1.0)
        out = floor + (lr - floor) * (np.cos(np.pi * progress) + 1.0) / 2.0
    if warmup:
        out = out * np.minimum(1.0, (steps + 1.0) / warmup)
    return out


def test_auto_steps_per_epoch_is_one_pass_over_the_training_lists(tmp_path):
    paths = _write_data(str(tmp_path / "data"), n_train=10)
    hp = _hparams(paths, str(tmp_path / "model"), epochs=1, early_stopping_metric=None,
                  steps_per_epoch="auto")
    launcher = RankingLauncher(hp)
    assert launcher.steps_per_epoch() == 3  # ceil(10 lists / batch 4), not floor = 2
    result = launcher.run()  # drop_remainder: every step a full, static batch of 4
    assert result.steps == 3 and result.history["loss"][0] > 0
    default = RankingHparams.from_dict({**hp.to_dict(), "training": {
        "model_dir": str(tmp_path / "m2")}})
    assert default.training.steps_per_epoch == "auto"
    assert RankingLauncher(default).steps_per_epoch() == 3
    fixed = _hparams(paths, str(tmp_path / "m3"), steps_per_epoch=5)
    assert RankingLauncher(fixed).steps_per_epoch() == 5


@pytest.mark.parametrize("warmup,cosine", [(0, True), (4, True), (5, False)])
def test_schedule_values_match_the_numpy_formula(warmup, cosine):
    lr, floor, total = 0.01, 0.001, 20
    kind = "cosine" if cosine else "constant"
    schedule = RankingSchedule(lr, schedule=kind, warmup_steps=warmup, total_steps=total,
                               min_learning_rate=floor)
    steps = np.arange(0, total + 3)
    want = _numpy_rates(steps, lr=lr, warmup=warmup, total=total, floor=floor, cosine=cosine)
    got = np.array([float(schedule(int(s))) for s in steps])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    plain = [learning_rate_at(int(s), learning_rate=lr, schedule=kind, warmup_steps=warmup,
                              total_steps=total, min_learning_rate=floor) for s in steps]
    np.testing.assert_allclose(plain, want, rtol=1e-12)
    if cosine:
        assert got[-1] == pytest.approx(floor) and got[warmup] == pytest.approx(lr)


def test_the_optimizer_takes_step_s_at_the_rate_of_step_s():
    """SGD on loss = w: each update moves w by exactly the scheduled rate of that step."""
    training = RankingHparams.from_yaml_text(
        "data: {feature_spec: f, train_pattern: t, list_size: 2, train_batch_size: 1}\n"
        "training: {model_dir: m, learning_rate: 0.1, lr_schedule: cosine, warmup_steps: 3,"
        " epochs: 4, min_learning_rate: 0.01}").training
    schedule = make_schedule(training, steps_per_epoch=2)
    assert schedule.total_steps == 8 and schedule.warmup_steps == 3
    opt = make_optimizer("sgd", 0.1, schedule)
    w = keras.Variable(0.0)
    opt.build([w])
    moves = []
    for _ in range(10):
        before = float(w.numpy())
        opt.apply_gradients([(keras.ops.ones(()), w)])
        moves.append(before - float(w.numpy()))
    want = _numpy_rates(np.arange(10), lr=0.1, warmup=3, total=8, floor=0.01, cosine=True)
    np.testing.assert_allclose(moves, want, rtol=1e-5)


def test_warmup_epochs_resolve_to_steps_and_constant_needs_no_schedule():
    text = ("data: {feature_spec: f, train_pattern: t, list_size: 2, train_batch_size: 1}\n"
            "training: {model_dir: m, epochs: 10}")
    hp = RankingHparams.from_yaml_text(text, overrides=["training.warmup_epochs=1.5"])
    assert make_schedule(hp.training, steps_per_epoch=4).warmup_steps == 6
    assert make_schedule(RankingHparams.from_yaml_text(text).training, 4) is None


def test_plateau_reduces_the_rate_after_patience_epochs_without_improvement():
    applied = []
    state = RunState(epochs=20, monitor="val_ndcg_10")
    rule = PlateauRule(0.5, 2, min_scale=0.2, apply=applied.append)
    tracker = EpochTracker(state, patience=10, plateau=rule)
    values = [0.5, 0.6, 0.6, 0.55, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    scales = []
    for epoch, value in enumerate(values):
        tracker.epoch_end(epoch, {"val_ndcg_10": value})
        scales.append(state.lr_scale)
    # epochs 3-4 do not beat 0.6 -> halve; 0.7 resets; then 2 bad -> 0.25, 2 more -> 0.2
    # (the floor), then no lower.
    assert scales == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2]
    assert applied == [0.5, 0.25, 0.2]
    assert state.plateau_wait == 0  # the counter restarts even when the floor holds


def test_plateau_scale_is_an_optimizer_variable_the_next_step_uses():
    schedule = RankingSchedule(0.1, schedule="plateau", scale=0.5)
    opt = make_optimizer("sgd", 0.1, schedule)
    assert any(v is schedule.scale for v in opt.variables)  # in the state JAX steps take
    w = keras.Variable(0.0)
    opt.build([w])
    opt.apply_gradients([(keras.ops.ones(()), w)])
    assert float(w.numpy()) == pytest.approx(-0.05)  # a resumed run's recorded scale
    schedule.set_scale(0.1)
    opt.apply_gradients([(keras.ops.ones(()), w)])
    assert float(w.numpy()) == pytest.approx(-0.06)


# slow (default suite time: three trainings); the default suite resumes a run in
# test_model.py (test_train_on_sample_then_resume) and checks the schedule step by step here
@pytest.mark.slow
@pytest.mark.parametrize("loop", ["fit", "custom"])
def test_a_resumed_run_continues_the_warmup_where_it_stopped(tmp_path, loop):
    """4 epochs in one run == 2 epochs, then a rerun with 4: the second run's steps use the
    rates of steps 4-7 (the optimizer's restored step), not those of steps 0-3."""
    paths = _write_data(str(tmp_path / "data"))  # 8 lists = 2 batches: each epoch one pass
    settings = dict(loop=loop, optimizer="sgd", learning_rate=0.2, warmup_steps=8,
                    early_stopping_metric=None, export_dir=None)
    whole = RankingLauncher(_hparams(paths, str(tmp_path / "a"), **settings, epochs=4)).run()
    RankingLauncher(_hparams(paths, str(tmp_path / "b"), **settings, epochs=2)).run()
    resumed = RankingLauncher(_hparams(paths, str(tmp_path / "b"), **settings, epochs=4)).run()
    assert whole.steps == resumed.steps == 8
    for a, b in zip(whole.model.get_weights(), resumed.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("override,match", [
    ("training.steps_per_epoch=many", "steps_per_epoch"),
    ("training.steps_per_epoch=0", "positive integer or auto"),
    ("training.lr_schedule=linear", "lr_schedule"),
    ("training.min_learning_rate=0.01", "min_learning_rate` must be a number >= 0.0 and < 0.001"),
    ("training.plateau_factor=1.0", "plateau_factor"),
    ("training.warmup_epochs=-1", "warmup_epochs"),
])
def test_schedule_settings_are_validated(override, match):
    text = ("data: {feature_spec: f, train_pattern: t, list_size: 2, train_batch_size: 1}\n"
            "training: {model_dir: m}")
    with pytest.raises(SpecError, match=match):
        RankingHparams.from_yaml_text(text, overrides=[override])


def test_plateau_needs_a_watched_validation_metric_and_a_shorter_patience():
    base = ("data: {feature_spec: f, train_pattern: t, list_size: 2, train_batch_size: 1%s}\n"
            "training: {model_dir: m, lr_schedule: plateau%s}")
    with pytest.raises(SpecError, match="early_stopping_metric"):
        RankingHparams.from_yaml_text(base % (", valid_pattern: v", ""))
    with pytest.raises(SpecError, match="valid_pattern"):
        RankingHparams.from_yaml_text(base % ("", ", early_stopping_metric: val_ndcg_10"))
    with pytest.raises(SpecError, match="smaller than early_stopping_patience=3"):
        RankingHparams.from_yaml_text(base % (", valid_pattern: v",
                                              ", early_stopping_metric: val_ndcg_10,"
                                              " plateau_patience: 3"))
    with pytest.raises(SpecError, match="set one of the two"):
        RankingHparams.from_yaml_text(base.replace("plateau", "cosine") % (
            "", ", warmup_steps: 2, warmup_epochs: 1"))
    ok = RankingHparams.from_yaml_text(base % (", valid_pattern: v",
                                               ", early_stopping_metric: val_ndcg_10"))
    assert ok.training.lr_schedule == "plateau"
