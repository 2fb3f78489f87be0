"""The quickstart prints no TensorFlow start-up lines and no `failed call to cuInit` error on
a CPU machine (issue 21 item 9). The example script imports TensorFlow through
beam_prep.quiet_tf and runs under its stderr filter; real warnings still get through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOISE = ("cuInit", "oneDNN custom operations", "absl::InitializeLog", "cudart_stub")

SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import examples.train_and_export as t            # imports TensorFlow and Keras
with t.tf_notices_filtered():
    t.tf.config.list_physical_devices()           # the CUDA probe: cuInit fails on a CPU box
    print(float(t.tf.reduce_sum(t.tf.constant([1.0, 2.0]))))
    print("real warning", file=sys.stderr)
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("BEAM_PREP_TF_LOGS", None)
    return env


def test_example_import_and_device_probe_print_no_tf_notices():
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO)], capture_output=True,
                         text=True, timeout=600, env=_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "3.0"
    assert not [n for n in NOISE if n in out.stderr], out.stderr[-3000:]
    assert "real warning" in out.stderr


@pytest.mark.slow  # ~1 min: the quickstart's analyze + train_and_export
def test_quickstart_commands_print_no_tf_notices(tmp_path):
    """The Makefile's quickstart recipe, run in a scratch folder."""
    out_dir = tmp_path / "qs"
    steps = [
        ["-m", "beam_prep.cli", "analyze", "--spec", str(REPO / "examples" / "spec.yaml"),
         "--input", str(REPO / "examples" / "data" / "sample.csv"),
         "--output", str(out_dir / "artifacts")],
        ["-m", "beam_prep.cli", "generate", "--artifacts", str(out_dir / "artifacts"),
         "--output", str(out_dir / "preprocessing.py")],
        [str(REPO / "examples" / "train_and_export.py"), "--artifacts",
         str(out_dir / "artifacts"), "--preprocessing", str(out_dir / "preprocessing.py"),
         "--output", str(out_dir / "model"), "--epochs", "1"],
    ]
    for argv in steps:
        out = subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True,
                             text=True, timeout=1200, env=_env())
        assert out.returncode == 0, out.stderr[-3000:]
        noise = [n for n in (*NOISE, "ran out of data") if n in out.stderr]
        assert not noise, (argv, out.stderr[-3000:])
    assert "identical predictions (incl. unseen tokens, missing values, NaN): True" in out.stdout
