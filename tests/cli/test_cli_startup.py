"""`beam-prep <command> --help` is fast: building the parsers imports no TensorFlow or Keras.

Checked deterministically through ``sys.modules`` in a fresh interpreter (a wall-clock limit
would depend on the machine's load). No command imports Apache Beam for ``--help`` either: the
Beam jobs' parsers live in ``beam_prep.pipelines.analyze_args`` / ``make_elwc_args``.
"""

from __future__ import annotations

import json
import subprocess
import sys

from beam_prep.cli import COMMANDS

LIGHT = ("train", "generate", "report", "analyze", "make-elwc", "diff", "cache")

PROBE = """
import contextlib, io, json, sys
from beam_prep import cli
found = {}
for command in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            cli.main([command, "--help"])
        except SystemExit:
            pass
    found[command] = {"help": "usage:" in out.getvalue(),
                      "heavy": sorted(m for m in ("tensorflow", "keras", "tf_keras", "jax",
                                                   "torch") if m in sys.modules),
                      "beam": "apache_beam" in sys.modules}
print(json.dumps(found))
"""


def test_help_of_every_command_imports_no_tensorflow_or_keras():
    commands = [*LIGHT, *(c for c in COMMANDS if c not in LIGHT)]  # light ones first
    out = subprocess.run([sys.executable, "-c", PROBE, *commands], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(found) == set(COMMANDS)
    for command, got in found.items():
        assert (got["help"], got["heavy"]) == (True, []), command
    # Probed first, in a fresh interpreter (modules accumulate over the probe).
    assert [found[c]["beam"] for c in LIGHT] == [False] * len(LIGHT)
    # No TensorFlow start-up lines either (oneDNN, CUDA, absl).
    assert "oneDNN" not in out.stderr and "cuda" not in out.stderr.lower(), out.stderr


def test_beam_free_parsers_agree_with_the_jobs():
    from beam_prep.pipelines import analyze, analyze_args, make_elwc, make_elwc_args

    from beam_prep.io.inputs.readers import FORMATS
    from beam_prep.ranking.data.transforms import DEFAULT_SPLIT_BYTES

    assert analyze_args.FORMATS == FORMATS
    assert make_elwc_args.DEFAULT_SPLIT_BYTES == DEFAULT_SPLIT_BYTES
    assert analyze.build_parser is analyze_args.build_parser
    assert make_elwc.build_parser is make_elwc_args.build_parser
