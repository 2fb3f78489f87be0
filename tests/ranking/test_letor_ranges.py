"""make_elwc end to end: LETOR lines with numbers ELWC cannot hold are rejected, not mangled.

A label of ``1e39`` used to crash the job in ``struct.pack``; a value of ``1e39`` was written as
``inf``; a label of ``-1`` collided with the padding label. Each such line must be counted in
``stats.json`` and kept in ``rejected/rejected-*.jsonl`` with its reason, like any bad line.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
from beam_prep.pipelines import make_elwc  # noqa: E402
from tensorflow_serving.apis import input_pb2  # noqa: E402


def _documents(out: str) -> list[tuple[float, float]]:
    """(label, f1) of every example written, in file order."""
    docs = []
    for name in sorted(os.listdir(out)):
        if not name.endswith(".tfrecord"):
            continue
        for record in tf.data.TFRecordDataset(os.path.join(out, name)):
            elwc = input_pb2.ExampleListWithContext.FromString(record.numpy())
            for ex in elwc.examples:
                feats = ex.features.feature
                docs.append((feats["relevance"].float_list.value[0],
                             feats["f1"].float_list.value[0]))
    return sorted(docs)


def test_out_of_range_lines_are_counted_and_kept_aside(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("2 qid:A 1:0.5\n"
                   "1e39 qid:A 1:1\n"
                   "1 qid:A 1:1e39\n"
                   "-1 qid:B 1:2\n"
                   "0 qid:B 1:-3.4028235e38\n", encoding="utf-8")
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(src), "--output", out, "--max_bad_fraction", "0.8"])

    f32_max = float(np.finfo(np.float32).max)
    assert _documents(out) == [(0.0, -f32_max), (2.0, 0.5)]
    # small input: one rejected shard (see beam_prep.ranking.data.sharding)
    with open(os.path.join(out, "rejected", "rejected-00000-of-00001.jsonl"),
              encoding="utf-8") as f:
        rejected = [json.loads(line) for line in f]
    assert [(r["line"], r["text"]) for r in rejected] == [
        (2, "1e39 qid:A 1:1"), (3, "1 qid:A 1:1e39"), (4, "-1 qid:B 1:2")]
    assert "label 1e+39 is beyond the float32 range" in rejected[0]["reason"]
    assert "feature 1 value 1e+39 is beyond the float32 range" in rejected[1]["reason"]
    assert "label -1.0 is negative" in rejected[2]["reason"]
    with open(os.path.join(out, "stats.json"), encoding="utf-8") as f:
        stats = json.load(f)
    assert (stats["input"]["lines"], stats["input"]["lines_rejected"]) == (5, 3)
