"""Spill files: deterministic names, so reruns and retried bundles write the same files."""

from __future__ import annotations

import os

import pyarrow as pa

from beam_prep.analyzers import spill
from beam_prep.analyzers.vocab.combine import VocabularyCombineFn
from beam_prep.analyzers.vocab.count import count_values


def _spill_files(folder):
    return sorted(os.path.relpath(os.path.join(r, n), folder)
                  for r, _, names in os.walk(folder) for n in names)


def _combine(temp, batches):
    fn = VocabularyCombineFn(temp, spill_rows=2)
    acc = fn.create_accumulator()
    for values in batches:
        acc = fn.add_input(acc, count_values(pa.array(values)))
    return fn.extract_output(acc)


def test_a_rerun_of_a_combine_writes_the_same_spill_names_and_bytes(tmp_path):
    batches = [["a", "b", "a"], ["c", "d"], ["a", "e", "f"]]
    first, second = str(tmp_path / "one"), str(tmp_path / "two")
    out1, out2 = _combine(first, batches), _combine(second, batches)
    names = _spill_files(first)
    assert names and names == _spill_files(second)  # uuid4 names differed on every run
    for name in names:
        with open(os.path.join(first, name), "rb") as a, open(os.path.join(second, name),
                                                               "rb") as b:
            assert a.read() == b.read()
    expected = {"a": 3, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1}
    for out in (out1, out2):
        assert dict(zip(out.column("token").to_pylist(), out.column("count").to_pylist())) \
            == expected


def test_a_content_named_spill_reads_back_and_its_name_is_its_bytes_hash(tmp_path):
    import hashlib

    table = pa.table({"token": ["x", "y"], "count": pa.array([2, 1], pa.int64())})
    ref = spill.spill_by_content(table, str(tmp_path))
    with open(ref.path, "rb") as f:
        body = f.read()
    assert os.path.basename(ref.path) == hashlib.sha1(body).hexdigest() + ".arrow"
    assert spill.materialize(ref).equals(table) and ref.rows == 2
