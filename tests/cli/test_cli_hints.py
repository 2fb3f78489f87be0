"""CLI messages and flags (issue 21 item 8): did-you-mean for verbs and flags, generate's flag
spellings, the lock message, generate --quiet, make-elwc without rejects, counts printed once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from beam_prep import cli
from beam_prep.codegen.cli import build_parser as generate_parser
from beam_prep.errors import ArtifactError
from beam_prep.io.commit.output import OutputRun
from beam_prep.io.commit.output_lock import LockHolder


def test_a_misspelt_verb_gets_did_you_mean(capsys):
    assert cli.main(["analyse", "--spec", "s.yaml"]) == 2
    assert "did you mean 'analyze'?" in capsys.readouterr().err.splitlines()[0]


@pytest.mark.parametrize("verb", ["analyze", "make-elwc"])
def test_a_misspelt_flag_of_a_beam_job_gets_did_you_mean_before_required(verb, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([verb, "--spec", "s.yaml", "--input", "d.csv", "--ouput", "o"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert "--ouput (did you mean --output?)" in err
    assert "required" not in err


def test_a_missing_required_flag_is_still_reported(capsys):
    with pytest.raises(SystemExit):
        cli.main(["analyze", "--spec", "s.yaml", "--input", "d.csv"])
    assert "the following arguments are required: --output" in capsys.readouterr().err


def test_a_misspelt_generate_flag_gets_did_you_mean(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", "--artifacts", "a", "--ouput", "x.py"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--ouput (did you mean --output?)" in err


@pytest.mark.parametrize("flag", ["--no_overwrite", "--no-overwrite"])
def test_generate_takes_both_spellings_of_no_overwrite(flag):
    args = generate_parser().parse_args(["--artifacts", "a", "--output", "o.py", flag])
    assert args.overwrite is False


@pytest.mark.parametrize("flag", ["--default_artifacts", "--default-artifacts"])
def test_generate_takes_both_spellings_of_default_artifacts(flag):
    args = generate_parser().parse_args(["--artifacts", "a", "--output", "o.py", flag, "gs://b"])
    assert args.default_artifacts == "gs://b"


def test_generate_help_lists_the_underscore_spelling_first():
    text = generate_parser().format_help()
    assert "--no_overwrite, --no-overwrite" in text
    assert "--default_artifacts DEFAULT_ARTIFACTS, --default-artifacts" in text


def test_a_lock_held_by_another_run_is_reported_as_a_lock(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    holder = json.loads(LockHolder.for_this_process("other-run").to_json())
    (folder / "_LOCK").write_text(json.dumps(holder))
    from beam_prep.analyzers.pipeline import ARTIFACT_OUTPUT

    with pytest.raises(ArtifactError) as e:
        with OutputRun(str(folder), ARTIFACT_OUTPUT):
            pass
    assert "is locked by run other-run" in str(e.value)
    assert "permissions" not in str(e.value) and "cannot be written" not in str(e.value)


@pytest.fixture(scope="module")
def derived_artifacts(tmp_path_factory):
    from beam_prep.pipelines import analyze

    root = tmp_path_factory.mktemp("art")
    (root / "d.csv").write_text("x,c\n1,a\n2,b\n")
    (root / "spec.yaml").write_text(
        "features:\n  - {name: x, kind: numeric}\n  - {name: r, kind: numeric, expr: 'x + 1'}\n")
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "d.csv"),
                 "--output", str(root / "art")])
    return root / "art"


def test_generate_quiet_prints_nothing_from_tensorflow(derived_artifacts, tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "beam-prep")
    env = {k: v for k, v in os.environ.items() if k != "BEAM_PREP_TF_LOGS"}
    proc = subprocess.run([script, "generate", "--artifacts", str(derived_artifacts),
                           "--output", str(tmp_path / "pp.py"), "--quiet"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "pp.py").exists()  # the derived layer was rendered (TF was imported)
    assert proc.stdout == "" and proc.stderr == ""


def test_make_elwc_without_rejects_writes_no_rejected_shard(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("1 qid:a 1:1\n0 qid:a 1:2\n")
    out = tmp_path / "out"
    assert cli.main(["make-elwc", "--input", str(src), "--output", str(out),
                     "--no_report"]) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["input"]["lines_rejected"] == 0 and stats["rejected_files"] == []
    assert not (out / "rejected").exists()
    assert "wrote rejected" not in capsys.readouterr().out


def test_analyze_prints_the_row_counts_once(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("x\n1\n2\n")
    (tmp_path / "s.yaml").write_text("features:\n  - {name: x, kind: numeric}\n")
    assert cli.main(["analyze", "--spec", str(tmp_path / "s.yaml"), "--input",
                     str(tmp_path / "d.csv"), "--output", str(tmp_path / "o"),
                     "--no_report"]) == 0
    out = capsys.readouterr().out
    assert out.count("rows_read: 2") == 1 and "rows read" not in out


@pytest.mark.parametrize(("argv", "hint"), [
    (["diff", "a", "b", "--jsn"], "--jsn (did you mean --json?)"),
    (["cache", "prune", "--cache_dir", "c", "--keep_runs", "1", "--dryrun"],
     "--dryrun (did you mean --dry_run?)"),
])
def test_diff_and_cache_flags_get_did_you_mean(argv, hint, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and hint in capsys.readouterr().err


def test_help_still_shows_required_flags_without_brackets(capsys):
    with pytest.raises(SystemExit):
        cli.main(["generate", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert "--artifacts ARTIFACTS" in usage and "[--artifacts" not in usage
