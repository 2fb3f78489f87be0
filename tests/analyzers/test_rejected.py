"""Rejected-row shards: deterministic names, (file, row) order, independent of input order.

The expected shard contents are built here from the rows' (file, row) numbers.
"""

from __future__ import annotations

import json
import os
import random

import apache_beam as beam

# Named so that pytest does not try to collect Beam's class as a test class.
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beam_prep.analyzers.rejected import Chunk, WriteRejected, chunk_key, plan_shards


def _item(source, row):
    line = json.dumps({"source": source, "row": row})
    return f"{source}\x00{(row if row is not None else -1):020d}", line


def test_plan_packs_chunks_in_file_and_row_order_and_never_cuts_one():
    chunks = [Chunk("b", 0, "b0", 30, 3), Chunk("a", 2, "a2", 10, 1),
              Chunk("a", -1, "a-1", 5, 1), Chunk("a", 0, "a0", 40, 4), Chunk("c", 0, "c0", 0, 0)]
    plan = plan_shards(chunks, shard_bytes=45)
    # a-1 (5) + a0 (40) = 45 closes shard 0; a2 (10) + b0 (30) = 40 < 45 stays open; c0 is empty
    assert plan == [("rejected/rejected-00000-of-00002.jsonl", ("a-1", "a0")),
                    ("rejected/rejected-00001-of-00002.jsonl", ("a2", "b0"))]
    assert plan_shards([], shard_bytes=45) == []


def test_chunk_key_uses_the_true_row_number():
    assert chunk_key(_item("f.csv", 9), chunk_rows=10)[0] == ("f.csv", 0)
    assert chunk_key(_item("f.csv", 10), chunk_rows=10)[0] == ("f.csv", 1)
    assert chunk_key(_item("f.csv", None), chunk_rows=10)[0] == ("f.csv", -1)


def test_shards_hold_every_row_once_in_file_row_order(tmp_path):
    rows = [("gs://x/a.csv", r) for r in (1, 5, 12, 13, 29, 30, 31)] + \
        [("gs://x/b.csv", r) for r in (2, 3)] + [("gs://x/b.csv", None)]
    items = [_item(s, r) for s, r in rows]
    random.Random(7).shuffle(items)
    out, temp = str(tmp_path / "out"), str(tmp_path / "out" / "_tmp")
    one_line = len(items[0][1]) + 1
    with BeamTestPipeline() as p:
        names = (p | beam.Create(items)
                 | WriteRejected(out, temp, chunk_rows=10, shard_bytes=3 * one_line))
        # chunks: a/0 {1,5} a/1 {12,13} a/2 {29} a/3 {30,31} b/-1 {None} b/0 {2,3}
        # packed by >= 3 lines: [a0, a1] [a2, a3] [b-1, b0]
        expected = [f"rejected/rejected-0000{i}-of-00003.jsonl" for i in range(3)]
        assert_that(names, equal_to([expected]))
    order = sorted(rows, key=lambda sr: (sr[0], -1 if sr[1] is None else sr[1]))
    written = []
    for name in expected:
        with open(os.path.join(out, name), encoding="utf-8") as f:
            written.append([(d["source"], d["row"]) for d in map(json.loads, f)])
    assert [len(w) for w in written] == [4, 3, 3]
    assert [x for w in written for x in w] == order


def test_nothing_rejected_writes_no_shard(tmp_path):
    out = str(tmp_path / "out")
    with BeamTestPipeline() as p:
        names = p | beam.Create([]) | WriteRejected(out, out + "/_tmp")
        assert_that(names, equal_to([[]]))
    assert not os.path.exists(os.path.join(out, "rejected"))


def test_the_input_check_reports_and_the_driver_raises_once(tmp_path):
    import pytest

    from beam_prep.analyzers.pipeline import FAILED_REPORT, input_error, raise_if_failed
    from beam_prep.errors import InputError

    empty = {"rows_read": 0, "rows_rejected": 0, "rejected_by_reason": {}}
    assert input_error(empty, ["d/*.csv"], 0.5, "o/rejected").startswith(
        "No rows were read from ['d/*.csv']")
    meta = {"rows_read": 200, "rows_rejected": 3, "rejected_by_reason": {"b": 1, "a": 2}}
    assert input_error(meta, ["x"], 0.015, "o/rejected") is None  # 1.5% is allowed
    message = input_error(meta, ["x"], 0.01, "o/rejected")
    assert message == ("3 of 200 rows (1.50%) could not be read (by reason: {'a': 2, 'b': 1}), "
                       "more than max_bad_fraction=0.01. The rows and reasons are in "
                       "o/rejected/. Fix the input or raise --max_bad_fraction.")
    staging = tmp_path / "_staging-r"
    staging.mkdir()
    raise_if_failed(str(staging), str(tmp_path))  # no report: nothing to raise
    (staging / FAILED_REPORT).write_text(json.dumps({"error": message}))
    with pytest.raises(InputError) as info:
        raise_if_failed(str(staging), str(tmp_path))
    assert str(info.value) == (f"{message} {tmp_path} was left as it was; this run's rejected "
                               f"rows stay in {staging} until the next run.")
