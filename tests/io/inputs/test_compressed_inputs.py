"""Compressed CSV / JSONL / LETOR inputs: a truncated or corrupt stream fails naming the file.

Beam's decompressing reader returns a cut gzip stream as if it had ended: before
``beam_prep.io.inputs.compressed``
the analysis, the transform job and make-elwc succeeded on part of
the file. A gzip JSONL file could not be analyzed at all (the column check iterated Beam's
CompressedFile, which is not iterable).
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random

import pytest

from beam_prep.errors import InputError
from beam_prep.io.inputs import compressed
from beam_prep.io.inputs.readers import available_columns, check_columns, list_splits, read_split

ROWS = 20000


def _csv_rows() -> bytes:
    rng = random.Random(0)  # random digits: the stream is long, so half of it holds rows
    return b"a,b\n" + b"".join(b"%d,x%d\n" % (rng.randrange(10**9), i) for i in range(ROWS))


def _read_all(path: str, fmt: str, columns: dict[str, str]) -> int:
    seen = 0
    for split in list_splits(path, fmt):
        for r in read_split(split, columns):
            seen += r.batch.num_rows
    return seen


@pytest.mark.parametrize("ending,compress", [(".gz", gzip.compress), (".bz2", bz2.compress),
                                             (".xz", lzma.compress)])
def test_a_truncated_compressed_csv_fails_naming_the_file(tmp_path, ending, compress):
    data = compress(_csv_rows())
    whole, cut = tmp_path / f"whole.csv{ending}", tmp_path / f"cut.csv{ending}"
    whole.write_bytes(data)
    cut.write_bytes(data[:len(data) // 2])
    assert _read_all(str(whole), "csv", {"a": "int64", "b": "string"}) == ROWS
    with pytest.raises(InputError, match=r"cut\.csv.*truncated.*re-create the file"):
        _read_all(str(cut), "csv", {"a": "int64", "b": "string"})


def test_a_corrupt_gzip_csv_fails_naming_the_file(tmp_path):
    data = bytearray(gzip.compress(_csv_rows()))
    data[len(data) // 2] ^= 0xFF  # a flipped byte in the deflate data (or the CRC check)
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"bad\.csv\.gz.*(corrupt|truncated)"):
        _read_all(str(bad), "csv", {"a": "int64", "b": "string"})


def test_gzip_jsonl_is_analyzable_and_a_truncated_one_fails(tmp_path):
    lines = b"".join(json.dumps({"a": i, "b": f"x{i}"}).encode() + b"\n" for i in range(ROWS))
    ok, cut = tmp_path / "ok.jsonl.gz", tmp_path / "cut.jsonl.gz"
    ok.write_bytes(gzip.compress(lines))
    cut.write_bytes(gzip.compress(lines)[:-20])
    # The column check of `analyze` read the first lines by iterating the file: TypeError.
    assert available_columns(str(ok), "jsonl") == ["a", "b"]
    assert check_columns([str(ok)], "jsonl", {"a": "f"}) == []
    assert _read_all(str(ok), "jsonl", {"a": "int64", "b": "string"}) == ROWS
    with pytest.raises(InputError, match=r"cut\.jsonl\.gz.*truncated"):
        _read_all(str(cut), "jsonl", {"a": "int64", "b": "string"})


def test_analyze_of_a_truncated_gzip_csv_fails_and_writes_no_manifest(tmp_path):
    from beam_prep.pipelines import analyze

    data = gzip.compress(_csv_rows())
    (tmp_path / "cut.csv.gz").write_bytes(data[:len(data) // 2])
    spec = tmp_path / "spec.yaml"
    spec.write_text("version: 1\nfeatures:\n  - {name: b, kind: string}\n"
                    "  - {name: a, kind: numeric}\n")
    out = tmp_path / "out"
    with pytest.raises(InputError, match="truncated"):
        analyze.run(["--spec", str(spec), "--input", str(tmp_path / "cut.csv.gz"),
                     "--output", str(out), "--no_report", "--quiet"])
    assert not (out / "manifest.json").exists()


def test_make_elwc_of_a_truncated_gzip_csv_fails(tmp_path):
    from beam_prep.pipelines import make_elwc

    rng = random.Random(1)
    text = "qid,label,f1\n" + "".join(f"{i // 10},{rng.randint(0, 3)},{rng.random()}\n"
                                      for i in range(ROWS))
    data = gzip.compress(text.encode())
    (tmp_path / "cut.csv.gz").write_bytes(data[:len(data) // 2])
    out = tmp_path / "out"
    with pytest.raises(InputError, match=r"cut\.csv\.gz.*truncated"):
        make_elwc.run(["--input", str(tmp_path / "cut.csv.gz"), "--input_format", "csv",
                       "--output", str(out), "--no_report", "--quiet"])
    assert not (out / "stats.json").exists()


def test_uncompressed_files_are_opened_by_beam_as_before(tmp_path):
    plain = tmp_path / "a.csv"
    plain.write_bytes(b"a,b\n1,x\n")
    with compressed.open_input(str(plain)) as f:
        assert not isinstance(f, compressed.CheckedStream) and f.read() == b"a,b\n1,x\n"
