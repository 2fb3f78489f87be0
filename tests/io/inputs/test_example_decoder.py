"""Native tf.Example decoding and TFRecord framing, checked against independent references.

Expected values come from tfx-bsl's ``ExamplesToRecordBatchDecoder`` (which the native
path must agree with), from protobuf (``example_pb2``) or from how the input was built,
never from the code under test. Wire bytes are built by hand where protobuf's serializer
would not produce them. (The divergences this file first found as strict xfails are fixed;
their tests now pass as plain tests.)
"""

from __future__ import annotations

import gzip
import os
import random
import struct

import google_crc32c
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.example import example_pb2
from tfx_bsl.coders import example_coder

from beam_prep.errors import InputError
from beam_prep.io import tfrecord_framing
from beam_prep.io.inputs import example_decoder
from beam_prep.io.inputs.example_decoder import ExampleDecoder, native_available
from beam_prep.io.inputs.readers import Split, read_split
from beam_prep.io.inputs.tfrecord_reader import iter_tfrecord
from beam_prep.io.tfrecord_framing import frame

# BEAM_PREP_REQUIRE_NATIVE=1 (set by `make test`): a missing C part fails these tests.
REQUIRED = os.environ.get("BEAM_PREP_REQUIRE_NATIVE") == "1"
needs_native = pytest.mark.skipif(not native_available() and not REQUIRED,
                                  reason="native decoder not built")
has_module = pytest.mark.skipif(example_decoder._native is None and not REQUIRED,
                                reason="no native module")
MALFORMED = "malformed_record"


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # a negative int64 is a 10-byte varint
    out = b""
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def _ld(tag: int, payload: bytes) -> bytes:  # length-delimited field
    return _varint(tag) + _varint(len(payload)) + payload


def _entry(key: bytes, feature: bytes) -> bytes:  # one Features.feature map entry
    return _ld(0x0A, _ld(0x0A, key) + _ld(0x12, feature))


def _example(*entries: bytes) -> bytes:
    return _ld(0x0A, b"".join(entries))


_f32 = struct.Struct("<f").pack


def _ints(*values: int) -> bytes:  # Feature{int64_list{packed values}}
    return _ld(0x1A, _ld(0x0A, b"".join(_varint(v) for v in values)))


BYTES_XY = _ld(0x0A, _ld(0x0A, b"xy"))  # Feature{bytes_list{value: "xy"}}


TFX = example_coder.ExamplesToRecordBatchDecoder()  # the reference decoder


def _tfx(records) -> pa.RecordBatch:
    return TFX.DecodeBatch(list(records))


def _ref_column(rb: pa.RecordBatch, name: str) -> pa.Array:
    return rb.column(name) if name in rb.schema.names else pa.nulls(rb.num_rows)


def _decode(records, columns, **kw):
    """Decodes records laid out in one buffer, with junk bytes between them."""
    buf, starts = bytearray(), []
    for r in records:
        buf += b"\xee\x0a\x07"
        starts.append(len(buf))
        buf += r
    return ExampleDecoder(columns, **kw).decode(bytes(buf), starts, [len(r) for r in records])


def _norm(v):
    """A Python value with floats as their bits (NaN == NaN, -0.0 != 0.0)."""
    if isinstance(v, float):
        return struct.pack("<d", v)
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return {k: _norm(x) for k, x in v.items()} if isinstance(v, dict) else v


def _assert_same_column(got: pa.Array, want: pa.Array, name: str) -> None:
    assert got.type == want.type, name
    assert _norm(got.to_pylist()) == _norm(want.to_pylist()), name


def _as_lists(col: pa.Array) -> list:
    """Rows of a column; a flat one (``flat_scalars``, one value per row) as 1-lists."""
    rows = col.to_pylist()
    if pa.types.is_large_list(col.type) or pa.types.is_null(col.type):
        return rows
    return [None if v is None else [v] for v in rows]


def _expected(records, columns):
    """{record number: row} and rejections, from tfx-bsl one record at a time."""
    rows, rejected = {}, []
    for n, rec in enumerate(records, 1):
        try:
            rb = _tfx([rec])
        except RuntimeError:
            rejected.append((n, MALFORMED))
            continue
        rows[n] = _norm({c: _ref_column(rb, c)[0].as_py() for c in columns})
    return rows, rejected


