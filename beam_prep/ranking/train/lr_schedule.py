"""Learning-rate schedules of ``training.lr_schedule``: warm-up, then constant, cosine or plateau.

The rate is a function of the optimizer's step ``s`` (its ``iterations`` before the update,
0-based), which both training loops checkpoint, so a resumed run continues the schedule where
it stopped. With ``r`` = ``learning_rate``, ``m`` = ``min_learning_rate``, ``W`` = warm-up
steps and ``T`` = the run's steps (``epochs x steps_per_epoch``):

==========  ================================================================================
schedule    rate at step ``s``
==========  ================================================================================
warm-up     the schedule's value times ``min(1, (s + 1) / W)`` (``W`` = 0: no warm-up)
constant    ``r``
cosine      ``m + (r - m) (1 + cos(pi p)) / 2`` with ``p = clip((s - W) / (T - W), 0, 1)``
plateau     ``r * scale``; ``scale`` starts at 1 and is multiplied by ``plateau_factor``
            after ``plateau_patience`` epochs without a strict improvement of the monitored
            metric (the counter restarts after each reduction), never below ``m / r``
==========  ================================================================================

The plateau ``scale`` is an optimizer variable (so it is part of the state Keras hands to a
compiled JAX step, and of every checkpoint); its value and the plateau's counter are also
recorded in ``run_state.json`` (:class:`PlateauRule`, applied by
:class:`.run_state.EpochTracker` at each epoch end), from which a resumed run starts.

Example:
    >>> learning_rate_at(0, learning_rate=1.0, schedule="cosine", warmup_steps=2,
    ...                  total_steps=6)
    0.5
    >>> learning_rate_at(4, learning_rate=1.0, schedule="cosine", warmup_steps=2,
    ...                  total_steps=6)
    0.5
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import keras
from keras import ops


def learning_rate_at(step: int, *, learning_rate: float, schedule: str = "constant",
                     warmup_steps: int = 0, total_steps: int = 1,
                     min_learning_rate: float = 0.0, scale: float = 1.0) -> float:
    """The rate at optimizer step ``step`` in plain Python (the table of the module docstring).

    :class:`RankingSchedule` computes the same with Keras ops inside the train step.
    """
    rate = learning_rate
    if schedule == "cosine":
        p = min(max((step - warmup_steps) / max(total_steps - warmup_steps, 1), 0.0), 1.0)
        rate = min_learning_rate + (learning_rate - min_learning_rate) * 0.5 * (
            1.0 + math.cos(math.pi * p))
    elif schedule == "plateau":
        rate = learning_rate * scale
    if warmup_steps:
        rate *= min(1.0, (step + 1) / warmup_steps)
    return rate


class RankingSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """``training.lr_schedule`` as a Keras schedule (see the module docstring).

    Args:
        learning_rate: Peak rate ``r``.
        schedule: ``constant``, ``cosine`` or ``plateau``.
        warmup_steps: ``W`` (0 = none).
        total_steps: ``T``, the run's steps (cosine).
        min_learning_rate: ``m``.
        scale: Initial plateau scale (a resumed run's recorded value).
    """

    def __init__(self, learning_rate: float, *, schedule: str = "constant",
                 warmup_steps: int = 0, total_steps: int = 1, min_learning_rate: float = 0.0,
                 scale: float = 1.0) -> None:
        self.learning_rate = float(learning_rate)
        self.schedule = schedule
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.min_learning_rate = float(min_learning_rate)
        self.initial_scale = float(scale)
        self.scale: Any = None  # plateau: the optimizer variable made by attach()

    def attach(self, optimizer: keras.optimizers.Optimizer) -> None:
        """Creates the plateau's ``scale`` as a variable of ``optimizer`` (before it is built,
        so the variable order, hence the checkpoint layout, is fixed)."""
        if self.schedule == "plateau":
            self.scale = optimizer.add_variable(
                (), initializer=keras.initializers.Constant(self.initial_scale),
                dtype="float32", aggregation="only_first_replica", name="lr_scale")

    def set_scale(self, value: float) -> None:
        """Sets the plateau scale (between steps; the next step uses it)."""
        if self.scale is not None:
            self.scale.assign(value)

    def __call__(self, step: Any) -> Any:
        s = ops.cast(step, "float32")
        rate: Any = ops.convert_to_tensor(self.learning_rate, "float32")
        if self.schedule == "cosine":
            span = float(max(self.total_steps - self.warmup_steps, 1))
            p = ops.clip((s - self.warmup_steps) / span, 0.0, 1.0)
            rate = self.min_learning_rate + (self.learning_rate - self.min_learning_rate) * (
                0.5 * (1.0 + ops.cos(math.pi * p)))
        elif self.schedule == "plateau" and self.scale is not None:
            rate = rate * ops.cast(self.scale, "float32")
        if self.warmup_steps:
            rate = rate * ops.minimum(1.0, (s + 1.0) / float(self.warmup_steps))
        return rate

    def get_config(self) -> dict[str, Any]:  # noqa: D102
        return {"learning_rate": self.learning_rate, "schedule": self.schedule,
                "warmup_steps": self.warmup_steps, "total_steps": self.total_steps,
                "min_learning_rate": self.min_learning_rate, "scale": self.initial_scale}


def make_schedule(training: Any, steps_per_epoch: int, *,
                  scale: float = 1.0) -> RankingSchedule | None:
    """The schedule of a ``TrainHparams`` (None: a constant rate without warm-up).

    Args:
        training: ``TrainHparams`` (``lr_schedule``, ``learning_rate``, ``warmup_steps`` or
            ``warmup_epochs``, ``min_learning_rate``, ``epochs``).
        steps_per_epoch: The run's resolved steps per epoch.
        scale: Initial plateau scale (``RunState.lr_scale`` of a resumed run).
    """
    warmup = training.warmup_steps or round(training.warmup_epochs * steps_per_epoch)
    if training.lr_schedule == "constant" and not warmup:
        return None
    return RankingSchedule(training.learning_rate, schedule=training.lr_schedule,
                           warmup_steps=warmup, total_steps=training.epochs * steps_per_epoch,
                           min_learning_rate=training.min_learning_rate, scale=scale)


@dataclasses.dataclass(frozen=True)
class PlateauRule:
    """The plateau reduction, applied to a :class:`.run_state.RunState` at each epoch end.

    Attributes:
        factor: Multiplier of the scale at each reduction.
        patience: Epochs without a strict improvement before a reduction.
        min_scale: Floor of the scale (``min_learning_rate / learning_rate``).
        apply: Called with the new scale after a reduction (sets the optimizer's variable).
    """

    factor: float
    patience: int
    min_scale: float = 0.0
    apply: Any = None

    def epoch_end(self, state: Any, improved: bool) -> bool:
        """Updates ``state.lr_scale`` / ``state.plateau_wait``; True when the rate dropped."""
        if improved:
            state.plateau_wait = 0
            return False
        state.plateau_wait += 1
        if state.plateau_wait < self.patience:
            return False
        state.plateau_wait = 0
        new = max(state.lr_scale * self.factor, self.min_scale)
        if new >= state.lr_scale:
            return False
        state.lr_scale = new
        if self.apply is not None:
            self.apply(new)
        return True
