"""Custom training loop: ``strategy.run`` inside a ``tf.function`` looping over ``tf.range``.

It works under every ``tf.distribute`` strategy, including MultiWorkerMirroredStrategy where
Keras 3 ``fit`` does not (see :mod:`.strategy`), and with ``steps_per_execution > 1`` on
several replicas. Everything it needs comes in as arguments (model, datasets, strategy,
optimizer factory, loss, metric factory, directories, :class:`LoopSettings`); it knows nothing
about the YAML config or the launcher.

What it does, in order:

* builds the optimizer under ``strategy.scope()`` and restores the latest
  ``tf.train.CheckpointManager`` checkpoint (every model variable + the optimizer, hence
  the step) from
  ``checkpoint_dir``: a restarted run resumes at the epoch the step count falls in;
* per execution: ``steps_per_execution`` steps (fewer at an epoch end), the mean loss logged
  to TensorBoard under ``loss`` at the step reached; a checkpoint every
  ``checkpoint_every_steps`` steps and at each epoch end;
* per epoch: ``history["loss"]`` is the mean of the execution losses; validation (when a
  dataset is given) runs on each worker over the whole validation set, or
  ``validation_steps`` batches, without collectives, so every worker takes the same
  early-stopping decision; ``val_loss`` and ``val_<metric>`` (exact means over lists,
  :mod:`.validation`) go to the history and to TensorBoard;
* early stopping on ``early_stopping_metric`` by :class:`.run_state.EpochTracker`, the rule
  ``fit`` uses too: a strict improvement resets the patience (lower is better when the name
  contains ``loss``). Without a ``tracker`` argument the loop keeps the best weights in
  memory and puts them back at the end; with one (the launcher's) the tracker saves them
  to ``best.weights.h5`` and the launcher loads them. Checkpoints keep the last state;
* a non-finite loss (after every execution) or validation metric raises
  :class:`.guard.Diverged` before that step's checkpoint is written; with ``interrupts``
  (:class:`.interrupt.InterruptHandler`) Ctrl-C stops at the next execution or epoch
  boundary.

The per-replica loss is ``sum(per-list losses) / global_batch_size``, summed over replicas.

Example:
    >>> settings = LoopSettings(epochs=2, steps_per_epoch=3, global_batch_size=4)
    >>> history, steps = CustomLoop(model, strategy=tf.distribute.get_strategy(),
    ...     make_optimizer=lambda: keras.optimizers.SGD(0.1), loss=loss_fn,
    ...     make_metrics=lambda: ranking_metrics([5]), settings=settings,
    ...     checkpoint_dir="model/ckpt", log_dir="model/logs").run(train_ds, valid_ds)
    ...                                                               # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.ranking.train.ema import averaged_weights, use_averages
from beam_prep.ranking.train.guard import check_logs
from beam_prep.ranking.train.interrupt import InterruptHandler
from beam_prep.ranking.train.run_state import EpochTracker, RunState, restore_error
from beam_prep.ranking.train.validation import Validation, model_scorer

History = dict[str, list[float]]


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    """How long and how the custom loop trains.

    Attributes:
        epochs: Number of epochs (a resumed run counts the epochs already done).
        steps_per_epoch: Optimizer steps per epoch.
        global_batch_size: Lists per step over all replicas (the loss divisor).
        steps_per_execution: Steps fused into one ``tf.function`` call.
        checkpoint_every_steps: Extra checkpoint period in steps (0 = only at epoch ends).
        validation_steps: Validation batches per evaluation (None = the whole set).
        early_stopping_metric: History key watched, e.g. ``val_ndcg_10`` (None = off).
        early_stopping_patience: Epochs without a strict improvement before stopping.
    """

    epochs: int
    steps_per_epoch: int
    global_batch_size: int
    steps_per_execution: int = 1
    checkpoint_every_steps: int = 0
    validation_steps: int | None = None
    early_stopping_metric: str | None = None
    early_stopping_patience: int = 3

    def __post_init__(self) -> None:
        for name in ("epochs", "steps_per_epoch", "global_batch_size", "steps_per_execution",
                     "early_stopping_patience"):
            _check_int(name, getattr(self, name), minimum=1)
        _check_int("checkpoint_every_steps", self.checkpoint_every_steps, minimum=0)
        if self.validation_steps is not None:
            _check_int("validation_steps", self.validation_steps, minimum=1)


def _check_int(name: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"`{name}` must be an integer >= {minimum}. Received: {name}={value!r}")


class CustomLoop:
    """Trains ``model`` with the custom loop (see the module docstring).

    Args:
        model: A built Keras model (created under ``strategy.scope()``).
        strategy: The ``tf.distribute`` strategy the model lives in.
        make_optimizer: Returns a fresh optimizer; called once, under ``strategy.scope()``.
        loss: Loss returning one value per list (``reduction=None``).
        make_metrics: Returns fresh, unbuilt Keras metrics; called once per validation.
        settings: :class:`LoopSettings`.
        checkpoint_dir: Where ``tf.train.CheckpointManager`` keeps the last 3 checkpoints.
        log_dir: TensorBoard directory (None = no TensorBoard logs).
        on_epoch_end: Called as ``on_epoch_end(epoch, history values of that epoch)`` after
            each epoch (``beam-prep train`` prints a line).
        tracker: Best-epoch / early-stopping record (default: a new one in memory from
            ``settings``, whose best weights are restored at the end of :meth:`run`).
        interrupts: Ctrl-C handler whose flag is checked at every execution and epoch end.
    """

    def __init__(self, model: keras.Model, *, strategy: tf.distribute.Strategy,
                 make_optimizer: Callable[[], keras.optimizers.Optimizer],
                 loss: Callable[[Any, Any], Any],
                 make_metrics: Callable[[], Sequence[keras.metrics.Metric]],
                 settings: LoopSettings, checkpoint_dir: str,
                 log_dir: str | None = None,
                 on_epoch_end: Callable[[int, dict[str, float]], None] | None = None,
                 tracker: EpochTracker | None = None,
                 interrupts: InterruptHandler | None = None) -> None:
        self.model = model
        self.interrupts = interrupts
        self._best_weights: list[Any] | None = None
        self._own_tracker = tracker is None
        if tracker is None:
            state = RunState(epochs=settings.epochs, monitor=settings.early_stopping_metric)
            tracker = EpochTracker(state, patience=settings.early_stopping_patience,
                                   save_best=self._keep_best)
        self.tracker = tracker
        self.on_epoch_end = on_epoch_end
        self.strategy = strategy
        self.loss = loss
        self.make_metrics = make_metrics
        self.settings = settings
        with strategy.scope():
            self.optimizer = make_optimizer()
            self.optimizer.build(model.trainable_variables)
        # `variables`: every model variable by position. TensorFlow's object graph does not
        # reach layers a Keras model keeps in nested Python lists (the scorer's hidden
        # blocks): their non-trainable state (BatchNormalization's moving statistics) would
        # be missing from the checkpoint, their trainable weights reached only through the
        # optimizer.
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=self.optimizer,
                                              variables=list(model.weights))
        self.manager = tf.train.CheckpointManager(self.checkpoint, checkpoint_dir,
                                                  max_to_keep=3)
        if self.manager.latest_checkpoint:
            try:
                self.checkpoint.restore(self.manager.latest_checkpoint)
            except ValueError as e:
                raise restore_error(os.path.dirname(checkpoint_dir), e) from e
        self.writer = tf.summary.create_file_writer(log_dir) if log_dir else None
        self.train_steps = self._make_train_steps()
        self.score = model_scorer(model)

    def _keep_best(self) -> None:
        self._best_weights = self.model.get_weights()

    def _check_interrupt(self, epoch: int) -> None:
        if self.interrupts is not None:
            self.interrupts.epoch = epoch
            self.interrupts.check()

    @property
    def step(self) -> int:
        """Optimizer steps taken so far (restored ones included)."""
        return int(self.optimizer.iterations.numpy())

    def _make_train_steps(self) -> Callable[[Any, Any], Any]:
        model, optimizer, strategy = self.model, self.optimizer, self.strategy
        loss_fn, global_batch = self.loss, self.settings.global_batch_size

        def replica_step(features: Any, labels: Any) -> Any:
            with tf.GradientTape() as tape:
                scores = model(features, training=True)
                per_list = tf.reshape(loss_fn(labels, scores), [-1])
                loss = tf.reduce_sum(per_list) / global_batch
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        @tf.function
        def train_steps(iterator: Any, n: Any) -> Any:
            total = tf.constant(0.0)
            for _ in tf.range(n):
                features, labels = next(iterator)
                per_replica = strategy.run(replica_step, args=(features, labels))
                total += strategy.reduce("SUM", per_replica, axis=None)
            return total / tf.cast(n, tf.float32)

        return train_steps

    def _scalar(self, name: str, value: float, step: int) -> None:
        if self.writer is not None:
            with self.writer.as_default():
                tf.summary.scalar(name, value, step=step)

    def train_epoch(self, iterator: Any, epoch: int) -> float:
        """Runs the steps of ``epoch`` still to do; returns the mean execution loss."""
        s = self.settings
        end = (epoch + 1) * s.steps_per_epoch
        losses: list[float] = []
        last_ckpt = self.step
        while self.step < end:
            n = min(s.steps_per_execution, end - self.step)
            losses.append(float(self.train_steps(iterator, tf.constant(n))))
            step = self.step
            check_logs({"loss": losses[-1]}, step=step, epoch=epoch)
            self._check_interrupt(epoch)
            self._scalar("loss", losses[-1], step)
            if s.checkpoint_every_steps and step - last_ckpt >= s.checkpoint_every_steps:
                self.manager.save(checkpoint_number=step)
                last_ckpt = step
        return sum(losses) / max(len(losses), 1)

    def evaluate(self, valid_ds: tf.data.Dataset) -> dict[str, float]:
        """``val_loss`` and ``val_<metric>`` over the validation set (or
        ``validation_steps`` batches), exact means over lists (:mod:`.validation`)."""
        validation = Validation(self.loss, self.make_metrics, self.settings.validation_steps)
        return validation.evaluate(self.score, valid_ds)

    def run(self, train_ds: tf.data.Dataset,
            valid_ds: tf.data.Dataset | None = None) -> tuple[History, int]:
        """Trains the remaining epochs; returns ``(history, optimizer steps)``."""
        s = self.settings
        iterator = iter(self.strategy.experimental_distribute_dataset(train_ds))
        history: History = {}
        for epoch in range(self.step // s.steps_per_epoch, s.epochs):
            self._check_interrupt(epoch)
            history.setdefault("loss", []).append(self.train_epoch(iterator, epoch))
            # Validation and the best-epoch tracker see the weight averages
            # (training.ema_momentum; else a no-op), the checkpoint the trained weights.
            if valid_ds is not None:
                with averaged_weights(self.optimizer):
                    values = self.evaluate(valid_ds)
                check_logs(values, epoch=epoch)
                for name, value in values.items():
                    history.setdefault(name, []).append(value)
                    self._scalar(name, value, self.step)
            self.manager.save(checkpoint_number=self.step)
            logs = {k: v[-1] for k, v in history.items()}
            if self.on_epoch_end is not None:
                self.on_epoch_end(epoch, logs)
            with averaged_weights(self.optimizer):
                stop = self.tracker.epoch_end(epoch, logs)
            self._check_interrupt(epoch + 1)  # this epoch is saved: a rerun starts the next
            if stop:
                break
        use_averages(self.optimizer)  # the last epoch as the tracker saw it
        if (self._own_tracker and self._best_weights is not None
                and not self.tracker.best_is_in_memory()):
            self.model.set_weights(self._best_weights)
        if self.writer is not None:
            self.writer.flush()
        return history, self.step
