"""`beam-prep` command line: one sub-command per job.

Each sub-command forwards its arguments to the job's own parser, so ``beam-prep
analyze --help`` shows everything (including that unknown flags go to Beam).

Example:
    $ beam-prep analyze --spec spec.yaml --input 'data/*.csv' --output artifacts/
    $ beam-prep generate --artifacts artifacts/ --output my_model/preprocessing.py
    $ beam-prep make-elwc --input 'logs/*.txt' --input_format letor --output elwc/
    $ beam-prep train --config train.yaml
    $ beam-prep cache prune --cache_dir cache/ --keep_runs 7
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import os
import re
import sys
from collections.abc import Sequence

from beam_prep.errors import BeamPrepError
from beam_prep.interrupts import EXIT_INTERRUPTED, exit_process, is_interrupt, quiet_interrupts

# sub-command -> (module, function, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "analyze": ("beam_prep.pipelines.analyze", "main",
                "Beam job: read data, compute vocabularies and statistics, write artifacts."),
    "transform": ("beam_prep.pipelines.transform", "main",
                  "Beam job: write the dataset encoded by an artifact directory's layers."),
    "generate": ("beam_prep.codegen.cli", "main",
                 "Render a Keras 3 preprocessing module from an artifact directory."),
    "make-elwc": ("beam_prep.pipelines.make_elwc", "main",
                  "Beam job: turn ranking logs (LETOR/LibSVM, CSV, JSONL, Parquet) into ELWC."),
    "train": ("beam_prep.pipelines.train", "main",
              "Train a ranking model on ELWC data (CPU, Mirrored, MultiWorker or TPU)."),
    "report": ("beam_prep.report.cli", "main",
               "Write a self-contained HTML report of an artifact or ELWC directory."),
    "diff": ("beam_prep.diff.cli", "main",
             "Compare two artifact directories and flag drift (exit 3 with --fail_on_drift)."),
    "cache": ("beam_prep.analyzers.cache.cli", "main",
              "Manage the analysis cache of analyze --cache_dir (cache prune --keep_runs N)."),
}


# Commands whose module imports Apache Beam: --help is answered from a Beam-free parser module.
HELP_PARSERS = {"analyze": "beam_prep.pipelines.analyze_args",
                "make-elwc": "beam_prep.pipelines.make_elwc_args",
                "transform": "beam_prep.pipelines.transform_args"}


# The Beam jobs: their output folders are committed in one step (beam_prep.io.commit.output).
BEAM_JOBS = frozenset({"analyze", "transform", "make-elwc"})
INTERRUPTED_JOB = ("the --output folder is as it was before this run (a commit already under "
                   "way is completed by the next run). Rerun the command to finish.")


def _usage() -> str:
    lines = ["usage: beam-prep <command> [options]", "", "commands:"]
    for name, (_, _, text) in COMMANDS.items():
        lines.append(f"  {name:<10} {text}")
    lines += ["", "Run `beam-prep <command> --help` for the options of one command;",
              "`beam-prep --version` prints the version."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `beam-prep` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    # TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) is noise on a CLI; errors stay.
    # Older builds and Beam worker processes (which inherit it) honour this variable; TF 2.21
    # logs through absl and ignores it, so `train` also filters stderr (beam_prep.quiet_tf).
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if args[0] in ("-V", "--version"):
        from beam_prep.version import __version__

        print(f"beam-prep {__version__}")
        return 0
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        close = difflib.get_close_matches(command[:100], list(COMMANDS), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        shown = command if len(command) <= 100 else command[:97] + "..."
        print(f"beam-prep: unknown command {shown!r}{hint}.\n\n{_usage()}", file=sys.stderr)
        return 2
    if command in HELP_PARSERS and any(a in ("-h", "--help") for a in rest):
        # The Beam jobs' parsers live in Beam-free modules: --help starts in well under a second.
        importlib.import_module(HELP_PARSERS[command]).build_parser().parse_args(rest)
        return 0
    module_name, func_name, _ = COMMANDS[command]
    # Ctrl-C in a Beam job: one line, exit 130 (beam_prep.interrupts); the block is entered
    # before the job's module is imported, so an interrupt during the imports is quiet too.
    quiet = (quiet_interrupts(children=any("multi_processing" in a for a in rest))
             if command in BEAM_JOBS else contextlib.nullcontext())
    try:
        with quiet:
            func = getattr(importlib.import_module(module_name), func_name)
            return int(func(rest) or 0)
    except BaseException as e:  # noqa: BLE001 - each kind below, the rest re-raised
        if is_interrupt(e):
            after = (INTERRUPTED_JOB if command in BEAM_JOBS else
                     "Rerun the command to finish.")
            print(f"beam-prep {command}: interrupted; {after}", file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(e, BeamPrepError):
            print(f"beam-prep {command}: error: {e}", file=sys.stderr)
            return 1
        if isinstance(e, OSError):  # a path no check above named (a folder given as a file)
            print(f"beam-prep {command}: error: {_os_error(e)}", file=sys.stderr)
            return 1
        line = wrapped_os_error(e) if isinstance(e, Exception) else None
        if line is None:
            raise
        print(f"beam-prep {command}: error: {line}", file=sys.stderr)
        return 1


#: What Beam's runners make of an OSError raised in a step: ``"OSError: [Errno 28] No space
#: left on device [while running 'Analyze/WriteVocabularies']"`` (any OSError subclass).
_WRAPPED_OS_ERROR = re.compile(
    r"\b(OSError|\w+Error): \[Errno (\d+)\] ([^\n]*?)(?::\s*'[^'\n]*')?"
    r"(?: \[while running '([^'\n]*)'\])?(?:\n|$)")


def wrapped_os_error(e: BaseException) -> str | None:
    """One line for an OSError that a Beam runner re-raised inside its own exception (a
    full disk, a read-only folder, a failed move while a job writes its output), else None.

    The job's output policy logs, on its own line, what the failed run left and what the
    next run does with it (``beam_prep.io.commit.output.failed_run_note``).

    Example:
        >>> print(wrapped_os_error(RuntimeError(
        ...     "OSError: [Errno 28] No space left on device "
        ...     "[while running 'Analyze/WriteVocabularies']"))[:79])
        No space left on device (OSError, errno 28) in step 'Analyze/WriteVocabularies'
    """
    found = _WRAPPED_OS_ERROR.search(str(e))
    if found is None:
        chained = [x for x in (e.__cause__, e.__context__) if isinstance(x, OSError)]
        return _os_error(chained[0]) if chained else None
    name, number, cause, step = found.groups()
    where = f" in step {step!r}" if step else ""
    return (f"{cause.strip()[:200]} ({name}, errno {number}){where}. Free space or make the "
            "folder writable, then run the command again.")


def _os_error(e: OSError) -> str:
    """One line for an OSError that reached the command line: the path, the cause, the fix.

    Example:
        >>> _os_error(IsADirectoryError(21, "Is a directory", "/tmp"))
        "cannot use '/tmp': Is a directory (IsADirectoryError). Check the path arguments."
    """
    path = getattr(e, "filename", None)
    cause = e.strerror or (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
    where = f"cannot use {str(path)[:200]!r}: " if path else ""
    return f"{where}{cause} ({type(e).__name__}). Check the path arguments."


def run() -> None:
    """The ``beam-prep`` console command: :func:`main`, then the process ends with its code
    (after a Ctrl-C without waiting on a stuck pipeline thread: :func:`.exit_process`)."""
    exit_process(main())


if __name__ == "__main__":
    run()