def _read(path, columns, *, batch_size=64, **kw):
    """iter_tfrecord → ({record number: row}, rejections, row numbers in output order)."""
    with open(path, "rb") as f:  # keep every batch: none may alias the reused chunk buffer
        batches = list(iter_tfrecord(f, columns, batch_size=batch_size, source=str(path), **kw))
    rows, rejected, order = {}, [], []
    for b in batches:
        numbers = b.row_numbers.to_pylist()
        assert b.batch.num_rows == len(numbers) and b.batch.schema.names == list(columns)
        assert not numbers or b.first_row == numbers[0]
        values = [_as_lists(b.batch.column(c)) for c in columns]
        rows.update((n, _norm(dict(zip(columns, v)))) for n, *v in zip(numbers, *values))
        rejected += [(r.row, r.reason) for r in b.rejected]
        order += numbers
    assert len(order) == len(set(order)) == len(rows)
    return rows, rejected, order


def _write(path, payloads):
    with tf.io.TFRecordWriter(str(path)) as w:
        for p in payloads:
            w.write(p)
    return path


# Requested keys of 1, 8, 9, 17 and 40 bytes, a non-ASCII one and three with one value
# whenever present (ONE); then unrequested look-alikes.
KINDS = {"k": "bytes", "int64key": "int64", "floatkey9": "float", "bytes_key_17_long": "bytes",
         "int64_" + "x" * 34: "int64", "clé_日本_f": "float",
         "one_b": "bytes", "one_i": "int64", "one_f": "float",
         "kk": "bytes", "u": "int64", "floatkey8": "float", "int64ke": "bytes"}
ONE = {"one_b", "one_i", "one_f"}
COLUMNS = [*list(KINDS)[:9], "never_present"]
INTS = (0, 1, -1, 127, 128, 2**63 - 1, -2**63)
FLOATS = (0.0, -0.0, 1.0, -1.5, float("inf"), float("-inf"), float("nan"), 1e-45, 3.4e38)


def _random_value(rng: random.Random, kind: str):
    if kind == "bytes":
        return rng.randbytes(rng.choice((0, 1, 12, 13, 127, 128, 300)))
    if kind == "int64":
        return rng.choice(INTS) if rng.random() < 0.5 else rng.getrandbits(64) - 2**63
    return rng.choice(FLOATS) if rng.random() < 0.4 else struct.unpack("<f", rng.randbytes(4))[0]


def _random_example(rng: random.Random) -> bytes:
    ex = example_pb2.Example()
    for key, kind in KINDS.items():
        p = rng.random()
        if p < 0.2:
            continue  # absent
        feature = ex.features.feature[key]
        if p < 0.3:
            feature.SetInParent()  # empty Feature: no kind set
            continue
        values = getattr(feature, kind + "_list")
        values.SetInParent()  # an empty list unless values follow
        n = 1 if key in ONE else rng.choice((0, 1, 1, 2, 5, 200 if kind == "float" else 3))
        values.value.extend(_random_value(rng, kind) for _ in range(n))
    return ex.SerializeToString()


@needs_native
@pytest.mark.parametrize("seed", range(4))
def test_random_canonical_examples_match_tfx_bsl(seed):
    rng = random.Random(seed)
    records = [_random_example(rng) for _ in range(80)] + [b"", _example()]
    rng.shuffle(records)
    want = _tfx(records)
    assert None in want.column("k").to_pylist() and [] in want.column("k").to_pylist()
    out = _decode(records, COLUMNS)
    assert out.fallback.tolist() == [] and out.decoded.tolist() == list(range(len(records)))
    assert out.batch.schema.names == COLUMNS
    for name in COLUMNS:
        _assert_same_column(out.batch.column(name), _ref_column(want, name), name)
    assert out.batch.column("never_present").null_count == len(records)
    # flat_scalars: flat exactly when every row that has the feature holds one value
    flat = _decode(records, COLUMNS, flat_scalars=True)
    assert flat.fallback.tolist() == []
    for name in COLUMNS:
        got, ref = flat.batch.column(name), _ref_column(want, name)
        present = ref.null_count < len(ref)
        one = present and set(pc.list_value_length(ref).drop_null().to_pylist()) == {1}
        assert got.type == (ref.type.value_type if one else ref.type), name
        assert _norm(_as_lists(got)) == _norm(ref.to_pylist()), name
    assert not any(pa.types.is_large_list(flat.batch.column(c).type) for c in ONE)


