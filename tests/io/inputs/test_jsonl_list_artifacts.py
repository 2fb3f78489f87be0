"""A JSONL file with list features: the same artifacts whichever JSONL path read its blocks.

pyarrow reads a clean block at once; a block holding a blank line (or any line pyarrow cannot
take) is read line by line. Both must give the analysis the same rows: the artifacts of a
clean file and of the same file with blank lines between its rows are byte-identical (the
manifest differs only in the input file's path, and so in its fingerprint; rows read and
rejected included).
Before the fix the line-by-line path rejected every array, and the vocabularies were empty.
"""

from __future__ import annotations

import json
import os
import random

import pytest

pytest.importorskip("apache_beam")

from beam_prep.pipelines import analyze  # noqa: E402

SPEC = """
features:
  - {name: tags, kind: string, shape: list, max_values: 3}
  - {name: ids, kind: integer, shape: list, output_mode: multi_hot}
  - {name: tag_hash, kind: hashed, column: tags, shape: list, num_bins: 8}
  - {name: price, kind: numeric}
"""


def _rows(n: int) -> list[dict]:
    rnd = random.Random(11)
    return [{"tags": [rnd.choice("abcdefg") for _ in range(rnd.randint(0, 4))],
             "ids": [rnd.randint(0, 20) for _ in range(rnd.randint(0, 3))],
             "price": round(rnd.uniform(0, 100), 2)} for _ in range(n)]


def _analyze(root, name: str, text: str) -> dict[str, bytes]:
    data, out = root / f"{name}.jsonl", root / name
    data.write_text(text, encoding="utf-8")
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(data), "--output", str(out)])
    files = {}
    for folder, _, names in os.walk(out):
        for n in names:
            path = os.path.join(folder, n)
            files[os.path.relpath(path, out)] = open(path, "rb").read()
    return files


def _without_input(manifest: bytes) -> dict:
    doc = json.loads(manifest)
    doc["input"].pop("patterns")  # the input file's own path
    doc.pop("fingerprint")  # a hash of the whole manifest, the path included
    return doc


def test_blank_lines_in_a_jsonl_file_leave_the_list_artifacts_byte_identical(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    lines = [json.dumps(r) for r in _rows(300)]
    clean = _analyze(tmp_path, "clean", "\n".join(lines) + "\n")
    blank = _analyze(tmp_path, "blank", "\n".join(lines[:100] + [""] + lines[100:]) + "\n\n")
    assert sorted(clean) == sorted(blank)
    assert clean["vocab/tags.txt"].split(b"\n")[:-1]  # the lists were counted
    assert set(clean["vocab/tags.txt"].split(b"\n")[:-1]) == {
        t.encode() for r in _rows(300) for t in r["tags"]}  # oracle: the rows themselves
    for name in clean:
        if name != "manifest.json":
            assert clean[name] == blank[name], name
    assert _without_input(clean["manifest.json"]) == _without_input(blank["manifest.json"])
