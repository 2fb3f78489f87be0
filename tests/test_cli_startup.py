"""`beam-prep <command> --help` is fast: building the parsers imports no TensorFlow or Keras.

Checked deterministically through ``sys.modules`` in a fresh interpreter (a wall-clock limit
would depend on the machine's load). ``beam-prep train --help`` imports no Apache Beam either;
the Beam jobs (analyze, make-elwc) and generate/report, whose modules are built on Beam's
FileSystems, still import Beam.
"""

from __future__ import annotations

import json
import subprocess
import sys

from beam_prep.cli import COMMANDS

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
    commands = ["train", *(c for c in COMMANDS if c != "train")]
    out = subprocess.run([sys.executable, "-c", PROBE, *commands], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(found) == set(COMMANDS)
    for command, got in found.items():
        assert (got["help"], got["heavy"]) == (True, []), command
    assert found["train"]["beam"] is False  # probed first, in a fresh interpreter
    # No TensorFlow start-up lines either (oneDNN, CUDA, absl).
    assert "oneDNN" not in out.stderr and "cuda" not in out.stderr.lower(), out.stderr