ACCEPTED = {  # valid protobuf that serializers do not write; the native path decodes it
    "unpacked_float": _ld(0x12, b"".join(b"\x0d" + _f32(x) for x in (1.5, float("nan")))),
    "packed_then_unpacked_float": _ld(0x12, _ld(0x0A, _f32(2.0) + _f32(-0.0))
                                      + b"\x0d" + _f32(float("inf"))),
    "unpacked_int64": _ld(0x1A, b"\x08" + _varint(-1) + b"\x08" + _varint(300)),
    "packed_then_unpacked_int64": _ld(0x1A, _ld(0x0A, _varint(7) + _varint(2**63 - 1))
                                      + b"\x08" + _varint(-2**63)),
}
ACCEPTED = {k: _example(_entry(b"a", v)) for k, v in ACCEPTED.items()} | {
    "map_entry_value_first": _example(_ld(0x0A, _ld(0x12, BYTES_XY) + _ld(0x0A, b"a"))),
    "map_entry_without_value": _example(_ld(0x0A, _ld(0x0A, b"a"))),  # → null
    "map_entry_without_key": _example(_ld(0x0A, _ld(0x12, BYTES_XY))),  # key ""
}


@needs_native
@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_noncanonical_records_match_tfx_bsl(case):
    records = [ACCEPTED[case], _example(), ACCEPTED[case]]
    out = _decode(records, ["a", "b"])
    assert out.fallback.tolist() == []
    for name in ("a", "b"):
        _assert_same_column(out.batch.column(name), _ref_column(_tfx(records), name), name)
    if case == "map_entry_without_value":
        assert out.batch.column("a").null_count == 3


FALLBACK = {  # records the native path must leave to tfx-bsl
    "key_twice": _example(_entry(b"a", _ints(1)), _entry(b"a", _ints(2, 3))),
    "value_twice_in_entry": _example(_ld(0x0A, _ld(0x0A, b"a") + _ld(0x12, _ints(1))
                                         + _ld(0x12, _ints(4)))),
    "features_twice": _example(_entry(b"a", _ints(7))) + _example(_entry(b"b", BYTES_XY)),
    "unknown_field_after": _example(_entry(b"a", _ints(7))) + b"\x10\x05",
    "unknown_field_before": _ld(0x2A, b"zz") + _example(_entry(b"a", _ints(7))),
    "unknown_field_in_feature": _example(_entry(b"a", _ints(7) + b"\x20\x01")),
    "unknown_field_in_list": _example(_entry(b"a", _ld(0x1A, _ld(0x0A, b"\x07") + b"\x10\x01"))),
    "varint_10th_byte_7f": _example(_entry(b"a", _ld(0x1A, _ld(0x0A, b"\xff" * 9 + b"\x7f")))),
    "float_list_of_3_bytes": _example(_entry(b"b", _ld(0x12, _ld(0x0A, b"\0\0\x80")))),
    "truncated": _example(_entry(b"a", _ints(7)))[:-1],
    "garbage": b"\x07garbage",
}


@needs_native
@pytest.mark.parametrize("case", sorted(FALLBACK))
def test_noncanonical_records_fall_back_to_tfx_bsl(case, tmp_path):
    records = [_example(_entry(b"a", _ints(1))), FALLBACK[case], _example(_entry(b"a", _ints(2)))]
    out = _decode(records, ["a", "b"])
    assert out.fallback.tolist() == [1] and out.decoded.tolist() == [0, 2]
    want_rows, want_rejected = _expected(records, ["a", "b"])
    rows, rejected, _ = _read(_write(tmp_path / "t.tfrecord", records), ["a", "b"])
    assert rows == want_rows and rejected == want_rejected
    try:  # rejected exactly when protobuf cannot parse the record
        example_pb2.Example.FromString(FALLBACK[case])
        assert 2 in rows
    except DecodeError:
        assert rejected == [(2, MALFORMED)]
    if case == "key_twice":  # protobuf map semantics: the last entry wins
        assert rows[2]["a"] == [2, 3]


def test_mixed_value_kinds_in_one_batch_are_an_input_error(tmp_path, monkeypatch):
    floats = _example(_entry(b"a", _ld(0x12, _ld(0x0A, _f32(1.0)))))
    records = [_example(_entry(b"a", _ints(5))), floats, _example(_entry(b"a", _ints(6)))]
    if native_available():  # the native path leaves the whole batch to tfx-bsl ...
        out = _decode(records, ["a"])
        assert out.fallback.tolist() == [0, 1, 2] and out.decoded.tolist() == []
    with pytest.raises(RuntimeError, match="wrong type"):  # ... which refuses it
        _tfx(records)
    path = _write(tmp_path / "t.tfrecord", records)
    for env in ("1", "0"):  # without and with the native decoder
        monkeypatch.setenv("BEAM_PREP_NO_NATIVE", env)
        with pytest.raises(InputError) as e:
            _read(path, ["a"], batch_size=10)
        message = str(e.value)
        assert all(s in message for s in ("'a'", str(path), "record 1", "record 2")), message
    # One record per batch: tfx-bsl alone would accept each batch; the per-file check
    # still refuses the file, naming the same records.
    with pytest.raises(InputError, match="record 1 and float values in record 2"):
        _read(path, ["a"], batch_size=1)


