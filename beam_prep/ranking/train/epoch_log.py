"""One line per training epoch: loss, metrics and seconds (``beam-prep train``'s progress).

The same :class:`EpochPrinter` serves both training loops: Keras ``fit`` calls it through
:func:`keras_callback`, the custom loop through its ``on_epoch_end`` hook. Lines go to stderr
(the run summary goes to stdout), looked up at each write so a replaced stream is honoured.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> printer = EpochPrinter(epochs=2, stream=out, clock=iter([0.0, 1.5]).__next__)
    >>> printer.begin()
    >>> printer(0, {"loss": 0.693147, "ndcg_10": 0.5})
    >>> out.getvalue()
    'epoch 1/2: loss 0.6931, ndcg_10 0.5000 (1.5s)\\n'
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any


def format_epoch(epoch: int, epochs: int, logs: Mapping[str, float], seconds: float) -> str:
    """``epoch <n>/<total>: <name> <value>, ... (<seconds>s)``; ``epoch`` counts from 0.

    Training values come first (``loss`` leading), then the ``val_`` ones, each sorted.

    Example:
        >>> format_epoch(2, 3, {"val_loss": 1.0, "mrr": 0.25, "loss": 2.0}, 0.42)
        'epoch 3/3: loss 2.0000, mrr 0.2500, val_loss 1.0000 (0.4s)'
    """
    def order(name: str) -> tuple[bool, bool, str]:
        base = name[4:] if name.startswith("val_") else name
        return name.startswith("val_"), base != "loss", base

    values = ", ".join(f"{name} {float(logs[name]):.4f}" for name in sorted(logs, key=order))
    return f"epoch {epoch + 1}/{epochs}: {values} ({seconds:.1f}s)"


class EpochPrinter:
    """Prints :func:`format_epoch` lines; the seconds of an epoch run from :meth:`begin`.

    Args:
        epochs: Total epochs of the run.
        stream: Where lines go; default: ``sys.stderr`` at write time.
        clock: Monotonic clock.
    """

    def __init__(self, *, epochs: int, stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.monotonic, silent: bool = False) -> None:
        self.epochs = epochs
        self._stream = stream
        self._clock = clock
        self._mark: float | None = None
        self._silent = silent
        #: 0-based indexes of the epochs trained in this run (both loops pass the absolute
        #: index: a run resumed from ``model_dir`` starts after the restored epochs).
        self.seen: list[int] = []

    def begin(self) -> None:
        """Starts timing an epoch (the previous epoch's end does it too)."""
        self._mark = self._clock()

    def __call__(self, epoch: int, logs: Mapping[str, float]) -> None:
        now = self._clock()
        seconds = now - self._mark if self._mark is not None else 0.0
        self._mark = now
        self.seen.append(epoch)
        if self._silent:
            return
        stream = self._stream or sys.stderr
        stream.write(format_epoch(epoch, self.epochs, logs, seconds) + "\n")
        stream.flush()


def exported_epoch(history: Mapping[str, Sequence[float]], *, first_epoch: int,
                   metric: str | None) -> tuple[int, str] | None:
    """The 1-based epoch whose weights the trained (and exported) model holds, and why.

    Early stopping keeps the best epoch of this run by ``metric`` (the first one reaching the
    best value; ``min`` when the name holds ``loss``, else ``max``), as both loops do;
    without that metric in ``history`` the model holds the last epoch. ``first_epoch`` is the
    1-based number of this run's first epoch (> 1 after a resume). None when no epoch ran.

    Example:
        >>> exported_epoch({"loss": [3, 2, 1], "val_ndcg_10": [0.5, 0.7, 0.7]}, first_epoch=1,
        ...                metric="val_ndcg_10")
        (2, 'best val_ndcg_10 0.7000')
        >>> exported_epoch({"loss": [3, 2]}, first_epoch=4, metric="val_ndcg_10")
        (5, 'last epoch')
    """
    n = len(history.get("loss", ()))
    if n == 0:
        return None
    values = list(history.get(metric, ())) if metric else []
    if len(values) != n:
        return first_epoch + n - 1, "last epoch"
    sign = -1.0 if "loss" in (metric or "") else 1.0
    best = 0
    for i, value in enumerate(values):
        if math.isnan(values[best]) or sign * value > sign * values[best]:
            best = i
    return first_epoch + best, f"best {metric} {values[best]:.4f}"


def keras_callback(printer: EpochPrinter) -> Any:
    """A ``keras.callbacks.Callback`` that calls ``printer`` at each epoch end."""
    import keras

    class _EpochLines(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            printer.begin()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            printer(epoch, {k: float(v) for k, v in (logs or {}).items()})

    return _EpochLines()
