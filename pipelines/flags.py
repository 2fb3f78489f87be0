"""Command-line flags shared by the Beam jobs: refuse flags that neither the job nor Beam knows.

A job parses its own flags with ``parse_known_args`` and hands the rest to Beam's
``PipelineOptions``, which silently drops a flag it does not know (a misspelt
``--max_bad_fracton=0.5`` would run the job with the default). :func:`parse_job_args` asks Beam
which of the remaining flags its option classes accept — through Beam's own parser, built by
``PipelineOptions.get_all_options`` from every imported ``PipelineOptions`` subclass, custom
ones included — and stops with argparse's usage error (exit code 2) on the others, suggesting
the closest known flag.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(prog="job")
    >>> _ = p.add_argument("--max_bad_fraction", type=float, default=0.01)
    >>> args, beam_args = parse_job_args(p, ["--max_bad_fraction=0.5", "--runner=DirectRunner"])
    >>> args.max_bad_fraction, beam_args
    (0.5, ['--runner=DirectRunner'])
    >>> parse_job_args(p, ["--max_bad_fracton=0.5"])  # doctest: +SKIP
    usage: job [-h] [--max_bad_fraction MAX_BAD_FRACTION]
    job: error: unrecognized argument --max_bad_fracton=0.5 (did you mean --max_bad_fraction?)...
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
from collections.abc import Sequence

from apache_beam.options.pipeline_options import PipelineOptions, PortableOptions, StandardOptions

from beam_prep.config.cli_flags import parse_relaxed, require
from beam_prep.errors import InputError


class _BeamParser(Exception):
    """Carries what Beam's option parser made of the flags out of ``get_all_options``."""

    def __init__(self, unknown: list[str], names: list[str]) -> None:
        super().__init__()
        self.unknown = unknown
        self.names = names


def beam_unknown_args(beam_args: Sequence[str]) -> tuple[list[str], list[str]]:
    """The arguments no Beam option class accepts, and the names of the flags Beam knows.

    Args:
        beam_args: Arguments left over by the job's own parser.

    Returns:
        ``(unknown, known_flags)``: the leftover tokens Beam's parser would discard, in order,
        and ``--name`` of every option Beam knows (for suggestions).
    """
    flags = list(beam_args)

    def inspect(parser: argparse.ArgumentParser) -> None:
        _, unknown = parser.parse_known_args(flags)
        names = sorted(f"--{name}" for name in vars(parser.parse_known_args([])[0]))
        raise _BeamParser(unknown, names)  # stop: nothing else of get_all_options is needed

    try:
        PipelineOptions(flags).get_all_options(add_extra_args_fn=inspect)
    except _BeamParser as found:
        return found.unknown, found.names
    raise AssertionError("PipelineOptions.get_all_options did not call add_extra_args_fn")


def _job_flags(parser: argparse.ArgumentParser) -> list[str]:
    """The job's ``--flags``, as its help lists them."""
    return sorted(set(re.findall(r"(?<![\w-])--[A-Za-z][\w-]*", parser.format_help())))


def parse_job_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None
                   ) -> tuple[argparse.Namespace, list[str]]:
    """Parses the job's flags; the rest must be Beam options, else a usage error (exit 2).

    Args:
        parser: The job's own parser.
        argv: Command-line arguments (None: ``sys.argv[1:]``).

    Returns:
        ``(args, beam_args)`` as ``parser.parse_known_args`` returns them.

    Raises:
        SystemExit: Code 2, through ``parser.error``, naming every unrecognized argument and,
            for a flag, the closest known one.
    """
    # Required flags are checked after the unknown ones: `--ouput o` is a typo to name,
    # not a missing --output.
    args, beam_args = parse_relaxed(parser, argv)
    unknown, beam_names = beam_unknown_args(beam_args)
    problems = []
    after_flag = False
    candidates = _job_flags(parser) + beam_names
    for token in unknown:
        if token.startswith("--") and token != "--":
            name = token.split("=", 1)[0]
            close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{token}{hint}")
            after_flag = "=" not in token
        elif not after_flag:  # a value right after an unknown flag belongs to it
            problems.append(token)
        else:
            after_flag = False
    if problems:
        many = len(problems) > 1
        parser.error(
            f"unrecognized argument{'s' if many else ''} {', '.join(problems)}. Neither this "
            f"job nor Beam's pipeline options accept {'them' if many else 'it'}; fix the "
            "spelling (see --help for the job's flags, Beam's PipelineOptions for the rest).")
    require(parser, args)
    return args, beam_args


def is_dry_run(beam_args: Sequence[str]) -> bool:
    """True when Beam's ``--dry_run`` asks for translation only (nothing runs, nothing is written).

    Example:
        >>> is_dry_run(["--runner=DataflowRunner", "--dry_run=True"]), is_dry_run([])
        (True, False)
    """
    return bool(PipelineOptions(list(beam_args)).get_all_options().get("dry_run"))


