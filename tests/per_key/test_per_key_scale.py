"""Per-key statistics at millions of keys: the columnar paths against the line-by-line ones.

The columnar reader (io.per_key_columns), the generated module's ``_per_key_columns``, the
transform's KeyIndex, the sorted runs of the writer and the eager combiner are each checked
against the simple path they replace (the oracle): same values bit for bit, same errors.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from beam_prep.analyzers.per_key import runs as per_key_runs
from beam_prep.analyzers.per_key import stats as pks
from beam_prep.analyzers.per_key.pipeline import KeyStatsCombineFn
from beam_prep.errors import ArtifactError
from beam_prep.io.contract import per_key_columns
from beam_prep.io.contract.per_key_columns import parse_per_key
from beam_prep.io.contract.per_key_file import parse_lines
from beam_prep.transform.key_index import KeyIndex
from tests.per_key import helpers

SIMPLE = ["a", "a,b", "b c", "ünï", "😀,", "k[1]", "x" * 300, "z'", "\u2028raw"]
ESCAPED = ['q"uote', "back\\slash", "tab\t", "nl\n", "nul\x00"]


def _number(x: float) -> str:
    return repr(float(x)) if np.isfinite(x) else "null"


def _file(keys: list[str], seed: int = 0, null_variance: bool = False) -> bytes:
    """A per-key file of ``keys`` (sorted here) with random doubles, written as the writer
    writes it (json key, repr numbers)."""
    rng = np.random.default_rng(seed)
    keys = sorted(set(keys), key=lambda k: k.encode("utf-8"))
    lines = []
    for i, k in enumerate(keys):
        low, high = sorted(rng.choice([rng.normal() * 10.0 ** rng.integers(-300, 300),
                                       -0.0, 5e-324, 1.7976931348623157e308,
                                       rng.random()], 2))
        mean = low if i % 5 == 0 else (low + (high - low) * rng.random())
        mean = min(max(mean, low), high)
        variance = float("inf") if null_variance and i == len(keys) // 2 else abs(
            rng.normal()) * 10.0 ** rng.integers(-300, 300)
        count = int(rng.integers(1, 10 ** int(rng.integers(1, 19))))
        lines.append(f"[{json.dumps(k, ensure_ascii=False)},{count},{_number(mean)},"
                     f"{_number(variance)},{_number(low)},{_number(high)}]\n")
    return "".join(lines).encode("utf-8")


def _slow(data: bytes, key_count=None):
    lines = data.split(b"\n")
    return parse_lines(iter(lines[:-1] if not lines[-1] else lines), "f.jsonl", key_count)


def _same(fast, slow) -> None:
    assert fast.keys.to_pylist() == slow.keys
    for name in ("count", "mean", "variance", "minimum", "maximum"):
        a, b = getattr(fast, name), getattr(slow, name)
        assert a.dtype == b.dtype, name
        assert a.view(np.int64).tolist() == b.view(np.int64).tolist(), name  # bit for bit


def _keys(n: int, escaped: bool) -> list[str]:
    return SIMPLE + (ESCAPED if escaped else []) + [f"store_{i}" for i in range(n)]


@pytest.mark.parametrize("escaped", [False, True])
@pytest.mark.parametrize("block_bytes", [64, 1 << 20])
def test_columnar_reader_equals_the_line_reader(escaped, block_bytes, monkeypatch):
    monkeypatch.setattr(per_key_columns, "BLOCK_BYTES", block_bytes)
    data = _file(_keys(400, escaped), seed=block_bytes, null_variance=True)
    _same(parse_per_key(data, "f.jsonl", 409 + 5 * escaped), _slow(data))
    _same(parse_per_key(data[:-1], "f.jsonl"), _slow(data[:-1]))  # no final newline
    _same(parse_per_key(b"", "f.jsonl", 0), _slow(b"", 0))


def _edit(data: bytes, line: int, new: bytes) -> bytes:
    lines = data.split(b"\n")
    lines[line] = new
    return b"\n".join(lines)


BAD = {
    "swapped": lambda d: b"\n".join([*d.split(b"\n")[1::-1], *d.split(b"\n")[2:]]),
    "twice": lambda d: _edit(d, 1, d.split(b"\n")[0]),
    "count 0": lambda d: _edit(d, 3, b'["store_1",0,1.0,0.0,1.0,1.0]'),
    "count 1.0": lambda d: _edit(d, 3, b'["store_1",1.0,1.0,0.0,1.0,1.0]'),
    "plus sign": lambda d: _edit(d, 3, b'["store_1",1,+1.0,0.0,1.0,1.0]'),
    "leading dot": lambda d: _edit(d, 3, b'["store_1",1,.5,0.0,0.5,0.5]'),
    "trailing dot": lambda d: _edit(d, 3, b'["store_1",1,1.,0.0,1.0,1.0]'),
    "NaN": lambda d: _edit(d, 3, b'["store_1",1,NaN,0.0,1.0,1.0]'),
    "Infinity max": lambda d: _edit(d, 3, b'["store_1",1,1.0,0.0,1.0,Infinity]'),
    "1e999": lambda d: _edit(d, 3, b'["store_1",1,1.0,0.0,1.0,1e999]'),
    "null mean": lambda d: _edit(d, 3, b'["store_1",1,null,0.0,1.0,1.0]'),
    "negative variance": lambda d: _edit(d, 3, b'["store_1",1,1.0,-1.0,1.0,1.0]'),
    "mean above max": lambda d: _edit(d, 3, b'["store_1",1,2.0,0.0,1.0,1.0]'),
    "empty key": lambda d: _edit(d, 0, b'["",1,1.0,0.0,1.0,1.0]'),
    "raw tab in key": lambda d: _edit(d, 3, b'["store_1\t",1,1.0,0.0,1.0,1.0]'),
    "bad utf-8": lambda d: _edit(d, 3, b'["store_1\xff",1,1.0,0.0,1.0,1.0]'),
    "surrogate": lambda d: _edit(d, 3, b'["store_1\xed\xa0\x80",1,1.0,0.0,1.0,1.0]'),
    "blank line": lambda d: _edit(d, 3, b""),
    "six numbers": lambda d: _edit(d, 3, b'["store_1",1,1.0,0.0,1.0,1.0,1.0]'),
    "no bracket": lambda d: _edit(d, 3, b'["store_1",1,1.0,0.0,1.0,1.0'),
    "not JSON": lambda d: _edit(d, 3, b"{oops"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_columnar_reader_raises_the_line_readers_error(case, monkeypatch):
    monkeypatch.setattr(per_key_columns, "BLOCK_BYTES", 256)
    data = BAD[case](_file([f"store_{i}" for i in range(40)]))
    with pytest.raises(ArtifactError) as slow:
        _slow(data)
    with pytest.raises(ArtifactError) as fast:
        parse_per_key(data, "f.jsonl")
    assert str(fast.value) == str(slow.value)


def test_columnar_reader_checks_the_key_count():
    data = _file([f"store_{i}" for i in range(10)])
    with pytest.raises(ArtifactError, match="holds 10 keys but the manifest records"):
        parse_per_key(data, "f.jsonl", 11)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    pytest.importorskip("tensorflow")
    from beam_prep.codegen.render import generate
    from tests.codegen.conftest import import_module_from

    tmp = tmp_path_factory.mktemp("gen")
    rows = helpers.make_rows(n=300, keys=20)
    rows["store"] = [None if s is None else f"s{len(s)}" for s in rows["store"]]
    path = str(tmp / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    out = helpers.run(tmp, "features:\n  - {name: price, kind: numeric, per_key: store}\n",
                      path)
    generate(out, str(tmp / "pp.py"))
    return tmp, import_module_from(str(tmp / "pp.py"), "bp_per_key_scale")


def _state(pp, tmp, data: bytes, scaling: str):
    (tmp / "f.jsonl").write_bytes(data)
    return pp._per_key_state(str(tmp), "f.jsonl", scaling, [0.5, 2.0, False])


@pytest.mark.parametrize("scaling", ["z_score", "min_max"])
def test_generated_columns_equal_the_generated_line_reader(generated, scaling, monkeypatch):
    tmp, pp = generated
    data = _file(_keys(300, escaped=False), seed=3)
    assert pp._per_key_columns(data) is not None  # the fast path is taken
    fast = _state(pp, tmp, data, scaling)
    monkeypatch.setattr(pp, "_per_key_columns", lambda data: None)
    slow = _state(pp, tmp, data, scaling)
    assert [k.decode("utf-8") for k in fast[0].numpy().tolist()] == slow[0]
    for a, b, dtype in zip(fast[1:], slow[1:], ("float64", "float64", "bool", "int64")):
        assert a.dtype == dtype and a.tolist() == b  # exact (decode_csv parses as json)
        if dtype == "float64":
            assert np.signbit(a).tolist() == np.signbit(np.array(b)).tolist()


@pytest.mark.parametrize("case", sorted(BAD))
def test_generated_columns_step_aside_for_every_bad_file(generated, case):
    tmp, pp = generated
    data = BAD[case](_file([f"store_{i}" for i in range(40)]))
    assert pp._per_key_columns(data) is None  # the line reader then names the line
    with pytest.raises(pp.ArtifactMismatchError, match=r"line \d+ is not \[key"):
        _state(pp, tmp, data, "z_score")


def test_generated_columns_take_escaped_keys_to_the_line_reader(generated):
    tmp, pp = generated
    data = _file(_keys(10, escaped=True))
    assert pp._per_key_columns(data) is None
    assert len(_state(pp, tmp, data, "z_score")[0]) == 24


def test_key_index_equals_index_in(monkeypatch):
    rng = np.random.default_rng(0)
    keys = pa.array(sorted({f"k{i}" for i in rng.integers(0, 5000, 3000)} | set(SIMPLE)))
    values = [None if i % 13 == 0 else f"k{i}" for i in rng.integers(0, 10000, 5000)]
    values += SIMPLE + ["", "k", "k1\x00"]
    for arr in (pa.array(values), pa.array(values, pa.large_string()),
                pa.array(values).dictionary_encode(),
                pa.chunked_array([pa.array(values[:7]), pa.array(values[7:])])):
        want = pc.fill_null(pc.index_in(arr, value_set=keys), -1).to_numpy(
            zero_copy_only=False)
        assert KeyIndex(keys)(arr).tolist() == want.tolist()
    assert KeyIndex(pa.array([], pa.string()))(pa.array(["a", None])).tolist() == [-1, -1]
    monkeypatch.setattr("beam_prep.transform.key_index.token_hashes",  # a value's hash
                        lambda a: pc.utf8_length(a).to_numpy().astype(np.uint64))  # = a key's
    assert KeyIndex(pa.array(["a", "bb", "ccc"]))(pa.array(["x", "bb", "yyy", "zzzz"])
                                                  ).tolist() == [-1, 1, -1, -1]
    monkeypatch.setattr("beam_prep.transform.key_index.token_hashes",
                        lambda a: np.zeros(len(a), np.uint64))  # every hash collides
    assert KeyIndex(keys)(pa.array(values)).tolist() == pc.fill_null(
        pc.index_in(pa.array(values), value_set=keys), -1).to_numpy(
        zero_copy_only=False).tolist()


def test_spilled_runs_merge_into_the_sorted_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(per_key_runs, "BATCH_ROWS", 3)
    rng = np.random.default_rng(1)
    keys = sorted({f"{rng.integers(0, 1000)}\u00e9{i % 7}" for i in range(400)} | set(SIMPLE),
                  key=lambda k: k.encode("utf-8"))
    parts = [[k for j, k in enumerate(keys) if j % 5 == p] for p in range(5)]
    runs = [per_key_runs.make_run(pa.array(part), pa.array([k + "\n" for k in part]),
                                  str(tmp_path / f"p{p}.arrow"), spill_rows=0 if p % 2 else 10 ** 9)
            for p, part in enumerate(parts)]
    assert sum(isinstance(r, pa.Table) for r in runs) == 3
    assert b"".join(per_key_runs.merged_bytes(runs)) == "".join(
        k + "\n" for k in keys).encode("utf-8")


def test_spilled_runs_give_the_same_file(tmp_path, monkeypatch):
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(helpers.make_rows(n=2000, keys=200), path)
    spec = "features:\n  - {name: price, kind: numeric, per_key: store}\n"
    a = helpers.run(tmp_path, spec, path, name="a")
    monkeypatch.setattr(per_key_runs, "SPILL_ROWS", 1)
    monkeypatch.setattr(per_key_runs, "BATCH_ROWS", 4)
    b = helpers.run(tmp_path, spec, path, "--vocab_partitions", "3", name="b")
    rel = os.path.join("per_key", "price.jsonl")
    assert open(os.path.join(a, rel), "rb").read() == open(os.path.join(b, rel), "rb").read()
    assert not os.path.exists(os.path.join(b, "_tmp"))


def test_the_combiner_holds_a_partition_about_once():
    rng = np.random.default_rng(2)
    keys = pa.array([f"k{i}" for i in range(100)])
    fn = KeyStatsCombineFn()
    acc = fn.create_accumulator()
    for _ in range(15):  # fifteen splits seeing the same 100 keys
        acc = fn.add_input(acc, pks.batch_stats(keys, rng.normal(size=100)))
    assert sum(len(s) for s in acc) <= 300  # merged + pending, not 15 x 100
    assert len(fn.compact(acc)) == 1 and len(fn.compact(acc)[0]) == 100
