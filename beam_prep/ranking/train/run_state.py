"""What a training run has done, kept in ``model_dir`` so reruns and resumes keep the best model.

``<model_dir>/run_state.json`` (human-readable, rewritten whole after every epoch through a
temporary file and a rename) records:

==================  ==========================================================================
key                 meaning
==================  ==========================================================================
``epochs``          the configured ``training.epochs`` of the last run
``epochs_done``     epochs trained so far (all runs together)
``finished``        true when training ended: every epoch done, or early stopping fired
``stopped_early``   true when early stopping fired
``monitor``         the metric that chooses the best epoch (null: the last epoch is the best)
``best``            ``{"epoch": E, "value": V, "metrics": {...}}``: the best epoch so far
                    (1-based) and every metric of it; its weights are ``best.weights.h5``
``bad_epochs``      epochs since ``best`` without a strict improvement (early stopping's
                    patience counter, carried across a resume)
``last``            ``{"epoch": E, "metrics": {...}}``: the last epoch trained
``lr_scale``        ``lr_schedule: plateau``: the learning rate's current multiplier
``plateau_wait``    ``lr_schedule: plateau``: epochs without improvement since the last
                    reduction (or the best epoch)
``export``          ``{"path": P, "epoch": E, "metrics": {...}}``: what the export holds
``settings``        the settings that shape the checkpoints (the model's layers and sizes,
                    the optimizer, weight averaging on or off: ``RankingHparams.
                    checkpoint_settings``) and the loop, which a rerun must keep
==================  ==========================================================================

:class:`EpochTracker` applies the one rule both training loops (Keras ``fit`` on TensorFlow
and JAX, and the custom loop) use: an epoch is the new best when its ``monitor`` value is
strictly better than the best so far (lower is better when the name contains ``loss``);
``patience`` epochs in a row without that stop training. A resumed run starts from the
recorded best and counter, so it never replaces a better model with a worse one.

Example:
    >>> state = RunState(epochs=3, monitor="val_ndcg_10")
    >>> tracker = EpochTracker(state, patience=1)
    >>> tracker.epoch_end(0, {"loss": 1.0, "val_ndcg_10": 0.5})
    False
    >>> tracker.epoch_end(1, {"loss": 0.9, "val_ndcg_10": 0.4})
    True
    >>> state.best["epoch"], state.stopped_early, state.finished
    (1, True, True)
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import posixpath
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from beam_prep.errors import InputError, NoticeWarning, SpecError
from beam_prep.ranking.train.hparams import is_member_dir

STATE_FILE = "run_state.json"
BEST_WEIGHTS = "best.weights.h5"
FORMAT = "beam_prep.run_state"
VERSION = 1
#: What ``training.retrain`` deletes from ``model_dir`` (the export is swapped at the end).
TRAINING_STATE = ("ckpt", "backup", "logs", STATE_FILE, BEST_WEIGHTS)


class RecordWarning(NoticeWarning):
    """A run record that cannot be fully checked (``beam-prep train`` prints it as one
    ``warning:`` line)."""


#: The fix every refused rerun names.
START_OVER = "start over (beam-prep train --retrain; training.retrain: true)"


def _gfile() -> Any:
    import tensorflow as tf

    return tf.io.gfile


def lower_is_better(monitor: str) -> bool:
    """A metric is minimised when its name contains ``loss`` (as Keras' ``mode="auto"``)."""
    return "loss" in monitor


@dataclasses.dataclass
class RunState:
    """The record of ``<model_dir>/run_state.json`` (see the module docstring).

    Attributes:
        epochs: Configured epochs.
        monitor: Metric choosing the best epoch (None: the last epoch is the best).
        epochs_done: Epochs trained so far.
        finished: Training ended (all epochs, or early stopping).
        stopped_early: Early stopping ended it.
        best: The best epoch (1-based ``epoch``, ``value``, ``metrics``), or None.
        bad_epochs: Epochs since ``best`` without a strict improvement.
        last: The last epoch trained (``epoch``, ``metrics``), or None.
        export: What the export holds (``path``, ``epoch``, ``metrics``), or None.
        lr_scale: Plateau multiplier of the learning rate (:mod:`.lr_schedule`).
        plateau_wait: Plateau counter: epochs without improvement since the last reduction.
        settings: The settings that shape the checkpoints (None: not recorded).
    """

    epochs: int
    monitor: str | None = None
    epochs_done: int = 0
    finished: bool = False
    stopped_early: bool = False
    best: dict[str, Any] | None = None
    bad_epochs: int = 0
    last: dict[str, Any] | None = None
    export: dict[str, Any] | None = None
    lr_scale: float = 1.0
    plateau_wait: int = 0
    settings: dict[str, Any] | None = None

    def to_json(self) -> str:
        """The file's text (sorted keys, indented)."""
        body = {"format": FORMAT, "version": VERSION, **dataclasses.asdict(self)}
        return json.dumps(body, indent=2, sort_keys=True, allow_nan=True) + "\n"

    @classmethod
    def from_json(cls, text: str, *, where: str) -> RunState:
        """Parses :meth:`to_json`'s text; InputError naming ``where`` when it is not one."""
        try:
            raw = json.loads(text)
            if raw.get("format") != FORMAT or raw.get("version") != VERSION:
                raise ValueError("not a run state")
            names = {f.name for f in dataclasses.fields(cls)}
            values = {k: v for k, v in raw.items() if k in names}
            _check_record(values)
            return cls(**values)
        except (ValueError, TypeError, AttributeError) as e:
            raise InputError(f"{where} is not a beam-prep run record ({e}). Delete it, or "
                             "rerun with --retrain to start the run over.") from e

    def is_finished(self, epochs: int) -> bool:
        """True when a run asking for ``epochs`` epochs has nothing left to train."""
        return (self.finished and self.stopped_early) or self.epochs_done >= epochs

    def ended_while_improving(self) -> bool:
        """True when the run used its whole epoch budget and its last epoch was the best of
        the monitored metric (early stopping never fired): more epochs would likely help."""
        return (self.finished and not self.stopped_early and self.monitor is not None
                and self.last is not None and self.best is not None
                and self.best.get("value") is not None
                and self.best["epoch"] == self.last["epoch"] >= self.epochs)

    def changed_settings(self, now: Mapping[str, Any]) -> list[str]:
        """``"key: A when trained, B now"`` for each recorded setting ``now`` differs in.

        Example:
            >>> RunState(epochs=1, settings={"training.optimizer": "adam"}).changed_settings(
            ...     {"training.optimizer": "sgd"})
            ['training.optimizer: "adam" when trained, "sgd" now']
        """
        recorded = self.settings or {}
        return [f"{key}: {json.dumps(recorded[key])} when trained, {json.dumps(value)} now"
                for key, value in now.items() if key in recorded and recorded[key] != value]

    def best_or_last(self) -> dict[str, Any] | None:
        """The epoch whose weights the trained model holds: ``best``, else ``last``."""
        return self.best if self.best is not None else self.last


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    """isinstance, where a bool is not a number."""
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def _check_epoch(name: str, entry: Any, *, value: bool) -> None:
    """``best`` / ``last`` / ``export``: ``{"epoch": int, "metrics": {name: number}}``."""
    if entry is None:
        return
    if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
        raise ValueError(f"{name} must be null or a mapping with `epoch` and `metrics`")
    epoch = entry.get("epoch")
    if not (_is(epoch, (int,)) or (name == "export" and epoch is None)):
        raise ValueError(f"{name}.epoch must be an integer, not {epoch!r}")
    if value and not (entry.get("value") is None or _is(entry.get("value"), (int, float))):
        raise ValueError(f"best.value must be a number or null, not {entry.get('value')!r}")
    if value and "value" not in entry:
        raise ValueError("best has no `value`")
    for k, v in entry["metrics"].items():
        if not _is(v, (int, float)):
            raise ValueError(f"{name}.metrics.{k} must be a number, not {v!r}")


#: Each key of the record and the JSON types it takes (None: null).
_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "epochs": (int,), "epochs_done": (int,), "bad_epochs": (int,), "plateau_wait": (int,),
    "monitor": (str, type(None)), "finished": (bool,), "stopped_early": (bool,),
    "lr_scale": (int, float), "settings": (dict, type(None)),
}


