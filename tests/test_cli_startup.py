"""`beam-prep <command> --help` is fast: building the parsers imports no TensorFlow or Keras.

Checked deterministically through ``sys.modules`` in a fresh interpreter (a wall-clock limit
would depend on the machine's load). ``train``, ``generate`` and ``report`` import no Apache
Beam either; the Beam jobs (analyze, make-elwc) still do: their parsers live beside the
pipeline code.
"""

from __future__ import annotations

import json
import subprocess
import sys

from beam_prep.cli import COMMANDS

LIGHT = ("train", "generate", "report")

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
