"""The progress total of `analyze` counts the splits the job reads, ``--input_split_bytes``
included (it once ignored the flag and showed "15/1 splits")."""

from __future__ import annotations

import re

from beam_prep.pipelines import analyze

from beam_prep.io.inputs.readers import list_splits


def test_analyze_progress_total_follows_input_split_bytes(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: x, kind: numeric}\n", encoding="utf-8")
    data = tmp_path / "d.csv"
    data.write_text("x\n" + "".join(f"{i * 0.25}\n" for i in range(400)), encoding="utf-8")
    expected = len(list_splits(str(data), "csv", split_bytes=300))
    assert expected > 3  # the file is really cut

    code = analyze.main(["--spec", str(spec), "--input", str(data), "--output",
                         str(tmp_path / "out"), "--input_split_bytes", "300"])

    assert code == 0
    totals = re.findall(r"beam-prep analyze\S*:? (\d+)/(\d+) splits", capsys.readouterr().err)
    assert totals, "no progress line"
    assert totals[-1] == (str(expected), str(expected))