def template_location(beam_args: Sequence[str]) -> str | None:
    """Beam's ``--template_location``: ``run()`` then writes a template there and returns.

    The job runs later, without this process: its last step commits the output (see
    :mod:`beam_prep.io.commit.output_finalize`). None when the flag is absent.

    Example:
        >>> template_location(["--template_location=gs://b/t.json"]), template_location([])
        ('gs://b/t.json', None)
    """
    return PipelineOptions(list(beam_args)).get_all_options().get("template_location") or None


#: The runner a job uses without ``--runner``: Beam's in-process FnApiRunner (what the
#: DirectRunner falls back to when it cannot download Prism), named explicitly so a local run
#: does not depend on a download. It honours ``--direct_running_mode=multi_processing`` and
#: ``--direct_num_workers``.
DEFAULT_LOCAL_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"

#: ``--environment_cache_millis`` a job on these runners gets when the command line has none
#: (how long an SDK worker is kept after its last task; Beam's default 0 starts one per task).
#: Spark: 10 minutes, as Spark starts stages seconds apart and Beam's default made the test
#: job 5x slower; a dead worker is left behind by excluding its executor (job-server
#: settings, docs/runners.md "Faults"). Flink: 5 s, shorter than the restart delay of
#: runners/flink-conf/, so a restarted job meets a fresh worker instead of the dead one
#: still in Beam's cache.
ENVIRONMENT_CACHE_MILLIS = {"SparkRunner": 600000, "FlinkRunner": 5000}


def _runner_name(runner: object) -> str:
    """``FlinkRunner`` for ``FlinkRunner``, a dotted path or a runner object."""
    name = runner if isinstance(runner, str) else type(runner).__name__
    return str(name).rsplit(".", 1)[-1]


def job_pipeline_options(beam_args: Sequence[str]) -> PipelineOptions:
    """The Beam options of a job: the command line's, with beam_prep's defaults added.

    * no ``--runner``: :data:`DEFAULT_LOCAL_RUNNER`;
    * ``--runner=SparkRunner`` or ``FlinkRunner`` without ``--environment_cache_millis``:
      the runner's :data:`ENVIRONMENT_CACHE_MILLIS` (docs/runners.md, "Faults").

    A value on the command line always wins.

    Example:
        >>> o = job_pipeline_options(["--runner=FlinkRunner"])
        >>> o.view_as(PortableOptions).environment_cache_millis
        5000
        >>> o = job_pipeline_options(["--runner=FlinkRunner", "--environment_cache_millis=0"])
        >>> int(o.view_as(PortableOptions).environment_cache_millis)  # Beam keeps it a string
        0
        >>> job_pipeline_options([]).view_as(StandardOptions).runner == DEFAULT_LOCAL_RUNNER
        True
    """
    options = PipelineOptions(list(beam_args))
    standard = options.view_as(StandardOptions)
    if standard.runner is None:
        standard.runner = DEFAULT_LOCAL_RUNNER
    given = any(a.split("=", 1)[0] == "--environment_cache_millis" for a in beam_args)
    default = ENVIRONMENT_CACHE_MILLIS.get(_runner_name(standard.runner))
    if default is not None and not given:
        options.view_as(PortableOptions).environment_cache_millis = default
    return options


#: Runners whose workers run on this machine, in this working directory.
LOCAL_RUNNERS = frozenset({"FnApiRunner", "DirectRunner", "BundleBasedDirectRunner",
                           "SwitchingDirectRunner", "PrismRunner", "InteractiveRunner"})


def require_shared_paths(beam_args: Sequence[str], paths: dict[str, str | Sequence[str] | None]
                         ) -> None:
    """Refuses relative local paths when the job runs on a runner with workers elsewhere.

    A Flink, Spark, Dataflow or other portable runner runs the job's code in SDK workers
    with their own working directory (another host, a container, a worker pool): a relative
    path there names another file or none. Absolute paths and filesystem URLs
    (``gs://``, ``hdfs://``, ...) are accepted; so is everything on a local runner and in a
    ``--dry_run`` (translation only).

    Args:
        beam_args: The Beam options of the command line (``--runner`` is read from them).
        paths: Flag name (``"--input"``) → its value(s); None values are skipped.

    Raises:
        InputError: Naming the flag, the value and the fix.

    Example:
        >>> require_shared_paths(["--runner=FlinkRunner"], {"--output": "/data/out"})
        >>> require_shared_paths([], {"--output": "out"})  # local runner: fine
    """
    options = PipelineOptions(list(beam_args)).get_all_options()
    runner = options.get("runner")
    if (runner is None or _runner_name(runner) in LOCAL_RUNNERS
            or options.get("dry_run")):  # translation only: no worker reads anything
        return
    for flag, value in paths.items():
        for path in [value] if isinstance(value, str) else (value or []):
            if "://" not in path and not path.startswith("/"):
                raise InputError(
                    f"{flag} must be an absolute path or a filesystem URL on --runner="
                    f"{runner}: its workers do not share this working directory. Received: "
                    f"{flag}={path}. Fix: give {os.path.abspath(path)} (on storage every "
                    "worker reads) or a URL such as gs://bucket/...")
