"""Run metadata of a finished job output: ``run.json`` beside the output's own files.

The artifact directory's ``manifest.json`` is a contract: the same input and spec give the
same bytes (its fingerprint is checked by generated modules), so nothing that changes from run
to run (wall time, date) may go into it. The job's driver writes those facts here instead,
after the output is committed; ``beam-prep report`` shows them. A folder without the file (a
template run, an older output, the library ``run()``) simply has no record.

Example:
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_run_record(d, job="analyze", seconds=12.345)
    >>> read_run_record(d)["seconds"]
    12.345
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from beam_prep.io import filesystem as fs

RUN_FILE = "run.json"


def write_run_record(output: str, *, job: str, seconds: float) -> None:
    """Writes ``<output>/run.json``: ``job``, wall ``seconds`` (3 decimals), ``finished_utc``.

    Args:
        output: The job's finished output folder (local or ``gs://``).
        job: The command (``analyze``).
        seconds: The run's wall time, from the start of the command to the committed output.
    """
    record = {"job": job, "seconds": round(float(seconds), 3),
              "finished_utc": datetime.datetime.now(datetime.UTC)
              .strftime("%Y-%m-%dT%H:%M:%SZ")}
    fs.write_bytes(fs.join(output, RUN_FILE),
                   (json.dumps(record, sort_keys=True, indent=2) + "\n").encode("utf-8"))


def read_run_record(directory: str) -> dict[str, Any] | None:
    """``<directory>/run.json`` as a dict; None when absent or not a JSON object with a
    finite ``seconds`` (run metadata is informative: a damaged file is ignored, not fatal)."""
    path = fs.join(directory, RUN_FILE)
    try:
        if not fs.exists(path):
            return None
        record = json.loads(fs.read_text(path))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    seconds = record.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or \
            not 0 <= seconds < float("inf"):
        return None
    return record
