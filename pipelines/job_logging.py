"""Logging of the Beam jobs' command lines: our own errors are shown once, without a traceback.

When a DoFn raises, Beam logs the exception with its traceback (logger
``apache_beam.runners.common``) before re-raising it. For a
:class:`~beam_prep.errors.BeamPrepError` (a bad input file, a bad spec) the job's ``main``
prints the message, which names the file and the fix; the traceback is noise. Other errors
(bugs) keep Beam's log and their traceback.

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


class _OwnErrors(logging.Filter):
    """Drops the log records whose exception is a BeamPrepError."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, BeamPrepError)


_FILTER = _OwnErrors()


def hide_tracebacks_of_our_errors() -> None:
    """Installs the filter on Beam's DoFn error logger (once per process)."""
    logging.getLogger(BEAM_DOFN_LOGGER).addFilter(_FILTER)
