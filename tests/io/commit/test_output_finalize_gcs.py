"""The in-pipeline finalisation on a real GCS JSON API (gcp-storage-emulator, see
tests/io/commit/test_output_gcs.py for the fixture and why its fake credentials file is needed).

A launcher that does not wait hands the run over: leaving ``OutputRun`` keeps ``_LOCK`` (and
drops only this host's guard file); the finalizer, as a worker runs it, then commits by prefix
listing and releases ``_LOCK``; run again it changes nothing.
"""

from __future__ import annotations

import glob
import os
import tempfile

import pytest

from beam_prep.io import filesystem as fs
from beam_prep.io.commit import output
from beam_prep.io.commit.output import OutputPolicy, OutputRun
from tests.io.commit.test_output_gcs import gcs  # noqa: F401 - the emulator fixture

POLICY = OutputPolicy(job="demo", signatures=(("stats.json", "spec.json"),),
                      owned=("stats.json", "spec.json", "train-*.rec"), last="stats.json")


def test_hand_over_then_finalize_on_the_object_store(gcs):  # noqa: F811
    root = f"{gcs}/handed"
    for rel, data in {"stats.json": b"old", "spec.json": b"old", "train-0-of-3.rec": b"o",
                      "keep.md": b"user"}.items():
        fs.write_bytes(f"{root}/{rel}", data)
    with OutputRun(root, POLICY, overwrite=True, run_id="flex1") as run:
        fin = run.finalizer()
        run.hand_over()
    assert output.read_lock(root).run_id == "flex1"  # the job still owns the folder
    # The host-local guard files (output_lock: in the temp directory) hold no flex1 any more.
    guards = glob.glob(os.path.join(tempfile.gettempdir(), "beam_prep_locks", "*.lock"))
    assert not [g for g in guards if b'"flex1"' in open(g, "rb").read()]
    new = {"train-0-of-2.rec": b"n0", "train-1-of-2.rec": b"n1", "spec.json": b"new",
           "stats.json": b"new"}
    for rel, data in new.items():  # what the job writes when it runs
        fs.write_bytes(f"{fin.staging}/{rel}", data)
    assert fin.finalize() == "committed"
    expected = ["keep.md", "spec.json", "stats.json", "train-0-of-2.rec", "train-1-of-2.rec"]
    assert output.list_files(root) == expected  # no _LOCK, no _staging-flex1/ keys
    assert fs.read_bytes(f"{root}/stats.json") == b"new"
    assert fin.finalize() == "nothing_staged"  # a retried bundle
    assert output.list_files(root) == expected


@pytest.mark.slow  # one pipeline run on the emulator: ~30 s on the shared 2-core machine
def test_analyze_flex_launch_gs_to_gs(gcs, tmp_path):  # noqa: F811
    from beam_prep.pipelines import flex_template

    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: c, kind: string}\n")
    fs.write_bytes(f"{gcs}/flexin/data.csv", b"c\nx\ny\nx\n")
    out = f"{gcs}/flexout"
    code = flex_template.launch("analyze", [
        f"--spec={spec}", f"--input={gcs}/flexin/*.csv", f"--output={out}",
        "--no_report=true", f"--template_location={tmp_path / 't.json'}"])
    assert code == 0
    assert output.list_files(out) == ["manifest.json", "vocab/c.counts.jsonl", "vocab/c.txt"]
    assert fs.read_text(f"{out}/vocab/c.txt") == "x\ny\n"