def _check_record(values: Mapping[str, Any]) -> None:
    """ValueError naming the first key of a parsed record whose value has the wrong type."""
    for key, kinds in _RECORD_TYPES.items():
        if key in values and not _is(values[key], kinds):
            names = ("a number",) if kinds == (int, float) else map(_type_name, kinds)
            raise ValueError(f"{key} must be {' or '.join(names)}, not {values[key]!r}")
    for key in ("epochs_done", "bad_epochs", "plateau_wait"):
        if values.get(key, 0) < 0:
            raise ValueError(f"{key} must be >= 0, not {values[key]!r}")
    _check_epoch("best", values.get("best"), value=True)
    _check_epoch("last", values.get("last"), value=False)
    _check_epoch("export", values.get("export"), value=False)


def _type_name(kind: type) -> str:
    return {int: "an integer", str: "a string", bool: "true or false",
            dict: "a mapping", type(None): "null"}[kind]


def restore_error(model_dir: str, error: Exception) -> InputError:
    """The error for checkpoints in ``model_dir`` that do not fit the model now built.

    A changed setting is refused before (``RunState.changed_settings``); this is the rest,
    e.g. a vocabulary that grew, so an embedding table changed size.
    """
    text = str(error).strip()
    # Keras lists the layers and, per variable, the shape now and the shape it received.
    keras_shapes = re.search(r"variable\.shape=(\([^)]*\)), Received: value\.shape=(\([^)]*\))"
                             r".*?path=([^,\s]+)", text, re.S)
    if keras_shapes:
        now, saved, path = keras_shapes.groups()
        what = f"{path}: shape {saved} in the checkpoint, {now} now"
    else:
        what = text.splitlines()[0] if text else type(error).__name__
    return InputError(
        f"The checkpoints in {model_dir} do not fit the model now configured ({what}). "
        f"Resume with the config and data artifacts it was trained with, or {START_OVER}.")


