"""Transform job: rejected rows (unreadable, out of vocabulary) set aside and counted; the
output folder policy; the CLI verb and its summary."""

from __future__ import annotations

import json
import re

import pytest
from beam_prep.pipelines import analyze, transform

from beam_prep.errors import InputError
from beam_prep.io.filesystem import sha256_of

SPEC = """
features:
  - {name: color, kind: string, num_oov_indices: 0}
  - {name: size, kind: numeric}
"""


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    root = tmp_path_factory.mktemp("rows")
    (root / "train.csv").write_text("color,size\nred,1\nblue,2\nred,3\n")
    (root / "spec.yaml").write_text(SPEC)
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "train.csv"),
                 "--output", str(root / "art")])
    return str(root / "art")


def _serve(tmp_path) -> str:
    path = tmp_path / "serve.csv"
    # row 2: not a number; row 4: a colour outside the vocabulary with no OOV slot.
    path.write_text("color,size\nred,1.5\nblue,big\nblue,2\ngreen,4\nred,0\n")
    return str(path)


def _rejected_lines(out) -> list[dict]:
    return [json.loads(line) for p in sorted((out / "rejected").glob("*.jsonl"))
            for line in p.read_text().splitlines()]


def test_bad_rows_are_counted_and_set_aside(artifacts, tmp_path):
    out = tmp_path / "enc"
    transform.run(["--artifacts", artifacts, "--input", _serve(tmp_path), "--output", str(out),
                   "--max_bad_fraction", "0.5"])
    manifest = json.loads((out / "transform.json").read_text())
    counts = manifest["counts"]
    assert (counts["rows_read"], counts["rows_written"], counts["rows_rejected"]) == (5, 3, 2)
    assert counts["rejected_by_reason"]["out_of_vocabulary"] == 1
    rejected = _rejected_lines(out)
    assert len(rejected) == 2
    assert any("green" in r["record"] for r in rejected)
    assert any(r.get("row") == 2 for r in rejected)


def test_too_many_bad_rows_fail_and_leave_no_output(artifacts, tmp_path):
    out = tmp_path / "enc"
    with pytest.raises(InputError, match="could not be read"):
        transform.run(["--artifacts", artifacts, "--input", _serve(tmp_path),
                       "--output", str(out)])
    assert not (out / "transform.json").exists()


def test_refuses_a_finished_output_without_overwrite(artifacts, tmp_path):
    from beam_prep.errors import ArtifactError

    out = tmp_path / "enc"
    args = ["--artifacts", artifacts, "--input", _serve(tmp_path), "--output", str(out),
            "--max_bad_fraction", "1"]
    transform.run(args)
    with pytest.raises(ArtifactError):
        transform.run(args)
    transform.run(args + ["--overwrite"])
    assert (out / "transform.json").exists()


def test_cli_verb_help_and_summary(artifacts, tmp_path, capsys):
    from beam_prep import cli

    with pytest.raises(SystemExit):
        cli.main(["transform", "--help"])
    assert "TransformDataset" in capsys.readouterr().out
    out = tmp_path / "enc"
    assert cli.main(["transform", "--artifacts", artifacts, "--input", _serve(tmp_path),
                     "--output", str(out), "--max_bad_fraction", "1"]) == 0
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    # the counts are printed once (the run summary block), not restated after it
    assert len(re.findall(r"rows[ _]read", printed)) == 1, printed
    assert "rows_read: 5\n" in printed and "rows_written: 3\n" in printed
    assert "rows_rejected: 2\n" in printed
    assert 'rejected by reason: {"' in printed
    assert "color" in captured.out and "size" in captured.out


def test_shards_follow_splits_and_concatenate_to_the_same_records(artifacts, tmp_path):
    data = tmp_path / "many.csv"
    colors = ["red", "blue"] * 40
    data.write_text("color,size\n" + "".join(f"{c},{i}\n" for i, c in enumerate(colors)))
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    transform.run(["--artifacts", artifacts, "--input", str(data), "--output", str(whole),
                   "--input_split_bytes", "0"])
    transform.run(["--artifacts", artifacts, "--input", str(data), "--output", str(parts),
                   "--input_split_bytes", "200", "--batch_size", "7"])
    manifest = json.loads((parts / "transform.json").read_text())
    names = [f["path"] for f in manifest["files"]]
    assert len(names) > 1
    assert names == [f"data/part-{i:05d}-of-{len(names):05d}.tfrecord" for i in range(len(names))]
    assert sum(f["rows"] for f in manifest["files"]) == len(colors)
    for f in manifest["files"]:  # hashed while written: the file read back agrees
        assert (f["sha256"], f["bytes"]) == sha256_of(str(parts / f["path"]))
    joined = b"".join((parts / n).read_bytes() for n in names)
    assert joined == (whole / "data/part-00000-of-00001.tfrecord").read_bytes()
