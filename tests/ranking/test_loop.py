"""CustomLoop on its own: SGD on a one-weight linear scorer against a numpy oracle, resume
from the checkpoint, validation metrics, and LoopSettings validation.

Scores are ``w * x`` per list entry; the loss is the per-list mean squared error, so one step
is ``w -= lr * sum_b mean_l 2 (w x - y) x / B`` (B = global batch), computed here in numpy.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.ranking.train.loop import CustomLoop, LoopSettings

B, L, LR, W0 = 2, 3, 0.1, 0.5
RNG = np.random.default_rng(3)
X = RNG.uniform(-1, 1, size=(4 * B, L)).astype(np.float32)      # 4 batches, in order
Y = (2.0 * X + RNG.normal(0, 0.1, size=X.shape)).astype(np.float32)
VX = RNG.uniform(-1, 1, size=(3, L)).astype(np.float32)
VY = (-1.0 * VX).astype(np.float32)


def _model() -> keras.Model:
    inp = keras.Input((L,), name="x")
    h = keras.layers.Reshape((L, 1))(inp)
    h = keras.layers.Dense(1, use_bias=False,
                           kernel_initializer=keras.initializers.Constant(W0))(h)
    return keras.Model({"x": inp}, keras.layers.Reshape((L,))(h))


def _train_ds() -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(B, drop_remainder=True).repeat()


def _valid_ds() -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(({"x": VX}, VY)).batch(2)


def _loop(model, ckpt_dir, **settings) -> CustomLoop:
    return CustomLoop(
        model, strategy=tf.distribute.get_strategy(),
        make_optimizer=lambda: keras.optimizers.SGD(LR),
        loss=keras.losses.MeanSquaredError(reduction=None),
        make_metrics=lambda: [keras.metrics.MeanSquaredError(name="mse")],
        settings=LoopSettings(global_batch_size=B, **settings), checkpoint_dir=ckpt_dir)


def _oracle(w: float, batches: list[int]) -> tuple[float, list[float]]:
    """Weight after SGD steps on the given batch indices, and each step's loss."""
    losses = []
    for i in batches:
        x, y = X[i * B:(i + 1) * B].astype(np.float64), Y[i * B:(i + 1) * B].astype(np.float64)
        r = w * x - y
        losses.append(float((r ** 2).mean(axis=1).sum() / B))
        w -= LR * float((2 * r * x).mean(axis=1).sum() / B)
    return w, losses


def test_sgd_steps_history_and_resume_match_numpy(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    model = _model()
    history, steps = _loop(model, ckpt, epochs=1, steps_per_epoch=2,
                           steps_per_execution=2).run(_train_ds(), _valid_ds())
    w1, losses1 = _oracle(W0, [0, 1])
    assert steps == 2
    assert float(model.get_weights()[0].ravel()[0]) == pytest.approx(w1, abs=1e-5)
    # One execution of 2 steps: its loss is the mean of the two step losses.
    assert history["loss"] == pytest.approx([np.mean(losses1)], abs=1e-5)
    assert history["val_mse"] == pytest.approx([float(((w1 * VX - VY) ** 2).mean())], abs=1e-5)

    # A new run with epochs=2 restores step 2 and weight w1, trains epoch 1 only (the dataset
    # iterator starts over: batches 0 and 1 again), one step per execution.
    model2 = _model()
    history2, steps2 = _loop(model2, ckpt, epochs=2, steps_per_epoch=2).run(_train_ds())
    w2, losses2 = _oracle(w1, [0, 1])
    assert steps2 == 4
    assert float(model2.get_weights()[0].ravel()[0]) == pytest.approx(w2, abs=1e-5)
    assert history2 == {"loss": pytest.approx([np.mean(losses2)], abs=1e-5)}


@pytest.mark.parametrize("change", [
    {"epochs": 0}, {"steps_per_epoch": -1}, {"global_batch_size": True},
    {"steps_per_execution": 1.5}, {"checkpoint_every_steps": -1}, {"validation_steps": 0},
    {"early_stopping_patience": 0},
])
def test_loop_settings_name_the_bad_field(change):
    good = dict(epochs=1, steps_per_epoch=1, global_batch_size=1)
    LoopSettings(**good)
    (name, value), = change.items()
    with pytest.raises(SpecError, match=rf"`{name}` must be an integer >= \d\. Received: "
                                        rf"{name}={value!r}"):
        LoopSettings(**{**good, **change})


class _NestedBlocks(keras.Model):
    """Layers kept in a nested list, as the ranking scorer keeps its hidden blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = [[keras.layers.Dense(1, use_bias=False),
                        keras.layers.BatchNormalization(momentum=0.5)]]

    def call(self, features, training=None):
        h = keras.ops.reshape(features["x"], (-1, 1))
        for dense, norm in self.blocks:
            h = norm(dense(h), training=training)
        return keras.ops.reshape(h, (-1, L))


def test_the_checkpoint_restores_state_of_layers_in_nested_lists(tmp_path):
    """BatchNormalization's moving statistics (non-trainable) survive a restart."""
    ckpt = str(tmp_path / "ckpt")
    model = _NestedBlocks()
    model({"x": X[:B]})
    _loop(model, ckpt, epochs=1, steps_per_epoch=3).run(_train_ds())
    moving = [v.numpy() for v in model.non_trainable_variables]
    assert not np.allclose(moving[0], 0.0)  # training moved the moving mean
    restored = _NestedBlocks()
    restored({"x": X[:B]})
    _, steps = _loop(restored, ckpt, epochs=1, steps_per_epoch=3).run(_train_ds())
    assert steps == 3  # restored at the end of epoch 0: nothing left to train
    for want, got in zip(model.weights, restored.weights):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
