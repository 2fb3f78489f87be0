"""No model with non-finite scores is exported: finite checks and the staged export.

* **While training** (:func:`keras_callback` in ``fit`` on TensorFlow and JAX, and
  :func:`check_logs` in the custom loop): a non-finite loss or metric stops training at once
  with :class:`Diverged` (the step and the value). The launcher then scans the training lists
  for the feature that is out of range (:func:`find_out_of_range`: a non-finite value, or a
  magnitude above :data:`HUGE`, whose square overflows float32) and raises one line
  (:func:`diverged_message`) naming the step, that feature and the fix. Checkpoints of the
  failing step are not written (the guard runs before the checkpoint callbacks) and nothing is
  exported, so the previous export stays as it was.
* **Before exporting**: :func:`check_scores` scores a validation batch (the training data
  when there is no validation set) with the final model; a non-finite score of a real
  document refuses the export.
* **Exporting**: :func:`write_staged` writes the SavedModel to ``<export_dir>.staging`` and
  swaps it in only once it is complete (the old export is renamed to
  ``<export_dir>.previous``, the staging directory renamed to ``export_dir``, then the old
  one deleted). An interrupted swap is repaired by the next run (:func:`recover_export`).

Example:
    >>> check_logs({"loss": 0.5, "val_ndcg_10": 0.7})
    >>> check_logs({"loss": float("nan")}, step=12, epoch=1)
    Traceback (most recent call last):
    ...
    beam_prep.ranking.train.guard.Diverged: loss is nan at step 12 (epoch 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from beam_prep.errors import BeamPrepError, InputError

#: Magnitudes above this (the square root of float32's largest value, 1.8e19) overflow
#: float32 once squared (batch statistics, Adam's second moment) or summed in a layer.
HUGE = float(np.sqrt(np.finfo(np.float32).max))


class NonFiniteError(BeamPrepError, ArithmeticError):
    """Training produced a non-finite loss, metric or score; nothing was exported."""


class Diverged(NonFiniteError):
    """A non-finite loss or metric at ``step`` (the launcher adds the culprit feature).

    Attributes:
        name: The log entry (``loss``, ``val_ndcg_10``, ...).
        value: Its value.
        step: Optimizer steps taken when it was seen (None: validation).
        epoch: 0-based epoch.
    """

    def __init__(self, name: str, value: float, *, step: int | None, epoch: int | None) -> None:
        self.name, self.value, self.step, self.epoch = name, value, step, epoch
        super().__init__(f"{name} is {value} at {where(step, epoch)}")


def where(step: int | None, epoch: int | None) -> str:
    """``step 12 (epoch 2)``, or ``the validation of epoch 2`` without a step."""
    if step is None:
        return f"the validation of epoch {(epoch or 0) + 1}"
    return f"step {step}" + (f" (epoch {epoch + 1})" if epoch is not None else "")


def check_logs(logs: Mapping[str, Any], *, step: int | None = None,
               epoch: int | None = None) -> None:
    """Raises :class:`Diverged` for the first non-finite value of ``logs``."""
    for name, value in logs.items():
        v = float(value)
        if not math.isfinite(v):
            raise Diverged(name, v, step=step, epoch=epoch)


def find_out_of_range(batches: Iterable[tuple[Mapping[str, Any], Any]], names: Sequence[str],
                      *, max_lists: int = 100_000) -> tuple[str, float, int] | None:
    """The float feature value most out of range in the first ``max_lists`` lists.

    Looks at the real entries (label >= 0) of example features and at context features;
    out of range = non-finite, or ``|x| > HUGE``. A non-finite value wins over a huge one,
    a larger magnitude over a smaller one.

    Returns:
        ``(feature, value, list index)``, or None when every value is in range.
    """
    worst: tuple[float, str, float, int] | None = None  # (rank, name, value, list)
    seen = 0
    for features, labels in batches:
        valid = np.asarray(labels) >= 0
        for name in names:
            x = np.asarray(features[name])
            if x.dtype.kind != "f":
                continue
            x = x.astype("float64")
            if x.ndim >= 2 and x.shape[:2] == valid.shape:
                x = np.where(valid.reshape(valid.shape + (1,) * (x.ndim - 2)), x, 0.0)
            flat = x.reshape(x.shape[0], -1)
            rank = np.where(np.isfinite(flat), np.abs(flat), np.inf)
            i, j = np.unravel_index(int(np.argmax(rank)), rank.shape)
            if rank[i, j] > HUGE and (worst is None or rank[i, j] > worst[0]):
                worst = (float(rank[i, j]), name, float(flat[i, j]), seen + int(i))
        seen += valid.shape[0]
        if seen >= max_lists:
            break
    return None if worst is None else worst[1:]


def diverged_message(error: Diverged, culprit: tuple[str, float, int] | None, *,
                     transform: str, learning_rate: float, lists_scanned: str) -> str:
    """One line: what went non-finite where, the culprit feature if any, and the fix."""
    head = (f"Training stopped: {error.name} is {error.value} at "
            f"{where(error.step, error.epoch)}; nothing was exported (an earlier export is "
            "unchanged). ")
    if culprit is None:
        return head + (f"No feature value is out of range ({lists_scanned} scanned), so the "
                       f"optimisation diverged: lower `training.learning_rate` (now "
                       f"{learning_rate:g}).")
    name, value, index = culprit
    if not math.isfinite(value):
        return head + (f"Feature {name!r} holds {value} (training list {index}): remove or "
                       "fix non-finite values in the data.")
    return head + (f"Feature {name!r} holds {value:.3g} (training list {index}), beyond "
                   f"{HUGE:.2g}, which overflows float32 in the network with "
                   f"`model.input_transform: {transform}`: use `log1p` (the default) or "
                   "`piecewise_linear`, which keep any float32 finite, or fix the value in "
                   "the data.")


def keras_callback(current_epoch: Callable[[], int | None] | None = None) -> Any:
    """A ``keras.callbacks.Callback`` raising :class:`Diverged` at the first non-finite log.

    Checks every training batch's logs (after the step; with ``steps_per_execution`` > 1
    Keras calls it once per execution, so the loss is read back once per execution) and each
    epoch's logs (validation included). Put it first in the callback list: it then raises
    before any checkpoint of the failing step is written. The step is read only on failure;
    when the train function says which step of its execution went non-finite
    (``first_nonfinite()``, :class:`~.jax_feed.DeviceLoop`), the error names that step.
    """
    import keras

    class _FiniteGuard(keras.callbacks.Callback):
        epoch: int | None = None

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.epoch = epoch

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            try:
                check_logs(logs or {}, epoch=self.epoch, step=0)
            except Diverged as e:
                raise Diverged(e.name, e.value, step=self._step(),
                               epoch=self.epoch) from None

        def _step(self) -> int:
            step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            fn = self.model.train_function
            first = getattr(fn, "first_nonfinite", lambda: None)()
            return step if first is None else step - fn.last_count + first + 1

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            check_logs(logs or {}, epoch=epoch)

    return _FiniteGuard()


def check_scores(scores: Any, labels: Any, *, what: str) -> None:
    """NonFiniteError when a real document (label >= 0) of ``labels`` has a non-finite score.

    Args:
        scores: ``[B, L]`` scores of the final model.
        labels: ``[B, L]`` labels (padding < 0).
        what: Names the batch in the message (``a validation batch``).
    """
    s = np.asarray(scores, dtype="float64")
    real = np.asarray(labels) >= 0
    bad = real & ~np.isfinite(s)
    if bad.any():
        example = s[bad][0]
        raise NonFiniteError(
            f"The trained model scores {int(bad.sum())} of the {int(real.sum())} documents of "
            f"{what} as non-finite (e.g. {example}); nothing was exported (an earlier export "
            "is unchanged). Check the data for huge or non-finite feature values, or lower "
            "`training.learning_rate`.")


def _gfile() -> Any:
    import tensorflow as tf

    return tf.io.gfile


def staging_paths(path: str) -> tuple[str, str]:
    """``(<path>.staging, <path>.previous)``."""
    base = path.rstrip("/") or path
    return f"{base}.staging", f"{base}.previous"


def recover_export(path: str) -> None:
    """Puts ``<path>.previous`` back when a swap stopped between its two renames."""
    gfile = _gfile()
    _, previous = staging_paths(path)
    if gfile.exists(previous):
        if gfile.exists(path):
            gfile.rmtree(previous)
        else:
            gfile.rename(previous, path)


def check_export_target(path: str) -> None:
    """Refuses an export folder that holds something other than an earlier export.

    Each export replaces the whole folder at ``path``, so files of another kind there would
    be deleted. Checked before training, not after it.

    Raises:
        InputError: ``path`` is a file, or a non-empty folder without ``saved_model.pb``.
    """
    gfile = _gfile()
    if not gfile.exists(path):
        return
    if not gfile.isdir(path):
        raise InputError(f"`training.export_dir` {path} is a file; the export is a folder. "
                         "Choose another export_dir, or move the file.")
    names = sorted(gfile.listdir(path))
    if names and "saved_model.pb" not in names:
        shown = ", ".join(n.rstrip("/") for n in names[:3]) + (", ..." if len(names) > 3 else "")
        raise InputError(
            f"`training.export_dir` {path} holds files that are not a SavedModel ({shown}), "
            "and each export replaces the whole folder. Choose a new or empty export_dir, "
            "or move those files.")


def write_staged(path: str, write: Callable[[str], Any]) -> str:
    """Calls ``write(staging_dir)``, then swaps the staging directory in at ``path``.

    ``path`` is replaced only when ``write`` returned; when it raises (or the process is
    interrupted) the staging directory is deleted and ``path`` is untouched.
    """
    gfile = _gfile()
    staging, previous = staging_paths(path)
    recover_export(path)
    if gfile.exists(staging):
        gfile.rmtree(staging)
    try:
        write(staging)
    except BaseException:
        if gfile.exists(staging):
            gfile.rmtree(staging)
        raise
    parent = path.rstrip("/").rsplit("/", 1)[0] if "/" in path.rstrip("/") else ""
    if parent:
        gfile.makedirs(parent)
    if gfile.exists(path):
        gfile.rename(path, previous)
    gfile.rename(staging, path)
    if gfile.exists(previous):
        gfile.rmtree(previous)
    return path
