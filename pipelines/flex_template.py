"""Dataflow Flex Template support: parameters from the jobs' own parsers, and the entry point.

The metadata files in ``templates/dataflow/`` are generated from ``build_parser()`` of each job
(its :class:`~beam_prep.pipelines.job_parser.JobParser` lists the declared flags), so the
template's parameters are exactly the command line's (a test checks the committed files against
a fresh generation):

    python -m beam_prep.pipelines.flex_template analyze > templates/dataflow/analyze.metadata.json

The Flex Template launcher passes every parameter as ``--name=value``; :func:`launch` turns the
boolean ones (``--overwrite=true``) into argparse switches and runs the job's ``main``.

Example:
    >>> meta = metadata("analyze")
    >>> [p["name"] for p in meta["parameters"]][:3]
    ['spec', 'input', 'output']
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from beam_prep.pipelines.job_parser import JobParser, is_switch

JOBS = {
    "analyze": ("beam_prep.pipelines.analyze",
                "beam_prep analyze: vocabularies, moments and quantiles of a dataset, written as "
                "an artifact folder that the generated Keras layers read."),
    "make_elwc": ("beam_prep.pipelines.make_elwc",
                  "beam_prep make-elwc: ranking logs (LETOR/LibSVM, CSV, JSONL, Parquet) to "
                  "ExampleListWithContext TFRecords."),
}
# Flags that make no sense in a template run (they only shape local console output).
_LOCAL_ONLY = {"help", "quiet"}
_INT = r"^-?[0-9]+$"
_FLOAT = r"^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$"
_BOOL = r"^(true|false)$"


def parser(job: str) -> JobParser:
    """The command-line parser of ``job`` (from its Beam-free ``*_args`` module)."""
    if job not in JOBS:
        raise SystemExit(f"flex_template: unknown job {job!r}; choose one of {sorted(JOBS)}")
    return importlib.import_module(JOBS[job][0] + "_args").build_parser()


def template_flags(job: str) -> list[argparse.Action]:
    """The flags of ``job`` that are template parameters, in declaration order."""
    return [a for a in parser(job).flags if a.dest not in _LOCAL_ONLY]


def _help(action: argparse.Action) -> str:
    text = (action.help or action.dest).replace("%%", "%")
    if "%(default)" in text:
        text = text % {"default": action.default}
    return " ".join(text.split())


def _parameter(action: argparse.Action) -> dict[str, Any]:
    param: dict[str, Any] = {
        "name": action.dest,
        "label": action.dest.replace("_", " ").capitalize(),
        "helpText": _help(action),
        "isOptional": not action.required,
    }
    if is_switch(action):
        param["regexes"] = [_BOOL]
    elif action.choices:
        param["regexes"] = ["^(" + "|".join(re.escape(str(c)) for c in action.choices) + ")$"]
    elif action.type is int:
        param["regexes"] = [_INT]
    elif action.type is float:
        param["regexes"] = [_FLOAT]
    return param


def metadata(job: str) -> dict[str, Any]:
    """The Flex Template metadata (name, description, parameters) of ``job``."""
    return {
        "name": f"beam_prep_{job}",
        "description": JOBS[job][1],
        "parameters": [_parameter(a) for a in template_flags(job)],
    }


def flex_argv(job: str, argv: Sequence[str]) -> list[str]:
    """The job's command line from launcher flags: ``--switch=true`` -> ``--switch``."""
    switches = {a.dest for a in template_flags(job) if is_switch(a)}
    out: list[str] = []
    for arg in argv:
        name, eq, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if name in switches and eq:
            if value.lower() not in ("true", "false"):
                raise SystemExit(f"flex_template: --{name} takes true or false. "
                                 f"Received: {value!r}")
            if value.lower() == "true":
                out.append(f"--{name}")
            continue
        out.append(arg)
    return out


def launch(job: str, argv: Sequence[str]) -> int:
    """Runs ``job`` with the launcher's flags; returns the exit code (the entry point's)."""
    from beam_prep.errors import BeamPrepError

    if job not in JOBS:
        print(f"flex_template: BEAM_PREP_FLEX_JOB must be one of {sorted(JOBS)}. "
              f"Received: {job!r}", file=sys.stderr)
        return 2
    try:
        return int(importlib.import_module(JOBS[job][0]).main(flex_argv(job, argv)) or 0)
    except BeamPrepError as e:
        print(f"beam-prep {job}: error: {e}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the metadata JSON of the job named in ``argv``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m beam_prep.pipelines.flex_template {{{','.join(JOBS)}}}",
              file=sys.stderr)
        return 2
    print(json.dumps(metadata(args[0]), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
