"""Ctrl-C stops a training run, always, at a point where the last checkpoint is intact.

Python's default SIGINT handling raises ``KeyboardInterrupt`` wherever the main thread happens
to be. Inside a garbage-collector callback (JAX registers ``_xla_gc_callback``) or a
``__del__``, Python prints "Exception ignored in ..." and carries on: training went on to the
end. Elsewhere it unwinds through Keras and TensorFlow with a long traceback, possibly in
the middle of writing a checkpoint.

:class:`InterruptHandler` replaces that for the duration of ``beam-prep train``:

* **While training** (inside :meth:`InterruptHandler.safe_points`) the handler only sets a
  flag. The training loops check it at every batch, validation batch and epoch boundary
  (:func:`keras_callback`; the custom loop calls :meth:`InterruptHandler.check`) and raise
  :class:`Interrupted` there, before any checkpoint of the unfinished step is written.
* **Elsewhere** (start-up, statistics, model building, export) it raises :class:`Interrupted`
  at once, like the default, except inside a garbage-collector callback or a finaliser: there
  it re-delivers the signal to itself 50 ms later, so the interrupt is never swallowed.
* **Quiet after Ctrl-C**: from the first Ctrl-C until the handler is left, Python warnings
  are not shown. What unwinds after an interrupt (Keras warns that a layer interrupted in
  its ``build`` "has unbuilt state") is noise before the one-line message.
* **Fallback**: a second Ctrl-C, or 10 seconds without reaching a safe point after the
  first, raises at once.

:class:`Interrupted` subclasses ``KeyboardInterrupt`` (nothing that catches ``Exception``
swallows it); ``beam-prep train`` turns it into one line (:meth:`InterruptHandler.message`:
``interrupted at epoch N; rerun to resume``) and exit code 130
(:data:`beam_prep.interrupts.EXIT_INTERRUPTED`).

Example:
    >>> handler = InterruptHandler()
    >>> with handler:
    ...     handler.request()  # what Ctrl-C does inside safe_points()
    ...     handler.check()
    Traceback (most recent call last):
    ...
    beam_prep.ranking.train.interrupt.Interrupted: interrupted
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import os
import signal
import threading
import warnings
from collections.abc import Iterator
from types import FrameType
from typing import Any

#: Seconds after the first Ctrl-C during training before the fallback raises anyway.
FALLBACK_SECONDS = 10.0


class Interrupted(KeyboardInterrupt):
    """Training was stopped by Ctrl-C (SIGINT)."""

    def __init__(self) -> None:
        super().__init__("interrupted")


#: The standard library's weak-reference callbacks (a weak dict or set dropping a dead key).
_WEAKREF_CALLBACKS = {("weakref.py", "remove"), ("_weakrefset.py", "_remove")}


def in_finalizer(frame: FrameType | None) -> bool:
    """True when ``frame`` runs inside a gc callback, a ``__del__`` or a weak dict's or
    set's callback (an exception raised there is printed and ignored by Python)."""
    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    depth = 0
    while frame is not None and depth < 64:
        code = frame.f_code
        if code.co_name == "__del__" or code in codes or (
                os.path.basename(code.co_filename), code.co_name) in _WEAKREF_CALLBACKS:
            return True
        frame, depth = frame.f_back, depth + 1
    return False


class InterruptHandler:
    """SIGINT handler of a training run (see the module docstring); a context manager.

    Installed only in the main thread (elsewhere Python refuses signal handlers; it then
    does nothing). :attr:`epoch` (0-based, set by the training loops) is the epoch reported,
    of the ensemble member :attr:`label` names (``member 2/3``; empty for one model);
    :attr:`trained` (set by the launcher) says training is over (every member's, for an
    ensemble), and :attr:`exporting` that the export is being written.
    """

    def __init__(self) -> None:
        self.requested = False
        self.epoch: int | None = None
        self.label = ""
        self.trained = False
        self.exporting = False
        self._deferred = 0
        self._previous: Any = None
        self._installed = False
        self._timer: threading.Timer | None = None
        self._quiet: warnings.catch_warnings | None = None

    def __enter__(self) -> InterruptHandler:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._quiet is not None:
            self._quiet.__exit__(None, None, None)
            self._quiet = None
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def message(self) -> str:
        """The one line ``beam-prep train`` prints when Ctrl-C stopped it.

        Example:
            >>> handler = InterruptHandler()
            >>> handler.epoch = 2
            >>> handler.message()
            'interrupted at epoch 3; rerun to resume'
        """
        if self.exporting:
            return ("interrupted while exporting; the trained epochs are saved: rerun to "
                    "write the export")
        if self.trained:
            return (f"interrupted after training{' ' + self.label if self.label else ''}; "
                    "the trained epochs are saved: rerun to finish")
        if self.epoch is None:
            return f"interrupted while starting{' ' + self.label if self.label else ''}; " \
                   "rerun to resume"
        member = f"{self.label}, " if self.label else ""
        return f"interrupted at {member}epoch {self.epoch + 1}; rerun to resume"

    def request(self) -> None:
        """Records an interrupt request (what the handler does first) and silences Python
        warnings until the handler is left."""
        if not self.requested and self._quiet is None:
            self._quiet = warnings.catch_warnings()
            self._quiet.__enter__()
            warnings.simplefilter("ignore")
        self.requested = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = not self.requested
        self.request()
        if self._deferred and first:
            self._timer = threading.Timer(FALLBACK_SECONDS, _thread.interrupt_main)
            self._timer.daemon = True
            self._timer.start()
            return
        if in_finalizer(frame):
            retry = threading.Timer(0.05, _thread.interrupt_main)
            retry.daemon = True
            retry.start()
            return
        raise Interrupted

    def check(self) -> None:
        """A safe point: raises :class:`Interrupted` when Ctrl-C was pressed."""
        if self.requested:
            raise Interrupted

    @contextlib.contextmanager
    def safe_points(self) -> Iterator[None]:
        """Within the block Ctrl-C only sets the flag; :meth:`check` raises."""
        self.check()
        self._deferred += 1
        try:
            yield
        finally:
            self._deferred -= 1

    def keras_callback(self) -> Any:
        """A ``keras.callbacks.Callback`` calling :meth:`check` at every batch and epoch
        boundary (training and validation) and keeping :attr:`epoch` up to date.

        Put it last in the callback list: at an epoch end the checkpoint and run record of
        the finished epoch are then written before it raises.
        """
        import keras

        handler = self

        class _Interrupt(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
                handler.epoch = epoch
                handler.check()

            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                handler.check()

            def on_test_batch_begin(self, batch: int, logs: Any = None) -> None:
                handler.check()

            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                handler.epoch = epoch + 1  # this epoch is saved: a rerun starts the next
                handler.check()

        return _Interrupt()
