"""The job's last step: commit the staged output and release the lock, on a worker.

:class:`FinalizeOutput` is applied to the PCollection a job produces last (the manifest of
``analyze``, the ``stats.json`` dict of ``make-elwc``). That PCollection is a side input of the
step, so the runner computes it completely, files written included, before the step runs: the
order is a data dependency, not a matter of fusion. The step runs
:meth:`beam_prep.io.commit.output.Finalizer.finalize` once (its main input is one element); a runner
that retries the bundle runs it again, which is harmless (the commit is journalled and the lock
release compares run ids). It never raises on a failed run: a failed input check leaves the
folder as it was, keeps the report in staging, releases the lock and logs why.

Graph::

    last output ──(side input)──┐
    FinalizeTrigger ─ Finalize ◄┘ ─ the outcome ("committed", "failed", ...)

Example:
    >>> with OutputRun(out, policy) as run:                              # doctest: +SKIP
    ...     p = beam.Pipeline()
    ...     last = p | WriteEverything(run.staging)
    ...     _ = last | "FinalizeOutput" >> FinalizeOutput(run.finalizer())
    ...     p.run().wait_until_finish()
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import apache_beam as beam

from beam_prep.io.commit.output import FinalizeOutcome, Finalizer


class _FinalizeFn(beam.DoFn):
    """Runs the finalizer once per trigger element; the side input only orders the step."""

    def __init__(self, finalizer: Finalizer) -> None:
        self._finalizer = finalizer

    def process(self, _trigger: Any, _last: Iterable[Any]) -> Iterable[FinalizeOutcome]:
        yield self._finalizer.finalize()


class FinalizeOutput(beam.PTransform):
    """Commits the run's output after ``last`` is complete (see the module docstring).

    Args:
        finalizer: From :meth:`beam_prep.io.commit.output.OutputRun.finalizer`.

    Returns:
        A PCollection with one outcome string (:data:`~beam_prep.io.commit.output.FinalizeOutcome`).
    """

    def __init__(self, finalizer: Finalizer) -> None:
        super().__init__()
        self._finalizer = finalizer

    def expand(self, last: beam.PCollection) -> beam.PCollection[str]:
        return (last.pipeline
                | "FinalizeTrigger" >> beam.Create([None])
                | "Finalize" >> beam.ParDo(_FinalizeFn(self._finalizer),
                                           beam.pvalue.AsList(last)))