def state_path(model_dir: str) -> str:
    """``<model_dir>/run_state.json``."""
    return os.path.join(model_dir, STATE_FILE)


def load_state(model_dir: str) -> RunState | None:
    """The recorded state of ``model_dir``; None when there is none."""
    path = state_path(model_dir)
    gfile = _gfile()
    if not gfile.exists(path):
        return None
    with gfile.GFile(path, "r") as f:
        return RunState.from_json(f.read(), where=path)


def save_state(model_dir: str, state: RunState) -> None:
    """Writes ``state`` to ``<model_dir>/run_state.json`` (temporary file, then rename)."""
    gfile = _gfile()
    gfile.makedirs(model_dir)
    path = state_path(model_dir)
    tmp = f"{path}.tmp-{os.getpid()}"
    with gfile.GFile(tmp, "w") as f:
        f.write(state.to_json())
    gfile.rename(tmp, path, overwrite=True)


def _comparable(path: str) -> str:
    """``path`` normalised for comparing folders: absolute when local, no trailing ``/``."""
    scheme, sep, rest = path.partition("://")
    if sep:
        return f"{scheme}://{posixpath.normpath(rest)}"
    return os.path.abspath(path)


def check_export_placement(model_dir: str, export_dir: str) -> None:
    """SpecError when ``export_dir`` is or holds ``model_dir``, or lies in its training state.

    Each export replaces its whole folder, so it would delete the checkpoints and the record.

    Example:
        >>> check_export_placement("out/run", "out/run/export")   # the default: fine
        >>> check_export_placement("out/run", "out")
        Traceback (most recent call last):
        ...
        beam_prep.errors.SpecError: `training.export_dir` out holds or is model_dir out/run ...
    """
    export, model = _comparable(export_dir), _comparable(model_dir)
    inside = export.startswith(model + "/")
    first = export[len(model) + 1:].split("/")[0] if inside else ""
    if export == model or model.startswith(export + "/") or first in TRAINING_STATE \
            or is_member_dir(first):
        raise SpecError(
            f"`training.export_dir` {export_dir} holds or is model_dir {model_dir} or its "
            "training state, and each export replaces its whole folder. Choose a folder "
            f"apart from them, e.g. {model_dir.rstrip('/')}/export (the default).")


def check_model_dir(model_dir: str) -> None:
    """Creates ``model_dir``; InputError when it is a file or cannot be written to.

    Checked before anything is trained or written, so a bad path fails in one line, not
    after the first epoch.
    """
    gfile = _gfile()
    where = f"`training.model_dir` {model_dir}"
    if gfile.exists(model_dir) and not gfile.isdir(model_dir):
        raise InputError(f"{where} is a file; it must be a folder (checkpoints, run_state.json). "
                         "Choose another model_dir, or move the file.")
    probe = os.path.join(model_dir, f".write-test-{os.getpid()}")
    try:
        gfile.makedirs(model_dir)
        with gfile.GFile(probe, "w") as f:
            f.write("")
        gfile.remove(probe)
    except Exception as e:  # noqa: BLE001 - every filesystem's error: one line
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{where} cannot be written to ({detail}). Make it writable, or "
                         "choose another model_dir.") from e


def member_dirs(model_dir: str) -> tuple[str, ...]:
    """The ``member_<i>`` folders of ensemble members in ``model_dir`` (any ensemble size)."""
    gfile = _gfile()
    if not gfile.isdir(model_dir):
        return ()
    names = (n.rstrip("/") for n in gfile.listdir(model_dir))
    return tuple(sorted(n for n in names if is_member_dir(n)))


