"""Both jobs run the way a Flex Template launcher runs them: the driver does not commit.

``flex_template.launch`` (what ``templates/dataflow/flex_main.py`` calls) runs the job's
``main`` with ``--template_location``: on Dataflow the launcher then only writes the job and
exits, so ``run()`` hands the output over to the pipeline's last step (FinalizeOutput) and
never calls ``OutputRun.commit``. On the local runner the same command line runs the whole
pipeline in-process, which is what these tests use. Expected vocabularies are counted here from
the input text; the ELWC shards are compared with a normal run's bytes.
"""

from __future__ import annotations

import collections
import json
import logging
import os

import pytest
from beam_prep.pipelines import analyze, flex_template, make_elwc

from beam_prep.io.commit import output

SPEC = "features:\n  - {name: c, kind: string}\n"
CSV = "c\nx\ny\nx\nz\nx\ny\nw\n"


def _files(root) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root).replace(os.sep, "/")] = f.read()
    return out


@pytest.fixture
def no_driver_commit(monkeypatch):
    """Records every driver-side OutputRun.commit call (the launcher path must make none)."""
    calls = []
    real = output.OutputRun.commit

    def spy(self):
        calls.append(self.run_id)
        return real(self)

    monkeypatch.setattr(output.OutputRun, "commit", spy)
    return calls


def _expected_vocab(text: str) -> str:
    counts = collections.Counter(text.split()[1:])
    order = sorted(counts, key=lambda t: (-counts[t], [-b for b in t.encode()]))
    return "".join(t + "\n" for t in order)


def test_analyze_from_the_flex_launcher_commits_in_the_pipeline(tmp_path, no_driver_commit):
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "d.csv").write_text(CSV)
    base = [f"--spec={tmp_path / 'spec.yaml'}", f"--input={tmp_path / 'd.csv'}"]
    normal = tmp_path / "normal"
    analyze.run([*base, f"--output={normal}"])
    assert no_driver_commit  # the waiting driver still calls commit (a no-op)
    no_driver_commit.clear()
    flex = tmp_path / "flex"
    code = flex_template.launch("analyze", [
        *base, f"--output={flex}", "--no_report=true",
        f"--template_location={tmp_path / 'template.json'}"])
    assert code == 0
    assert no_driver_commit == []  # the launcher path never commits on the driver
    got = _files(flex)
    assert sorted(got) == ["manifest.json", "vocab/c.counts.jsonl", "vocab/c.txt"]  # no lock
    assert got["vocab/c.txt"].decode() == _expected_vocab(CSV)
    assert got == _files(normal)  # the same bytes as a run whose driver committed


@pytest.mark.slow  # two pipeline runs: ~20 s on the shared 2-core machine
def test_analyze_flex_failed_input_check_keeps_folder_and_releases_lock(tmp_path, caplog):
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "good.csv").write_text(CSV)
    (tmp_path / "bad.csv").write_text("c\nx,1\ny,2\n")  # every row: wrong column count
    out = tmp_path / "out"
    analyze.run([f"--spec={tmp_path / 'spec.yaml'}", f"--input={tmp_path / 'good.csv'}",
                 f"--output={out}"])
    before = _files(out)
    with caplog.at_level(logging.ERROR, logger="beam_prep.io.commit.output"):
        code = flex_template.launch("analyze", [
            f"--spec={tmp_path / 'spec.yaml'}", f"--input={tmp_path / 'bad.csv'}",
            f"--output={out}", "--overwrite=true", "--no_report=true",
            "--input_format=csv", f"--template_location={tmp_path / 't.json'}"])
    assert code == 0  # the launcher only submits; the job's own log reports the failure
    after = _files(out)
    (staging,) = {p.split("/")[0] for p in after if p.startswith("_staging-")}
    assert {p: v for p, v in after.items() if not p.startswith("_staging-")} == before
    assert output.read_lock(str(out)) is None
    failed = json.loads(after[f"{staging}/_failed.json"])
    assert failed["rows_read"] == 2 and failed["rows_rejected"] == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("2 of 2 rows" in m and staging in m and "left as it was" in m for m in errors)


# 12 good lines and a bad one: the rejected shards are committed with the others
LETOR = "".join(f"{i % 3} qid:q{i // 4} 1:{i}.25 2:{i % 5}\n" for i in range(12)) + "bad\n"


@pytest.mark.slow  # two pipeline runs: ~15 s on the shared 2-core machine
def test_make_elwc_from_the_flex_launcher_commits_in_the_pipeline(tmp_path, no_driver_commit):
    (tmp_path / "a.txt").write_text(LETOR)
    base = [f"--input={tmp_path / 'a.txt'}", "--num_shards=2", "--max_bad_fraction=0.5"]
    normal = tmp_path / "normal"
    make_elwc.run([*base, f"--output={normal}"])
    no_driver_commit.clear()
    flex = tmp_path / "flex"
    code = flex_template.launch("make_elwc", [
        *base, f"--output={flex}", "--no_report=true",
        f"--template_location={tmp_path / 'template.json'}"])
    assert code == 0 and no_driver_commit == []
    got = _files(flex)
    assert sorted(got) == [
        "feature_spec.json", "rejected/rejected-00000-of-00002.jsonl",
        "rejected/rejected-00001-of-00002.jsonl", "stats.json",
        "train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]
    assert json.loads(got["stats.json"])["lists"] == 3  # q0, q1, q2
    assert got == _files(normal)
