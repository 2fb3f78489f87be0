"""One end-of-run summary for every command, as text and as JSON (``--summary_json FILE``).

Every command (analyze, make-elwc, generate, train) ends with the same shape::

    beam-prep analyze: ok in 12.4s
      rows_read: 1,000,000
      rows_rejected: 3
      wrote artifacts: /data/artifacts
      wrote manifest: /data/artifacts/manifest.json

and, with ``--summary_json FILE``, writes the same content as one JSON object for schedulers,
on success *and* on failure::

    {"command": "analyze", "status": "ok", "seconds": 12.4, "counts": {...},
     "outputs": {...}, "details": {...}, "error": null, "error_type": null}

``status`` is ``ok``, ``failed`` or ``dry_run``. The file is written to a temporary name and
renamed, so a scheduler never reads half a file.

Example:
    >>> import io, json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "s.json")
    >>> with SummaryRecorder("generate", json_path=path, stream=io.StringIO()) as rec:
    ...     rec.succeed(outputs={"module": "pp.py"}, counts={"features": 3})
    >>> json.load(open(path))["counts"]
    {'features': 3}
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any, Literal

from beam_prep.interrupts import is_interrupt

Status = Literal["ok", "failed", "dry_run"]
STATUSES: tuple[str, ...] = ("ok", "failed", "dry_run")


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """What one command run did.

    Attributes:
        command: Sub-command name (``analyze``, ``make-elwc``, ``generate``, ``train``).
        status: ``ok``, ``failed`` or ``dry_run``.
        seconds: Wall time of the run.
        counts: Named counts (rows, lists, steps...), in display order.
        outputs: Output name -> path written.
        details: Further JSON-able facts (per-split counts, final metrics...); JSON only.
        error: The error message of a failed run.
        error_type: The error's class name.
    """

    command: str
    status: Status
    seconds: float
    counts: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    outputs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None
    error_type: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"`status` must be one of {STATUSES}. Received: "
                             f"status={self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written by ``--summary_json``."""
        return {"command": self.command, "status": self.status,
                "seconds": round(self.seconds, 3), "counts": dict(self.counts),
                "outputs": dict(self.outputs), "details": dict(self.details),
                "error": self.error, "error_type": self.error_type}

    def format(self) -> str:
        """The text summary (counts with thousands separators, then outputs).

        Every character that is not printable (ESC, other controls, bidi overrides, line
        breaks) is shown as its Python escape: a path is text the terminal must not run.

        Example:
            >>> print(RunSummary("train", "ok", 3.25, counts={"steps": 1200},
            ...                  outputs={"export": "/m/export"}).format())
            beam-prep train: ok in 3.2s
              steps: 1,200
              wrote export: /m/export
        """
        head = f"beam-prep {self.command}: {self.status.replace('_', ' ')} in {self.seconds:.1f}s"
        if self.status == "dry_run":
            head += ": translated for the runner, not executed; nothing was written"
        lines = [head + (f": {self.error}" if self.error else "")]
        for name, value in self.counts.items():
            shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) \
                else (f"{value:.4g}" if isinstance(value, float) else str(value))
            lines.append(f"  {name}: {shown}")
        lines += [f"  wrote {name}: {path}" for name, path in self.outputs.items()]
        return "\n".join(_visible(line) for line in lines)


def _visible(line: str) -> str:
    """``line`` with every non-printable character written as its escape (``\\x1b``)."""
    return line if line.isprintable() else "".join(
        c if c.isprintable() else repr(c)[1:-1] for c in line)


def write_json(summary: RunSummary, path: str) -> None:
    """Writes ``summary.to_dict()`` to the local file ``path`` (temporary name, then rename).

    Raises:
        InputError: The file cannot be written; the message names ``--summary_json``.
    """
    from beam_prep.errors import InputError

    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(summary.to_dict(), f, indent=2, sort_keys=True, default=str)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        raise InputError(f"Cannot write the run summary ({e.strerror or e}). Received: "
                         f"--summary_json={path!r}. Pass a writable local file path.") from e


class SummaryRecorder:
    """Times a command, prints its summary and writes ``--summary_json`` (a context manager).

    Call :meth:`succeed` (or :meth:`dry_run` / :meth:`fail`) inside the block. An exception
    leaving the block is recorded as ``failed`` with its message and class, then re-raised.
    Leaving without a call records ``failed`` ("the command stopped without a result").

    Args:
        command: Sub-command name.
        json_path: ``--summary_json`` value (None: no file).
        quiet: Do not print the text summary of a successful run.
        stream: Where the text goes; default: ``sys.stdout`` at print time.
        clock: Monotonic clock.
    """

    def __init__(self, command: str, *, json_path: str | None = None, quiet: bool = False,
                 stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.command = command
        self.json_path = json_path
        self.quiet = quiet
        self._stream = stream
        self._clock = clock
        self._start = 0.0
        self.summary: RunSummary | None = None

    def __enter__(self) -> SummaryRecorder:
        self._start = self._clock()
        return self

    @property
    def seconds(self) -> float:
        """Time since the block started."""
        return self._clock() - self._start

    def _record(self, status: Status, **fields: Any) -> RunSummary:
        self.summary = RunSummary(self.command, status, self.seconds, **fields)
        return self.summary

    def succeed(self, *, counts: Mapping[str, Any] | None = None,
                outputs: Mapping[str, str] | None = None,
                details: Mapping[str, Any] | None = None) -> RunSummary:
        """Records a successful run."""
        return self._record("ok", counts=dict(counts or {}), outputs=dict(outputs or {}),
                            details=dict(details or {}))

    def dry_run(self, *, details: Mapping[str, Any] | None = None) -> RunSummary:
        """Records a translation-only run (nothing written)."""
        return self._record("dry_run", details=dict(details or {}))

    def fail(self, error: str, *, error_type: str = "Error",
             counts: Mapping[str, Any] | None = None) -> RunSummary:
        """Records a failed run that did not raise (the command returns a non-zero code)."""
        return self._record("failed", error=error, error_type=error_type,
                            counts=dict(counts or {}))

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None and is_interrupt(exc):  # Ctrl-C, maybe wrapped by Beam
            self._record("failed", error="interrupted (SIGINT)", error_type="KeyboardInterrupt")
        elif exc is not None and not (isinstance(exc, SystemExit) and not exc.code):
            message = str(exc).strip().split("\n")[0] or type(exc).__name__
            self._record("failed", error=message, error_type=type(exc).__name__)
        elif self.summary is None:
            self._record("failed", error="the command stopped without a result",
                         error_type="Error")
        assert self.summary is not None
        if self.summary.status != "failed" and not self.quiet:
            print(self.summary.format(), file=self._stream or sys.stdout)
        if self.json_path:
            write_json(self.summary, self.json_path)


def add_summary_flag(parser: Any) -> None:
    """Adds ``--summary_json FILE`` to an argparse parser (the same help everywhere)."""
    parser.add_argument("--summary_json", default=None, metavar="FILE",
                        help="Also write the end-of-run summary as JSON to this local file, "
                             "on success and on failure (status, counts, outputs, time, "
                             "error), for schedulers.")
