"""make-elwc's input-size estimate on compressed files is close to the real uncompressed size.

Oracle: the bundled LETOR sample's own size on disk (the uncompressed bytes), compressed here
with Python's gzip (levels 6, the ``gzip`` tool's default, and 9), bz2 and lzma. The estimate
may err high (more, smaller shards: harmless) but not low by more than 10% (bigger shards than
intended: more memory per worker). Before the per-suffix ratios, every compressed file counted
4x: gzip-6 came out 15% low, bz2 56% low.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os

import pytest

from beam_prep.ranking.data.sharding import estimated_input_bytes

LETOR = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "data", "letor",
                     "lightgbm", "rank.train")


@pytest.mark.parametrize("suffix, compress", [
    (".gz", lambda d: gzip.compress(d, compresslevel=6, mtime=0)),
    (".gz", lambda d: gzip.compress(d, compresslevel=9, mtime=0)),
    (".bz2", bz2.compress),
    (".xz", lzma.compress),
])
def test_estimate_of_compressed_letor_is_near_its_uncompressed_size(tmp_path, suffix, compress):
    data = open(LETOR, "rb").read()
    path = tmp_path / ("rank.train" + suffix)
    path.write_bytes(compress(data))
    estimate = estimated_input_bytes([str(tmp_path / "*")], [str(path)])
    assert 0.9 <= estimate / len(data) <= 1.25, (estimate, len(data))


def test_uncompressed_files_count_their_size(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"x" * 1000)
    (tmp_path / "b.csv").write_bytes(b"y" * 24)
    paths = [str(tmp_path / "a.txt"), str(tmp_path / "b.csv")]
    assert estimated_input_bytes([str(tmp_path / "*")], paths) == 1024
