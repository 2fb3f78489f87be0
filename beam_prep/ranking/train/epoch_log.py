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

import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any


def format_epoch(epoch: int, epochs: int, logs: Mapping[str, float], seconds: float) -> str:
    """``epoch <n>/<total>: <name> <value>, ... (<seconds>s)``; ``epoch`` counts from 0.

    Training values come first (``loss`` leading), then the ``val_`` ones, each sorted.

    Example:
        >>> format_epoch(2, 3, {"val_loss": 1.0, "mrr": 0.25, "loss": 2.0}, 0.42)
        'epoch 3/3: loss 2.0000, mrr 0.2500, val_loss 1.0000 (0.4s)'
    """
    return f"epoch {epoch + 1}/{epochs}: {format_metrics(logs)} ({seconds:.1f}s)"


def format_metrics(logs: Mapping[str, float]) -> str:
    """``<name> <value>, ...``: training values first (``loss`` leading), then ``val_`` ones.

    Example:
        >>> format_metrics({"val_ndcg_10": 0.8, "loss": 0.5})
        'loss 0.5000, val_ndcg_10 0.8000'
    """
    def order(name: str) -> tuple[bool, bool, str]:
        base = name[4:] if name.startswith("val_") else name
        return name.startswith("val_"), base != "loss", base

    return ", ".join(f"{name} {float(logs[name]):.4f}" for name in sorted(logs, key=order))


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
        #: Put before each line, e.g. ``member 2/3`` while an ensemble member trains.
        self.label = ""

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
        line = format_epoch(epoch, self.epochs, logs, seconds)
        stream.write(f"{self.label}: {line}\n" if self.label else line + "\n")
        stream.flush()


def keras_callback(printer: EpochPrinter) -> Any:
    """A ``keras.callbacks.Callback`` that calls ``printer`` at each epoch end."""
    import keras

    class _EpochLines(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            printer.begin()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            printer(epoch, {k: float(v) for k, v in (logs or {}).items()})

    return _EpochLines()
