"""Weight averaging (``training.ema_momentum``): validation, the best checkpoint and the
export use the exponential moving average of the weights, training steps the weights.

With ``ema_momentum: m`` the Keras optimizer keeps, after every step,
``average = m * average + (1 - m) * weight`` for each trainable variable (``use_ema``). At
each epoch end :func:`averaged_weights` puts the averages into the model for the
validation pass and the best-epoch tracker (so ``best.weights.h5``, and the export made
from it, hold averages), then puts the trained weights back before the epoch's checkpoint:
a resumed run continues from the same weights and the same averages (both are in the
checkpoint, the averages as optimizer variables). One definition for the three loops: Keras
``fit`` on TensorFlow and JAX (:func:`keras_callbacks`) and the custom loop.

Only trainable variables are averaged (Keras' rule): BatchNormalization's moving statistics
(``batch_norm``, ``dasalc``) stay those of the last step. Training-set metrics (``loss``)
come from the trained weights, ``val_*`` from the averages. The averages double the
optimizer's copy of the weights and are updated densely at every step, embedding tables
included; each epoch end copies the trainable weights to the host and back.

Example:
    >>> import keras, numpy as np
    >>> w = keras.Variable(np.zeros(1, "float32"))
    >>> opt = keras.optimizers.SGD(1.0, use_ema=True, ema_momentum=0.5)
    >>> opt.build([w])
    >>> for _ in range(2):
    ...     _ = opt.apply_gradients([(keras.ops.ones(1), w)])
    >>> float(w.numpy()[0])
    -2.0
    >>> with averaged_weights(opt):
    ...     float(w.numpy()[0])
    -1.5
    >>> float(w.numpy()[0])
    -2.0
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import keras


def uses_ema(optimizer: Any) -> bool:
    """True when ``optimizer`` keeps averages of the weights (``use_ema``, built)."""
    return bool(getattr(optimizer, "use_ema", False)) and hasattr(
        optimizer, "_model_variables_moving_average")


@contextlib.contextmanager
def averaged_weights(optimizer: Any) -> Iterator[None]:
    """The model's trainable variables hold ``optimizer``'s averages inside the block.

    The trained values are copied to the host first and assigned back on the way out,
    also when the block raises. A no-op for an optimizer without averages.

    Keras keeps the averages in ``_model_variables_moving_average``, in the order of the
    variables it was built with (``_trainable_variables``): the pair Keras' own
    ``SwapEMAWeights`` callback reads. That callback swaps on every test run and at epoch
    boundaries in its own order; the launcher needs the swap around its exact validation
    and tracker only, hence this one.
    """
    if not uses_ema(optimizer):
        yield
        return
    trained = [keras.ops.convert_to_numpy(v) for v in optimizer._trainable_variables]
    use_averages(optimizer)
    try:
        yield
    finally:
        for variable, value in zip(optimizer._trainable_variables, trained):
            variable.assign(value)


def keras_callbacks() -> tuple[Any, Any]:
    """``(enter, leave)``: ``fit`` callbacks around the epoch-end ones that must see the
    averages (validation, the finite guard, the best-epoch tracker); ``leave`` goes before
    the checkpoint callbacks. Both do nothing when the model's optimizer has no averages.
    """
    open_blocks: list[contextlib.AbstractContextManager[None]] = []

    class _Enter(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            block = averaged_weights(self.model.optimizer)
            block.__enter__()
            open_blocks.append(block)

    class _Leave(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            while open_blocks:
                open_blocks.pop().__exit__(None, None, None)

    return _Enter(), _Leave()


def use_averages(optimizer: Any) -> None:
    """Puts ``optimizer``'s averages into the model's trainable variables (a no-op without).

    Host copies: on JAX, assigning one variable to another would share the average's
    buffer, which the next jitted step may donate.
    """
    if not uses_ema(optimizer):
        return
    for variable, average in zip(optimizer._trainable_variables,
                                 optimizer._model_variables_moving_average):
        variable.assign(keras.ops.convert_to_numpy(average))
