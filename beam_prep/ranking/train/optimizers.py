"""Optimizer factory and the TensorBoard availability check shared by both training loops.

Both the Keras ``fit`` path (:mod:`.launcher`) and the custom loop (:mod:`.loop`) import from
here, so neither imports the other.

Example:
    >>> opt = make_optimizer("sgd", 0.1)
    >>> type(opt).__name__, round(float(opt.learning_rate), 3)
    ('SGD', 0.1)
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import keras

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import OPTIMIZERS


def make_optimizer(name: str, learning_rate: float, schedule: Any = None, *,
                   ema_momentum: float | None = None) -> keras.optimizers.Optimizer:
    """Keras optimizer from ``training.optimizer`` and ``training.learning_rate``.

    Create it inside ``strategy.scope()`` when training under a distribution strategy (its
    ``iterations`` variable is made here). ``schedule``: a
    :class:`.lr_schedule.RankingSchedule` used instead of the constant ``learning_rate``
    (attached here: the plateau's scale becomes a variable of this optimizer).
    ``ema_momentum``: keep moving averages of the weights (``training.ema_momentum``,
    :mod:`.ema`; None = off).

    Raises:
        SpecError: ``name`` is not one of ``hparams.OPTIMIZERS``.
    """
    classes = {"adam": keras.optimizers.Adam, "adagrad": keras.optimizers.Adagrad,
               "sgd": keras.optimizers.SGD}
    if name not in OPTIMIZERS or name not in classes:
        raise SpecError(f"`training.optimizer` must be one of {', '.join(map(repr, OPTIMIZERS))}."
                        f" Received: optimizer={name!r}")
    ema: dict[str, Any] = {} if ema_momentum is None else {
        "use_ema": True, "ema_momentum": ema_momentum}
    optimizer = classes[name](learning_rate=learning_rate if schedule is None else schedule,
                              **ema)
    if schedule is not None:
        schedule.attach(optimizer)
    return optimizer


def tensorboard_available() -> bool:
    """True when the ``tensorboard`` package is importable (tf.summary needs it).

    Without it TensorBoard logging is skipped with a warning (``pip install tensorboard``).
    """
    if importlib.util.find_spec("tensorboard") is not None:
        return True
    warnings.warn("TensorBoard logs are not written: the `tensorboard` package is not "
                  "installed (pip install tensorboard).", stacklevel=2)
    return False
