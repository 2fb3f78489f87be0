"""docs/transform.md's read-back snippet runs as written against a real transform output."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
from beam_prep.pipelines import analyze, transform

DOC = Path(__file__).resolve().parents[2] / "docs" / "transform.md"


def _read_back_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    [block] = [b for b in blocks if "transform.json" in b and "TFRecordDataset" in b]
    return block


def test_the_read_back_snippet_reads_every_row(tmp_path, monkeypatch):
    (tmp_path / "d.csv").write_text("color,size\n" + "".join(
        f"{c},{i}\n" for i, c in enumerate(["red", "blue", "green"] * 7)))
    (tmp_path / "spec.yaml").write_text("features:\n  - {name: color, kind: string}\n"
                                        "  - {name: size, kind: numeric, num_buckets: 3}\n")
    analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", str(tmp_path / "d.csv"),
                 "--output", str(tmp_path / "art"), "--quiet", "--no_report"])
    transform.run(["--artifacts", str(tmp_path / "art"), "--input", str(tmp_path / "d.csv"),
                   "--output", str(tmp_path / "encoded"), "--input_split_bytes", "60"])
    manifest = json.loads((tmp_path / "encoded" / "transform.json").read_text())
    assert len(manifest["files"]) > 1  # the snippet must read every shard
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(_read_back_block(), str(DOC), "exec"), scope)  # noqa: S102 - our own doc
    batches = list(scope["ds"])
    assert sorted(batches[0]) == sorted(o["key"] for o in manifest["outputs"])
    sizes = np.concatenate([b["size"].numpy().ravel() for b in batches])
    assert len(sizes) == manifest["counts"]["rows_written"] == 21
    assert os.path.basename(scope["files"][0]) == os.path.basename(manifest["files"][0]["path"])
