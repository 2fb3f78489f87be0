"""`beam-prep generate` ends with the shared run summary and writes --summary_json."""

from __future__ import annotations

import json
import os

from beam_prep.cli import main


def test_generate_summary_json_success_and_failure(all_kinds_artifacts: str, tmp_path,
                                                  capsys) -> None:
    out, summary = tmp_path / "pp.py", tmp_path / "summary.json"
    assert main(["generate", "--artifacts", all_kinds_artifacts, "--output", str(out),
                 "--summary_json", str(summary)]) == 0
    with open(os.path.join(all_kinds_artifacts, "manifest.json"), encoding="utf-8") as f:
        n_features = len(json.load(f)["features"])
    got = json.loads(summary.read_text())
    assert (got["command"], got["status"], got["error"]) == ("generate", "ok", None)
    assert got["counts"] == {"features": n_features, "bytes": os.path.getsize(out)}
    assert got["outputs"] == {"module": str(out)}
    printed = capsys.readouterr().out
    assert printed.startswith("beam-prep generate: ok in ")
    assert printed.endswith(f"  wrote module: {out}\n")

    assert main(["generate", "--artifacts", all_kinds_artifacts, "--output", str(out),
                 "--no-overwrite", "--summary_json", str(summary)]) == 1
    got = json.loads(summary.read_text())
    assert (got["status"], got["error_type"]) == ("failed", "ArtifactError")
    assert "already exists" in got["error"]
