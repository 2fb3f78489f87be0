"""Transform job on JSONL with a list feature: one bad line costs that line only.

The job reads with the list features' columns (``list_columns``), so a block holding a bad
line keeps its arrays. Oracle: the same job on the file without the bad line.
"""

from __future__ import annotations

import json
import random

import pyarrow.parquet as pq
import pytest
from beam_prep.pipelines import analyze, transform

SPEC = """
features:
  - {name: tags, kind: string, shape: list, max_values: 3}
  - {name: size, kind: numeric}
"""


def _lines(n: int) -> list[str]:
    rnd = random.Random(4)
    return [json.dumps({"tags": [rnd.choice("abcd") for _ in range(rnd.randint(0, 4))],
                        "size": rnd.randint(0, 9)}) for _ in range(n)]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    root = tmp_path_factory.mktemp("jsonl_lists")
    (root / "train.jsonl").write_text("\n".join(_lines(50)) + "\n")
    (root / "spec.yaml").write_text(SPEC)
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "train.jsonl"),
                 "--output", str(root / "art")])
    return str(root / "art")


def _run(artifacts, tmp_path, name: str, lines: list[str]):
    data, out = tmp_path / f"{name}.jsonl", tmp_path / name
    data.write_text("\n".join(lines) + "\n")
    transform.run(["--artifacts", artifacts, "--input", str(data), "--output", str(out),
                   "--max_bad_fraction", "0.5", "--output_format", "parquet"])
    counts = json.loads((out / "transform.json").read_text())["counts"]
    table = pq.read_table(sorted(out.rglob("*.parquet")))
    return counts, table


def test_a_bad_line_rejects_only_itself(artifacts, tmp_path):
    lines = _lines(40)
    clean_counts, clean = _run(artifacts, tmp_path, "clean", lines)
    counts, dirty = _run(artifacts, tmp_path, "dirty", lines[:10] + ["{not json"] + lines[10:])
    assert (clean_counts["rows_written"], clean_counts["rows_rejected"]) == (40, 0)
    assert (counts["rows_read"], counts["rows_written"], counts["rows_rejected"]) == (41, 40, 1)
    assert counts["rejected_by_reason"] == {"malformed_json": 1}
    assert dirty.equals(clean)
