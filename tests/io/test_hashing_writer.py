"""fs.HashingWriter: the sha256 and size it reports are those of the file it wrote.

The oracle is fs.sha256_of (the file read back) and hashlib on the bytes themselves.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from beam_prep.io import filesystem as fs


def test_create_hashes_what_lands_in_the_file(tmp_path):
    path = str(tmp_path / "sub" / "dir" / "f.bin")  # parent folders are made
    chunks = [b"abc", b"", memoryview(b"de"), bytearray(b"f"), np.arange(3, dtype=np.int64)]
    with fs.HashingWriter.create(path) as w:
        sizes = [w.write(c) for c in chunks]
    assert sizes == [3, 0, 2, 1, 24]
    body = b"abcdef" + np.arange(3, dtype=np.int64).tobytes()
    with open(path, "rb") as f:
        assert f.read() == body
    assert w.closed and w.close() == fs.sha256_of(path) == (hashlib.sha256(body).hexdigest(), 30)


def test_a_pyarrow_writer_through_it(tmp_path):
    path = str(tmp_path / "t.parquet")
    table = pa.table({"x": list(range(100)), "s": [str(i) * 3 for i in range(100)]})
    w = fs.HashingWriter.create(path)
    with pq.ParquetWriter(w, table.schema) as pw:
        pw.write_table(table)
        assert w.tell() == w.size > 0
    assert w.close() == fs.sha256_of(path)
    assert pq.read_table(path).equals(table)


def test_a_target_it_does_not_own_stays_open():
    target = io.BytesIO()
    w = fs.HashingWriter(target)
    w.write(b"x")
    assert w.close() == (hashlib.sha256(b"x").hexdigest(), 1)
    assert not target.closed and target.getvalue() == b"x"
