"""TFRecord integrity: CRC-32C, corrupt framing, truncated gzip, and the analyze job's answer.

Oracles are independent of the code under test: the CRC-32C check values of RFC 3720
(B.4), the google-crc32c package (a separate implementation), files written by
TensorFlow's ``TFRecordWriter``, byte offsets summed from the record sizes, and zlib for
what a truncated gzip stream still holds.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import struct
import zlib

import google_crc32c
import pytest
import tensorflow as tf
from tensorflow.core.example import example_pb2

from beam_prep.errors import InputError
from beam_prep.io import tfrecord_framing
from beam_prep.io.inputs import example_decoder
from beam_prep.io.inputs.readers import Split, read_split
from beam_prep.io.inputs.tfrecord_reader import iter_tfrecord
from beam_prep.io.tfrecord_framing import crc32c, frame

has_module = pytest.mark.skipif(
    example_decoder._native is None and os.environ.get("BEAM_PREP_REQUIRE_NATIVE") != "1",
    reason="no native module")

CHECK_VALUES = [  # RFC 3720 B.4, and the usual "123456789" check value
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (b"", 0),
]


def test_native_extension_is_built_when_required():
    """`make test` sets BEAM_PREP_REQUIRE_NATIVE=1: a missing C part fails CI, not skips."""
    if os.environ.get("BEAM_PREP_REQUIRE_NATIVE") != "1":
        pytest.skip("BEAM_PREP_REQUIRE_NATIVE is not set")
    assert example_decoder._native is not None, "the C extension _tfexample was not built"
    assert example_decoder.native_available(), "BEAM_PREP_NO_NATIVE disables the C part"


@pytest.mark.parametrize("data,want", CHECK_VALUES)
def test_crc32c_check_values(data, want, monkeypatch):
    assert google_crc32c.value(data) == want  # the oracle agrees with the RFC
    if tfrecord_framing._native is not None:
        assert tfrecord_framing._native.crc32c(data) == want
        assert tfrecord_framing._native.crc32c(data, 0, True) == want  # slice-by-8
    monkeypatch.setattr(tfrecord_framing, "_native", None)
    assert crc32c(data) == want


@has_module
def test_native_crc32c_every_length_and_alignment():
    native = tfrecord_framing._native
    rng = random.Random(3)
    block = rng.randbytes(700)
    for start in range(9):
        for n in list(range(40)) + [63, 64, 65, 255, 256, 257, 600]:
            view = memoryview(block)[start:start + n]
            want = google_crc32c.value(bytes(view))
            assert native.crc32c(view) == native.crc32c(view, 0, True) == want, (start, n)
    # continuing a CRC over two pieces gives the CRC of the whole
    assert native.crc32c(block[300:], native.crc32c(block[:300])) == google_crc32c.value(block)


def _tf_file(path, payloads):
    with tf.io.TFRecordWriter(str(path)) as w:
        for p in payloads:
            w.write(p)
    return path


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("gzip", [False, True])
def test_writer_bytes_are_tensorflows_and_the_reader_walks_them(tmp_path, native, gzip,
                                                                 monkeypatch):
    """One definition of the framing serves both sides: what write_tfrecords and
    frame_record write is byte for byte what tf.io.TFRecordWriter writes, and frame()
    walks it back to the payloads."""
    if native and tfrecord_framing._native is None:
        pytest.skip("no native module")
    if not native:
        monkeypatch.setattr(tfrecord_framing, "_native", None)
    rng = random.Random(5)
    payloads = [b"", b"a", rng.randbytes(1000), rng.randbytes(7)]
    want = _tf_file(tmp_path / "tf.tfrecord", payloads).read_bytes()
    assert b"".join(tfrecord_framing.frame_record(p) for p in payloads) == want
    ours = tmp_path / ("ours.tfrecord" + (".gz" if gzip else ""))
    assert tfrecord_framing.write_tfrecords(str(ours), payloads, gzip=gzip) == len(payloads)
    data = zlib.decompress(ours.read_bytes(), 31) if gzip else ours.read_bytes()
    assert data == want
    walked = frame(data)
    assert (walked.used, walked.corrupt, walked.bad_data.tolist()) == (len(data), False, [])
    assert [data[s:s + n] for s, n in zip(walked.starts, walked.lengths)] == payloads


def _example(value: int) -> bytes:
    ex = example_pb2.Example()
    ex.features.feature["x"].int64_list.value.append(value)
    ex.features.feature["s"].bytes_list.value.append(b"v%d" % value)
    return ex.SerializeToString()


def _offsets(payloads) -> list[int]:
    """Byte offset of every record header: 8 + 4 + payload + 4 bytes per record."""
    out, pos = [], 0
    for p in payloads:
        out.append(pos)
        pos += 16 + len(p)
    return out + [pos]


@pytest.mark.parametrize("native", [True, False])
def test_every_bit_flip_in_a_tf_file_is_caught(tmp_path, native, monkeypatch):
    if native and tfrecord_framing._native is None:
        pytest.skip("no native module")
    if not native:
        monkeypatch.setattr(tfrecord_framing, "_native", None)
    rng = random.Random(1)
    payloads = [rng.randbytes(rng.choice((0, 3, 40))) for _ in range(12)]
    data = _tf_file(tmp_path / "t.tfrecord", payloads).read_bytes()
    offsets = _offsets(payloads)
    clean = frame(data)
    assert (clean.used, clean.corrupt, clean.bad_data.tolist()) == (len(data), False, [])
    assert clean.lengths.tolist() == [len(p) for p in payloads]
    for pos in range(len(data)):
        broken = bytearray(data)
        broken[pos] ^= 1 << (pos % 8)
        got = frame(bytes(broken))
        k = max(i for i in range(len(payloads)) if offsets[i] <= pos)  # record hit
        if pos - offsets[k] < 12:  # length or length CRC: the framing stops there
            assert (got.used, got.corrupt, len(got.starts)) == (offsets[k], True, k), pos
        else:  # payload or payload CRC: that record alone is flagged
            assert (got.used, got.corrupt, got.bad_data.tolist()) == (len(data), False, [k])
            assert frame(bytes(broken), check_data=False).bad_data.tolist() == []


def _read(path, **kw):
    with open(path, "rb") as f:
        batches = list(iter_tfrecord(f, ["x"], batch_size=100, source=str(path), **kw))
    rows = [v for b in batches for v in b.batch.column("x").to_pylist()]
    return rows, [r for b in batches for r in b.rejected]


def _issue13_file(tmp_path, n=1000, bad=902):
    """n records; the length prefix of record `bad` (1-based) overwritten with 40."""
    payloads = [_example(i) for i in range(n)]
    path = _tf_file(tmp_path / "issue13.tfrecord", payloads)
    data = bytearray(path.read_bytes())
    offset = _offsets(payloads)[bad - 1]
    data[offset:offset + 8] = struct.pack("<Q", 40)
    path.write_bytes(bytes(data))
    return path, offset, len(data) - offset


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 4096])
@pytest.mark.parametrize("native", ["1", "0"])  # BEAM_PREP_NO_NATIVE
def test_issue13_corrupt_length_prefix_fails_or_is_skipped(tmp_path, chunk_bytes, native,
                                                           monkeypatch):
    """Issue 13 item 3: a corrupt length prefix used to drop the rest of the file silently."""
    monkeypatch.setenv("BEAM_PREP_NO_NATIVE", native)
    path, offset, rest = _issue13_file(tmp_path)
    with pytest.raises(InputError) as e:
        _read(path, chunk_bytes=chunk_bytes)
    message = str(e.value)
    assert str(path) in message and f"byte offset {offset} (record 902)" in message, message
    assert f"remaining {rest} bytes" in message and "--skip_corrupt_tail" in message
    rows, rejected = _read(path, chunk_bytes=chunk_bytes, skip_corrupt_tail=True)
    assert rows == list(range(901))
    assert [(r.row, r.reason) for r in rejected] == [(902, "corrupt_tail")]
    assert json.loads(rejected[0].record) == {"file": str(path), "offset": offset,
                                              "bytes": rest}


def test_payload_crc_mismatch_rejects_that_record_only(tmp_path):
    payloads = [_example(i) for i in range(50)]
    path = _tf_file(tmp_path / "t.tfrecord", payloads)
    data = bytearray(path.read_bytes())
    at = _offsets(payloads)[6] + 12 + payloads[6].index(b"v6") + 1  # record 7's "v6"
    assert data[at:at + 1] == b"6"
    data[at] = ord("9")  # still a valid tf.Example, with s = "v9"
    path.write_bytes(bytes(data))
    rows, rejected = _read(path)
    assert rows == [i for i in range(50) if i != 6]
    assert [(r.row, r.reason) for r in rejected] == [(7, "malformed_record")]
    assert "CRC" in rejected[0].detail
    rows, rejected = _read(path, check_data_crc=False)  # unchecked: the flipped record reads
    assert rows == list(range(50)) and rejected == []


def _gzip_case(tmp_path, cut):
    payloads = [_example(i) for i in range(300)]
    data = _tf_file(tmp_path / "d.tfrecord", payloads).read_bytes()
    packed = gzip.compress(data)
    path = tmp_path / "d.tfrecord.gz"
    path.write_bytes(packed[:cut(len(packed))])
    # what zlib can still decompress, and the whole records in it
    held = len(zlib.decompressobj(31).decompress(path.read_bytes()))
    whole = [o for o in _offsets(payloads) if o <= held]
    return path, len(whole) - 1, whole[-1], held - whole[-1]


@pytest.mark.parametrize("cut", [lambda n: n // 3, lambda n: n - 9, lambda n: n - 1],
                         ids=["third", "in_last_block", "in_trailer"])
def test_truncated_gzip_fails_or_is_skipped(tmp_path, cut):
    path, records, offset, rest = _gzip_case(tmp_path, cut)
    columns = {"x": "int64"}
    split = Split(str(path), "tfrecord")
    with pytest.raises(InputError, match=f"gzip stream is truncated.* byte offset {offset} "):
        list(read_split(split, columns))
    results = list(read_split(split, columns, skip_corrupt_tail=True))
    rows = [v for r in results for v in r.batch.column("x").to_pylist()]
    assert rows == list(range(records))
    rejected = [r for res in results for r in res.rejected]
    assert [(r.row, r.reason) for r in rejected] == [(records + 1, "corrupt_tail")]
    assert json.loads(rejected[0].record) == {"file": str(path), "offset": offset,
                                              "bytes": rest}
    assert sum(r.rows_seen for r in results) == records + 1


def test_gzip_of_several_members_and_trailing_garbage(tmp_path):
    payloads = [_example(i) for i in range(20)]
    data = _tf_file(tmp_path / "d.tfrecord", payloads).read_bytes()
    half = _offsets(payloads)[10]
    path = tmp_path / "m.tfrecord.gz"
    path.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]))
    results = list(read_split(Split(str(path), "tfrecord"), {"x": "int64"}))
    assert [v for r in results for v in r.batch.column("x").to_pylist()] == list(range(20))
    path.write_bytes(gzip.compress(data) + b"not gzip")
    with pytest.raises(InputError, match="gzip stream is corrupt"):
        list(read_split(Split(str(path), "tfrecord"), {"x": "int64"}))


# --- through the analyze job -------------------------------------------------------------

SPEC = "features:\n  - {name: x, kind: numeric}\n"


def test_analyze_job_fails_on_corrupt_framing_and_writes_no_manifest(tmp_path, capsys):
    from beam_prep import cli

    path, offset, _ = _issue13_file(tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC)
    out = tmp_path / "out"
    code = cli.main(["analyze", "--spec", str(tmp_path / "spec.yaml"), "--input", str(path),
                     "--output", str(out), "--quiet"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"byte offset {offset} (record 902)" in err and str(path) in err, err
    assert not (out / "manifest.json").exists()


def test_analyze_job_skips_corrupt_tail_and_reports_it(tmp_path):
    from beam_prep.pipelines import analyze

    path, offset, rest = _issue13_file(tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC)
    base = ["--spec", str(tmp_path / "spec.yaml"), "--input", str(path), "--skip_corrupt_tail"]
    analyze.run([*base, "--output", str(tmp_path / "out")])
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    inp = manifest["input"]
    assert inp["skipped_tails"] == [{"file": str(path), "offset": offset, "bytes": rest}]
    assert (inp["rows_read"], inp["rows_rejected"]) == (902, 1)
    assert inp["rejected_by_reason"] == {"corrupt_tail": 1}
    assert manifest["features"]["x"]["stats"]["count"] == 901
    assert manifest["features"]["x"]["stats"]["max"] == 900
    # the skipped remainder counts against --max_bad_fraction
    with pytest.raises(Exception, match="1 of 902 rows"):
        analyze.run([*base, "--output", str(tmp_path / "strict"), "--max_bad_fraction", "0"])
    assert not (tmp_path / "strict" / "manifest.json").exists()
