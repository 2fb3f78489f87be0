"""Progress of a local Beam job: units done / total, rows/s, ETA, shown by the driver.

How it works (the same in Beam's in-process and multi-process modes): the driver's
:class:`ProgressMonitor` creates a private folder and names it in the environment variable
:data:`PROGRESS_DIR_ENV` *before* the pipeline starts, so the worker processes the
FnApiRunner spawns inherit it. Each finished unit of work (a split of the analysis) calls
:func:`record_unit` in the worker, which appends one JSON line to ``<folder>/<pid>.jsonl``
(one file per process: no interleaving, no lock). A daemon thread in the driver reads the
new lines every ``poll_seconds`` and shows:

* on a terminal, one line redrawn in place (``\\r``) with a bar;
* otherwise (a log file, a scheduler), a plain line every ``interval_seconds`` and at the end.

Beam's own metrics are not used because the FnApiRunner reports them only when the
pipeline has finished. On a remote runner (Dataflow) the workers do not share the driver's
disk: :func:`record_unit` writes nothing there (the variable is unset on those workers) and the
runner's own UI shows progress. Recording never fails a job: a write error is ignored.

``rich`` and ``tqdm`` are not dependencies of beam_prep, so the terminal bar is hand-made.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> with ProgressMonitor("analyze", unit="splits", total=2, stream=out) as monitor:
    ...     record_unit("a.csv", rows=10)
    ...     record_unit("b.csv", rows=30)
    >>> monitor.snapshot().done, monitor.snapshot().rows
    (2, 40)
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import IO, Any

#: Environment variable naming the folder workers append progress records to.
PROGRESS_DIR_ENV = "BEAM_PREP_PROGRESS_DIR"


def record_unit(unit_id: str, *, rows: int, rejected: int = 0) -> None:
    """Worker side: notes one finished unit of work (no-op when no monitor is running).

    Args:
        unit_id: Name of the unit (e.g. the split id); repeated ids count once.
        rows: Rows the unit read.
        rejected: Rows of the unit that were rejected.
    """
    folder = os.environ.get(PROGRESS_DIR_ENV)
    if not folder:
        return
    line = json.dumps({"id": unit_id, "rows": int(rows), "rejected": int(rejected)})
    try:
        with open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:  # progress is best effort: never fail the job for it
        pass


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Progress at one instant.

    Attributes:
        done: Distinct units finished.
        total: Units expected (None when unknown).
        rows: Rows read by the finished units.
        rejected: Rows rejected by the finished units.
        seconds: Time since the monitor started.
    """

    done: int
    total: int | None
    rows: int
    rejected: int
    seconds: float

    @property
    def rows_per_second(self) -> float:
        """Rows per second since the start (0 before the first second)."""
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Remaining time if units keep their average pace; None when it cannot be known."""
        if not self.total or not self.done:
            return None
        return self.seconds / self.done * max(0, self.total - self.done)


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def format_line(label: str, unit: str, snap: Snapshot, *, bar_width: int = 0,
                rows_name: str = "rows") -> str:
    """One progress line.

    Example:
        >>> format_line("analyze", "splits", Snapshot(3, 12, 3_000_000, 7, 60.0))
        'analyze: 3/12 splits, 3,000,000 rows (7 rejected), 50,000 rows/s, 0:01:00 elapsed, ETA 0:03:00'
        >>> format_line("analyze", "splits", Snapshot(1, 4, 10, 0, 1.0), bar_width=8)
        'analyze [##......] 1/4 splits, 10 rows, 10 rows/s, 0:00:01 elapsed, ETA 0:00:03'
    """  # noqa: E501
    total = "?" if snap.total is None else str(snap.total)
    bar = ""
    if bar_width and snap.total:
        filled = min(bar_width, bar_width * snap.done // snap.total)
        bar = " [" + "#" * filled + "." * (bar_width - filled) + "]"
    rejected = f" ({snap.rejected:,} rejected)" if snap.rejected else ""
    text = (f"{label}{bar}{'' if bar else ':'} {snap.done}/{total} {unit}, {snap.rows:,} "
            f"{rows_name}{rejected}, {snap.rows_per_second:,.0f} {rows_name}/s, "
            f"{_clock(snap.seconds)} elapsed")
    eta = snap.eta_seconds
    return text + (f", ETA {_clock(eta)}" if eta is not None else "")


class ProgressMonitor:
    """Driver side: collects the workers' records and shows progress (a context manager).

    Args:
        label: Prefix of every line (the command name).
        unit: Plural name of the units counted ("splits", "files").
        rows_name: Plural name of the rows the units read ("rows", "lines").
        total: Units expected (None: unknown, no ETA).
        stream: Where lines go; default: ``sys.stderr`` looked up at each write.
        tty: Redraw one line in place; default: ``stream.isatty()``.
        interval_seconds: Seconds between plain lines when not on a terminal.
        poll_seconds: Seconds between reads of the records.
        enabled: False gives a monitor that shows nothing (``--quiet``) but still counts.
        clock: Monotonic clock (tests pass a fake one).
    """

    def __init__(self, label: str, *, unit: str, total: int | None = None, rows_name: str = "rows",
                 stream: IO[str] | None = None, tty: bool | None = None,
                 interval_seconds: float = 30.0, poll_seconds: float = 0.5,
                 enabled: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.unit = unit
        self.rows_name = rows_name
        self.total = total
        self._stream = stream
        self._tty = tty
        self._interval = interval_seconds
        self._poll = poll_seconds
        self._enabled = enabled
        self._clock = clock
        self._folder: str | None = None
        self._previous_env: str | None = None
        self._offsets: dict[str, int] = {}
        self._seen: dict[str, tuple[int, int]] = {}
        self._start = 0.0
        self._last_line = float("-inf")
        self._drawn = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def stream(self) -> IO[str]:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def tty(self) -> bool:
        if self._tty is not None:
            return self._tty
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def __enter__(self) -> ProgressMonitor:
        self.start()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.stop(failed=exc_type is not None)

    def start(self) -> None:
        """Creates the records folder, exports it to workers, starts the display thread."""
        self._folder = tempfile.mkdtemp(prefix="beam_prep_progress_")
        self._previous_env = os.environ.get(PROGRESS_DIR_ENV)
        os.environ[PROGRESS_DIR_ENV] = self._folder
        self._start = self._last_line = self._clock()
        if self._enabled:
            self._thread = threading.Thread(target=self._loop, name="beam_prep-progress",
                                            daemon=True)
            self._thread.start()

    def stop(self, *, failed: bool = False) -> None:
        """Stops the thread, shows the final line, removes the folder, restores the env.

        Args:
            failed: The job raised. When no unit finished, the final line (``0/1 splits``)
                would only stand in front of the error: it is not shown (and a line
                redrawn on a terminal is cleared).
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        snap = self.poll()  # the last records, shown or not
        if self._enabled and failed and snap.done == 0:
            if self.tty:
                try:
                    self.stream.write("\r\x1b[K")
                    self.stream.flush()
                except (ValueError, OSError):
                    pass
        elif self._enabled:
            self._show(final=True)
        if self._previous_env is None:
            os.environ.pop(PROGRESS_DIR_ENV, None)
        else:
            os.environ[PROGRESS_DIR_ENV] = self._previous_env
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    def poll(self) -> Snapshot:
        """Reads the records written since the last poll; returns the current snapshot."""
        with self._lock:
            folder = self._folder
            names = sorted(os.listdir(folder)) if folder and os.path.isdir(folder) else []
            for name in names:
                path = os.path.join(folder, name)  # type: ignore[arg-type]
                with open(path, encoding="utf-8") as f:
                    f.seek(self._offsets.get(name, 0))
                    data = f.read()
                complete = data[:data.rfind("\n") + 1]  # a line being written waits
                self._offsets[name] = self._offsets.get(name, 0) + len(complete.encode())
                for line in complete.splitlines():
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    self._seen[str(rec["id"])] = (int(rec["rows"]), int(rec["rejected"]))
        return self.snapshot()

    def snapshot(self) -> Snapshot:
        """Progress so far (without reading new records)."""
        seen = list(self._seen.values())
        return Snapshot(done=len(seen), total=self.total, rows=sum(r for r, _ in seen),
                        rejected=sum(b for _, b in seen), seconds=self._clock() - self._start)

    def _show(self, *, final: bool = False) -> None:
        snap = self.snapshot()
        try:
            if self.tty:
                line = format_line(self.label, self.unit, snap, bar_width=24,
                                   rows_name=self.rows_name)
                self.stream.write("\r" + line + "\x1b[K" + ("\n" if final else ""))
                self.stream.flush()
            elif final or self._clock() - self._last_line >= self._interval:
                self._last_line = self._clock()
                self.stream.write(format_line(self.label, self.unit, snap,
                                              rows_name=self.rows_name) + "\n")
                self.stream.flush()
        except (ValueError, OSError):  # the stream was closed under us: stop showing
            self._enabled = False

    def _loop(self) -> None:
        while not self._stop.wait(self._poll):
            self.poll()
            if self._enabled:
                self._show()
