"""Logging of the Beam jobs' command lines: our own errors are shown once, without a traceback.

When a DoFn raises, Beam logs the exception with its traceback (logger
``apache_beam.runners.common``) before re-raising it. For a
:class:`~beam_prep.errors.BeamPrepError` (a bad input file, a bad spec) the job's ``main``
prints the message, which names the file and the fix; the traceback is noise. So is it for
an OSError (a full disk, a read-only output folder: ``beam-prep`` prints one line for it,
:func:`beam_prep.cli.wrapped_os_error`). Other errors (bugs) keep Beam's log and traceback.

Multi-process mode (``--direct_running_mode=multi_processing``): the FnApiRunner relays each
worker's warnings through the driver's logger ``apache_beam.runners.portability.
local_job_service``. One of them is printed by every worker of every local run and concerns
nothing beam_prep uses: "No semi_persistent_directory found: User registered objects (e.g.
schema, logical type) ... may not be effective" (beam_prep registers no Beam schema or logical
type). :func:`quiet_beam_worker_notices` drops exactly that message. Other worker warnings are
kept: they may be real (a worker that crashed, a lost connection). Our progress does not go
through logging at all (see :mod:`beam_prep.progress`).

Example:
    >>> hide_tracebacks_of_our_errors()
    >>> hide_tracebacks_of_our_errors()  # idempotent
    >>> sum(isinstance(f, _OwnErrors) for f in logging.getLogger(BEAM_DOFN_LOGGER).filters)
    1
"""

from __future__ import annotations

import logging

from beam_prep.errors import BeamPrepError

BEAM_DOFN_LOGGER = "apache_beam.runners.common"
BEAM_WORKER_RELAY_LOGGER = "apache_beam.runners.portability.local_job_service"
#: Worker notices relayed in multi-process mode that concern nothing beam_prep uses.
BENIGN_WORKER_NOTICES = ("No semi_persistent_directory found",)


class _OwnErrors(logging.Filter):
    """Drops the log records whose exception is a BeamPrepError or an OSError (a full
    disk, a read-only folder: the command line prints one line for it, not a bug)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, (BeamPrepError, OSError))


_FILTER = _OwnErrors()


def hide_tracebacks_of_our_errors() -> None:
    """Installs the filter on Beam's DoFn error logger (once per process)."""
    logging.getLogger(BEAM_DOFN_LOGGER).addFilter(_FILTER)


class _BenignWorkerNotices(logging.Filter):
    """Drops the relayed worker records that contain one of :data:`BENIGN_WORKER_NOTICES`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(notice in message for notice in BENIGN_WORKER_NOTICES)


_WORKER_FILTER = _BenignWorkerNotices()


def quiet_beam_worker_notices() -> None:
    """Installs the filter on Beam's worker-log relay (once per process)."""
    logging.getLogger(BEAM_WORKER_RELAY_LOGGER).addFilter(_WORKER_FILTER)
