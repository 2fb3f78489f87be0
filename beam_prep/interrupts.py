"""Ctrl-C in a job: one line and exit code 130, no traceback, no harness logs.

Without this, an interrupted Beam job prints Beam's wrapped ``RuntimeError: KeyboardInterrupt
[while running ...]`` with ~140 lines of traceback, and with
``--direct_running_mode=multi_processing`` every SDK worker process (which shares the
terminal's process group, so it receives the same SIGINT) prints its own traceback and
CRITICAL harness logs. The output folders are safe either way (staging, manifest last:
:mod:`beam_prep.io.commit.output`); only the noise goes.

:func:`quiet_interrupts` covers a command's run:

* the first SIGINT marks the run :func:`interrupted`, switches logging off for the rest of
  the process (Beam logs the failed bundle, relays the workers' logs, and its threads log while
  they stop) and raises ``KeyboardInterrupt`` in the main thread, as Python does by default;
* with ``children=True`` (the jobs pass it for ``--direct_running_mode=multi_processing``),
  the SDK worker processes, which share the terminal's process group and so receive the same
  SIGINT, write their tracebacks into a pipe: descriptor 2, which they inherit, becomes a pipe
  whose bytes a thread copies to the real stderr as they arrive, until the interrupt, after
  which they are dropped. ``sys.stderr`` (progress, summaries, our messages) writes to the
  real stderr directly, so a terminal stays a terminal. The workers cannot simply be spared
  the signal: Beam starts them through ``/bin/sh``, which unblocks signals for its children,
  and a worker that ignores SIGINT keeps the interrupted driver waiting for it;
* exceptions of threads that end after the interrupt are not printed.

The command line (:mod:`beam_prep.cli`) then prints one line, ``beam-prep <command>:
interrupted; ...`` and returns 130 (128 + SIGINT, what a shell reports for a process a
Ctrl-C ended). A second Ctrl-C while the job winds down raises again.

Example:
    >>> with quiet_interrupts():
    ...     pass
    >>> interrupted()
    False
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

#: The exit code of an interrupted command: 128 + SIGINT, as a shell reports it.
EXIT_INTERRUPTED = 128 + int(signal.SIGINT)

_state = {"interrupted": False}


def interrupted() -> bool:
    """True once a SIGINT reached a :func:`quiet_interrupts` block of this process."""
    return _state["interrupted"]


def is_interrupt(error: BaseException) -> bool:
    """True for a ``KeyboardInterrupt``, or any error raised while the run was interrupted.

    Beam re-raises a ``KeyboardInterrupt`` of a bundle as ``RuntimeError: KeyboardInterrupt
    [while running ...]``; after a SIGINT every error of the run is one of its consequences.
    """
    return isinstance(error, KeyboardInterrupt) or interrupted()


#: Seconds an interrupted command waits for its other threads before it exits anyway.
EXIT_GRACE_SECONDS = 10.0


def exit_process(code: int, *, grace: float = EXIT_GRACE_SECONDS) -> None:
    """Ends the process with ``code``; after an interrupt, without waiting on stuck threads.

    Python's exit waits for every non-daemon thread. After a Ctrl-C, a thread of the
    abandoned pipeline (Beam's runner, a gRPC channel) can wait forever for work that will
    not come, and the command, which has printed its one line, never returns to the shell.
    So once :func:`interrupted`, the other threads get ``grace`` seconds in all, and the
    process then ends with ``os._exit`` (output flushed). Otherwise this is ``sys.exit``.
    """
    if interrupted():
        deadline = time.monotonic() + grace
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() and not t.daemon and t is not threading.current_thread()
               for t in threading.enumerate()):
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)
    sys.exit(code)


def _on_sigint(signum: int, frame: Any) -> None:
    if not _state["interrupted"]:
        _state["interrupted"] = True
        logging.disable(logging.CRITICAL)
    raise KeyboardInterrupt


@contextlib.contextmanager
def _children_stderr_held() -> Iterator[None]:
    """Descriptor 2 is a pipe copied to the real stderr until an interrupt (module docstring).

    A no-op when ``sys.stderr`` is not the process's own (a test capturing it).
    """
    if sys.stderr is not sys.__stderr__ or sys.stderr is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    real = io.TextIOWrapper(os.fdopen(os.dup(saved), "wb", buffering=0), write_through=True,
                            encoding=sys.stderr.encoding, errors="backslashreplace")
    previous = sys.stderr

    def pump() -> None:
        with os.fdopen(read_end, "rb", buffering=0) as source:
            while chunk := source.read(65536):
                if not _state["interrupted"]:
                    os.write(saved, chunk)

    thread = threading.Thread(target=pump, name="beam_prep-children-stderr", daemon=True)
    thread.start()
    sys.stderr = real
    try:
        yield
    finally:
        sys.stderr = previous
        os.dup2(saved, 2)  # the pump ends when the last worker holding the pipe has ended
        thread.join(timeout=0 if _state["interrupted"] else 5)
        real.close()


def _quiet_thread_errors(args: threading.ExceptHookArgs) -> None:
    if not _state["interrupted"]:
        sys.__excepthook__(args.exc_type, args.exc_value, args.exc_traceback)


@contextlib.contextmanager
def quiet_interrupts(*, children: bool = False) -> Iterator[None]:
    """Within the block, Ctrl-C stops the command quietly (see the module docstring).

    Args:
        children: Also hold back what child processes (Beam's SDK workers) write to stderr
            once the run is interrupted.

    A no-op outside the main thread (signal handlers can only be set there). Leaving the block
    restores the SIGINT handler and, unless the run was interrupted (the process is about to
    exit, and threads still stopping stay quiet), the thread excepthook and logging.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_handler = signal.signal(signal.SIGINT, _on_sigint)
    previous_excepthook = threading.excepthook
    threading.excepthook = _quiet_thread_errors
    try:
        with _children_stderr_held() if children else contextlib.nullcontext():
            yield
    finally:
        if not _state["interrupted"]:
            threading.excepthook = previous_excepthook
        signal.signal(signal.SIGINT, previous_handler)