INVALID = {  # protobuf and tfx-bsl reject these records
    "malformed_unrequested_feature": _example(_entry(b"a", _ints(1)), _entry(b"z", b"\x0a\x05")),
    "invalid_utf8_unrequested_key": _example(_entry(b"a", _ints(1)), _entry(b"\xff", BYTES_XY)),
    "six_byte_tag": _ld(0x0A, b"\x8a\x80\x80\x80\x80\x00"  # tag 0x0A spelled in 6 bytes
                        + _entry(b"a", BYTES_XY)[1:]),
    "feature_tag_over_32_bits": _example(_entry(b"a", _ld(0x0A | 1 << 35, _ld(0x0A, b"z")))),
}


@needs_native
@pytest.mark.parametrize("case", sorted(INVALID))
def test_records_protobuf_rejects_are_not_decoded(case):
    with pytest.raises(DecodeError):
        example_pb2.Example.FromString(INVALID[case])
    with pytest.raises(RuntimeError):
        _tfx([INVALID[case]])
    assert _decode([INVALID[case]], ["a"]).fallback.tolist() == [0]


@needs_native
def test_repeated_column_name():
    out = _decode([_example(_entry(b"a", BYTES_XY))], ["a", "a"])
    assert out.batch.column(1).to_pylist() == [[b"xy"]]


def _frame_both(buf, monkeypatch):
    """frame() through the native module and through the pure-Python fallback."""
    native = frame(buf)
    with monkeypatch.context() as m:
        m.setattr(tfrecord_framing, "_native", None)
        python = frame(buf)
    return [[r.starts.tolist(), r.lengths.tolist(), r.used, r.pending, r.corrupt,
             r.bad_data.tolist()] for r in (native, python)]


def _masked(data: bytes) -> bytes:
    """TFRecord's masked CRC-32C, from google-crc32c and the TFRecord format definition."""
    c = google_crc32c.value(data)
    return struct.pack("<I", ((c >> 15 | c << 17) + 0xA282EAD8) & 0xFFFFFFFF)


def _framed(payload: bytes, *, bad_data: bool = False) -> bytes:
    head = struct.pack("<Q", len(payload))
    crc = _masked(payload)
    if bad_data:
        crc = bytes([crc[0] ^ 1]) + crc[1:]
    return head + _masked(head) + payload + crc


@has_module
@pytest.mark.parametrize("seed", range(4))
def test_frame_native_and_python_agree(seed, monkeypatch):
    rng = random.Random(seed)
    for _ in range(25):
        buf, starts, lengths, bad = bytearray(), [], [], []
        for i in range(rng.randrange(6)):
            payload = rng.randbytes(rng.choice((0, 1, 5, 12, 100, 300)))
            starts.append(len(buf) + 12)
            lengths.append(len(payload))
            if rng.random() < 0.2:
                bad.append(i)
            buf += _framed(payload, bad_data=i in bad)
        consumed = len(buf)
        corrupt, pending = False, -1
        kind = rng.choice(("junk", "cut", "none"))
        if kind == "junk":  # random bytes: a length CRC that does not match
            tail = rng.randbytes(rng.randrange(41))
            corrupt = len(tail) >= 12
        elif kind == "cut":  # a sound header, the record cut short
            n = rng.randrange(40)
            whole = _framed(rng.randbytes(n))
            tail = whole[:rng.randrange(len(whole))]
            pending = n if len(tail) >= 12 else -1
        else:
            tail = b""
        data = bytes(buf + tail)
        for view in (data, bytearray(data), memoryview(data)):
            native, python = _frame_both(view, monkeypatch)
            assert native == python == [starts, lengths, consumed, pending, corrupt, bad]
        unchecked = frame(data, check_data=False)
        assert unchecked.bad_data.tolist() == [] and unchecked.starts.tolist() == starts


@has_module
def test_frame_huge_length_prefix(monkeypatch):
    native, python = _frame_both(b"\xff" * 12, monkeypatch)  # a length CRC that fails
    assert python == [[], [], 0, -1, True, []]
    assert native == python
    head = b"\xff" * 8
    native, python = _frame_both(head + _masked(head), monkeypatch)  # a sound huge length
    assert python == [[], [], 0, 2**64 - 1, False, []]
    assert native == python


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    rng = random.Random(99)
    records = [_random_example(rng) for _ in range(500)]
    records[120] = b"\x07garbage"
    records[250] = _example(_entry(b"int64key", _ints(1)), _entry(b"int64key", _ints(2)))
    path = _write(tmp_path_factory.mktemp("big") / "big.tfrecord", records)
    return path, _expected(records, COLUMNS)


