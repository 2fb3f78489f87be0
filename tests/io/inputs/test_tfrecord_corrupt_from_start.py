"""A TFRecord file corrupt from its first record is a corrupt tail starting at offset 0.

With ``--skip_corrupt_tail`` the whole file is one rejected row (reason ``corrupt_tail``)
recorded in the manifest's ``input.skipped_tails``, as for a tail later in a file; without
it the job fails naming the file and byte offset 0. The column check before the pipeline
(which samples the first records) must not refuse such a file on its own.

Oracles: files written by the project's own writer are avoided; records are framed here
by hand (struct + google-crc32c), and offsets / byte counts are file sizes.
"""

from __future__ import annotations

import json
import struct

import google_crc32c
import pytest
from tensorflow.core.example import example_pb2

from beam_prep.errors import InputError
from beam_prep.io.inputs.readers import available_columns
from beam_prep.io.inputs.tfrecord_reader import first_records, iter_tfrecord

SPEC = "features:\n  - {name: x, kind: numeric}\n"


def _masked(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _record(payload: bytes) -> bytes:
    length = struct.pack("<Q", len(payload))
    return (length + struct.pack("<I", _masked(length)) + payload
            + struct.pack("<I", _masked(payload)))


def _example(value: int) -> bytes:
    ex = example_pb2.Example()
    ex.features.feature["x"].int64_list.value.append(value)
    return ex.SerializeToString()


def _files(tmp_path):
    good = tmp_path / "b.tfrecord"
    good.write_bytes(b"".join(_record(_example(v)) for v in (1, 2, 3)))
    bad = bytearray(b"".join(_record(_example(v)) for v in (7, 8)))
    bad[0:8] = struct.pack("<Q", 40)  # the first length prefix no longer matches its CRC
    broken = tmp_path / "a.tfrecord"  # sorted first: the column check samples it first
    broken.write_bytes(bytes(bad))
    return good, broken, len(bad)


def test_reader_skips_a_file_corrupt_from_byte_0_as_one_tail(tmp_path):
    _, broken, size = _files(tmp_path)
    with open(broken, "rb") as f:
        with pytest.raises(InputError, match=r"byte offset 0 \(record 1\)"):
            list(iter_tfrecord(f, ["x"], batch_size=10, source=str(broken)))
    with open(broken, "rb") as f:
        batches = list(iter_tfrecord(f, ["x"], batch_size=10, source=str(broken),
                                     skip_corrupt_tail=True))
    rejected = [r for b in batches for r in b.rejected]
    assert sum(b.batch.num_rows for b in batches) == 0
    assert [(r.row, r.reason) for r in rejected] == [(1, "corrupt_tail")]
    assert json.loads(rejected[0].record) == {"file": str(broken), "offset": 0, "bytes": size}


def test_column_sampling_does_not_refuse_a_file_corrupt_from_the_start(tmp_path):
    _, broken, _ = _files(tmp_path)
    with open(broken, "rb") as f:
        assert first_records(f, str(broken), 10) == []
    assert available_columns(str(broken), "tfrecord") == []


def test_analyze_skips_a_file_corrupt_from_the_start(tmp_path):
    from beam_prep.pipelines import analyze

    good, broken, size = _files(tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC)
    code = analyze.main(["--spec", str(tmp_path / "spec.yaml"), "--input",
                         str(tmp_path / "*.tfrecord"), "--output", str(tmp_path / "out"),
                         "--skip_corrupt_tail", "--max_bad_fraction", "0.5", "--quiet",
                         "--no_report"])
    assert code == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    inp = manifest["input"]
    assert inp["skipped_tails"] == [{"file": str(broken), "offset": 0, "bytes": size}]
    assert (inp["rows_read"], inp["rows_rejected"]) == (4, 1)  # 3 records + the tail
    stats = manifest["features"]["x"]["stats"]
    assert (stats["count"], stats["mean"], stats["min"], stats["max"]) == (3, 2.0, 1.0, 3.0)


def test_analyze_without_the_flag_fails_naming_the_file_and_offset_0(tmp_path, capsys):
    from beam_prep import cli

    _, broken, _ = _files(tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC)
    code = cli.main(["analyze", "--spec", str(tmp_path / "spec.yaml"), "--input", str(broken),
                         "--output", str(tmp_path / "out"), "--quiet", "--no_report"])
    assert code == 1
    err = capsys.readouterr().err
    assert str(broken) in err and "byte offset 0 (record 1)" in err, err
    assert not (tmp_path / "out" / "manifest.json").exists()