def clear_training_state(model_dir: str, extra: tuple[str, ...] = ()) -> list[str]:
    """Deletes what :data:`TRAINING_STATE` (and ``extra``) name in ``model_dir``; returns them.

    The export (``<model_dir>/export`` by default) is left alone: a retrained model replaces
    it only when the new run ends with a finite model.
    """
    gfile = _gfile()
    removed = []
    for name in (*TRAINING_STATE, *extra):
        path = os.path.join(model_dir, name)
        if gfile.exists(path):
            if gfile.isdir(path):
                gfile.rmtree(path)
            else:
                gfile.remove(path)
            removed.append(path)
    return removed


def save_weights_atomic(model: Any, path: str) -> None:
    """``model.save_weights(path)`` through a temporary file: the file is never half written."""
    tmp = f"{path[:-len('.weights.h5')]}.tmp-{os.getpid()}.weights.h5"
    model.save_weights(tmp)
    _gfile().rename(tmp, path, overwrite=True)


def load_weights_to_score(model: Any, path: str) -> None:
    """``model.load_weights(path)`` for a model that is only scored and exported from now on.

    The file also holds the optimizer's slots. A model whose optimizer has not taken a step
    in this process (a finished ensemble member reloaded on a rerun) makes Keras skip them
    with a warning that reads like a failed resume; they are not needed here, so it is not
    shown. Every model variable is still loaded, and a mismatch still raises.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
        model.load_weights(path)


def _floats(logs: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in logs.items()}


class EpochTracker:
    """Applies the best-epoch / early-stopping rule to a :class:`RunState` (module docstring).

    Args:
        state: The run's state (updated in place).
        patience: Epochs without a strict improvement of ``state.monitor`` before stopping.
        save_best: Called when an epoch becomes the best (saves its weights).
        store: Called with the state after every epoch (persists it).
        plateau: ``lr_schedule: plateau``'s :class:`.lr_schedule.PlateauRule`: told at each
            epoch end whether the monitored metric improved (before the state is stored).
    """

    def __init__(self, state: RunState, *, patience: int,
                 save_best: Callable[[], None] | None = None,
                 store: Callable[[RunState], None] | None = None,
                 plateau: Any = None) -> None:
        self.state = state
        self.patience = patience
        self.plateau = plateau
        self._save_best = save_best
        self._store = store
        #: 1-based epochs trained by this tracker (this run).
        self.trained: list[int] = []

    def improves(self, value: float) -> bool:
        """True when ``value`` of the monitored metric beats the recorded best."""
        best = self.state.best
        if best is None or best.get("value") is None or math.isnan(best["value"]):
            return not math.isnan(value)
        if lower_is_better(self.state.monitor or ""):
            return value < best["value"]
        return value > best["value"]

    def epoch_end(self, epoch: int, logs: Mapping[str, Any]) -> bool:
        """Records epoch ``epoch`` (0-based) with its ``logs``; returns True to stop training.

        Without a monitor, or when the monitored metric is not in ``logs`` (no validation
        data), every epoch becomes the best: the model keeps the last epoch.
        """
        s = self.state
        metrics = _floats(logs)
        number = epoch + 1
        self.trained.append(number)
        s.epochs_done = number
        s.last = {"epoch": number, "metrics": metrics}
        watch = s.monitor if s.monitor in metrics else None
        stop = False
        improved = watch is None or self.improves(metrics[watch])
        if watch is not None and self.plateau is not None:
            self.plateau.epoch_end(s, improved)
        if improved:
            s.best = {"epoch": number, "value": metrics.get(watch) if watch else None,
                      "metrics": metrics}
            s.bad_epochs = 0
            if self._save_best is not None:
                self._save_best()
        else:
            s.bad_epochs += 1
            stop = s.bad_epochs >= self.patience
        s.stopped_early = stop
        s.finished = stop or number >= s.epochs
        if self._store is not None:
            self._store(s)
        return stop

    def best_is_in_memory(self) -> bool:
        """True when the model's current weights are the best epoch's (the last trained)."""
        best = self.state.best
        return bool(self.trained) and best is not None and best["epoch"] == self.trained[-1]


def keras_callback(tracker: EpochTracker) -> Any:
    """A ``keras.callbacks.Callback``: :meth:`EpochTracker.epoch_end` after every epoch,
    ``model.stop_training`` when it says so (replaces Keras' ``EarlyStopping``)."""
    import keras

    class _Tracker(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            if tracker.epoch_end(epoch, logs or {}):
                self.model.stop_training = True

    return _Tracker()