@pytest.mark.parametrize("chunk_bytes", [1 << 22, 300, 37, 10])
@pytest.mark.parametrize("mode", ["native", "no_native_env", "no_module"])
def test_chunk_size_does_not_change_rows(big_file, chunk_bytes, mode, monkeypatch):
    if mode == "native" and not native_available() and not REQUIRED:
        pytest.skip("native decoder not built")
    if mode == "no_native_env":
        monkeypatch.setenv("BEAM_PREP_NO_NATIVE", "1")
    if mode == "no_module":  # the pure-Python framing too
        monkeypatch.setattr(example_decoder, "_native", None)
        monkeypatch.setattr(tfrecord_framing, "_native", None)
    path, (want_rows, want_rejected) = big_file
    rows, rejected, _ = _read(path, COLUMNS, chunk_bytes=chunk_bytes, batch_size=64)
    assert rejected == want_rejected == [(121, MALFORMED)]
    assert rows == want_rows and len(rows) == 499
    assert rows[251]["int64key"] == [2]


@needs_native
def test_rows_follow_file_order_with_fallback_records(tmp_path):
    records = [_example(_entry(b"a", _ints(i))) for i in range(5)]
    records[2] = _example(_entry(b"a", _ints(0)), _entry(b"a", _ints(2)))
    _, _, order = _read(_write(tmp_path / "t.tfrecord", records), ["a"], batch_size=10)
    assert order == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("keep", [1, 11, 12, 15, 16, 40, 75, 76])
@pytest.mark.parametrize("chunk_bytes", [1 << 20, 50])
def test_truncated_file(tmp_path, keep, chunk_bytes):
    records = [_example(_entry(b"a", _ints(i)), _entry(b"s", BYTES_XY)) for i in range(19)]
    records.append(_example(_entry(b"a", _ints(*range(47)))))  # 60-byte payload, 76 framed
    assert len(records[-1]) == 60
    data = _write(tmp_path / "t.tfrecord", records).read_bytes()
    (tmp_path / "t.tfrecord").write_bytes(data[:len(data) - 76 + keep])  # `keep` of the last
    if keep < 76:  # the file ends inside record 20, which starts at len(data) - 76
        with pytest.raises(InputError, match=f"byte offset {len(data) - 76} \\(record 20\\)"):
            _read(tmp_path / "t.tfrecord", ["a", "s"], chunk_bytes=chunk_bytes, batch_size=8)
    rows, rejected, _ = _read(tmp_path / "t.tfrecord", ["a", "s"], chunk_bytes=chunk_bytes,
                              batch_size=8, skip_corrupt_tail=True)
    assert rows == _expected(records if keep == 76 else records[:-1], ["a", "s"])[0]
    assert rejected == ([] if keep == 76 else [(20, "corrupt_tail")])


def test_gzip_file_reads_like_plain_file(tmp_path):
    rng = random.Random(5)
    kinds = {"s": "bytes", "i": "int64", "f": "float", "n": "bytes"}  # n: one value or none
    payloads, want = [], []
    for i in range(300):
        row = {"s": [f"v{i}_{j}_é" for j in range(i % 3)] if i % 4 else None,
               "i": [rng.getrandbits(64) - 2**63 for _ in range(i % 4)] if i % 5 else None,
               "f": [struct.unpack("<f", _f32(rng.uniform(-9e5, 9e5)))[0]] * 2 if i % 3 else None,
               "n": [f"n{i}"] if i % 7 else None}
        ex = example_pb2.Example()
        for key, values in row.items():
            if values is not None:
                getattr(ex.features.feature[key], kinds[key] + "_list").value.extend(
                    v.encode() if isinstance(v, str) else v for v in values)
        payloads.append(ex.SerializeToString())
        want.append(row)
    plain = _write(tmp_path / "d.tfrecord", payloads)
    packed = tmp_path / "d.tfrecord.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    columns = {"s": "string", "i": "int64", "f": "float64", "n": "string"}

    def rows(path):
        results = list(read_split(Split(str(path), "tfrecord"), columns, batch_size=64))
        assert not any(r.rejected for r in results)
        assert sum(r.rows_seen for r in results) == 300
        return [dict(zip(columns, v)) for r in results
                for v in zip(*(_as_lists(r.batch.column(c)) for c in columns))]

    assert rows(packed) == rows(plain) == want
