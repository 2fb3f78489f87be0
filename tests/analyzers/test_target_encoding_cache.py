"""Target encoding with the analysis cache (``--cache_dir``): stored partials, the key.

Oracle: a run *without* ``--cache_dir`` over the same files (every artifact byte-identical,
manifest included), and the exact per-(token, fold) sums of the raw split rows computed here
with ``fractions.Fraction``.
"""

from __future__ import annotations

import json
import logging
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pytest

from beam_prep.analyzers.cache import store as cache_store
from beam_prep.analyzers.cache.key import ReaderSettings, analysis_key
from beam_prep.analyzers.exact_sums import SUM_SHIFT
from beam_prep.analyzers.target import cache_file as cache_target
from beam_prep.analyzers.target.stats import folds_of
from beam_prep.spec import Spec
from tests.analyzers.test_cache import assert_same_bytes, days, last_run, run, write_day

SPEC = """
features:
  - {name: city, kind: string, top_k: 4,
     target_encoding: {labels: price, fold_column: user, folds: 3, smoothing: 2}}
  - {name: item, kind: integer, column: item_id,
     target_encoding: {labels: price, fold_column: city, folds: 4, smoothing: 0}}
  - {name: price, kind: numeric}
"""
RANGES = ("--input_split_bytes", "2500")  # two byte ranges per day file


def _cache_args(cache: Path) -> tuple[str, ...]:
    return ("--cache_dir", str(cache), *RANGES)


def test_cold_then_warm_with_a_changed_and_an_added_split_give_fresh_bytes(tmp_path):
    files = days(tmp_path / "data", [1, 2])
    cache = tmp_path / "cache"
    cold = run(tmp_path, files, str(tmp_path / "cold"), *_cache_args(cache), spec=SPEC)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (0, 4)
    assert_same_bytes(run(tmp_path, files, str(tmp_path / "plain"), *RANGES, spec=SPEC), cold)
    assert len(list((cache / "entries").glob("*/*/target-001.jsonl"))) == 4
    write_day(files[1], 9)  # d2 rewritten with other rows; d3 added
    files = [*files, *days(tmp_path / "data", [3])]
    warm = run(tmp_path, files, str(tmp_path / "warm"), *_cache_args(cache), spec=SPEC)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (2, 4)
    fresh = run(tmp_path, files, str(tmp_path / "fresh"), *RANGES, spec=SPEC)
    assert_same_bytes(fresh, warm)
    assert (fresh / "vocab" / "city.target.jsonl").read_bytes() != (
        cold / "vocab" / "city.target.jsonl").read_bytes()  # the changed rows do count


# default suite time; the key rule is test_partial_options_change_the_key_and_smoothing_does_not,
# the replay end to end the cold/warm and edited-entry tests
@pytest.mark.slow
def test_a_smoothing_change_reuses_every_entry_and_gives_fresh_bytes(tmp_path):
    files = days(tmp_path / "data", [1, 2])
    cache = tmp_path / "cache"
    run(tmp_path, files, str(tmp_path / "cold"), *_cache_args(cache), spec=SPEC)
    smoother = SPEC.replace("smoothing: 2", "smoothing: 7.5")
    warm = run(tmp_path, files, str(tmp_path / "warm"), *_cache_args(cache), spec=smoother)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (4, 0)
    assert_same_bytes(run(tmp_path, files, str(tmp_path / "plain"), *RANGES, spec=smoother),
                      warm)


def _key(te: str) -> tuple[str, str]:
    text = f"features:\n  - {{name: c, kind: string, target_encoding: {{{te}}}}}\n"
    whole, per_feature = analysis_key(Spec.from_yaml_text(text), ReaderSettings("csv", 50))
    return whole, per_feature["c"]


@pytest.mark.parametrize("change, invalidates", [
    ("labels: y, fold_column: u, folds: 5, smoothing: 20", False),   # the defaults, written
    ("labels: y, fold_column: u, smoothing: 0", False),              # read-out only
    ("labels: y, fold_column: u, smoothing: 1000", False),
    ("labels: z, fold_column: u", True),                             # another label is summed
    ("labels: y, fold_column: v", True),                             # other folds
    ("labels: y, fold_column: u, folds: 3", True),
])
def test_partial_options_change_the_key_and_smoothing_does_not(change, invalidates):
    base = _key("labels: y, fold_column: u")
    new = _key(change)
    assert (new[0] != base[0]) == invalidates
    assert (new[1] != base[1]) == invalidates


# ---- the split DoFn: what an entry stores, and hostile entries ---------------------------

def _split_fn(spec: Spec, cache: Path):
    from beam_prep.analyzers.cache.fn import CachedAnalyzeSplitFn
    from beam_prep.analyzers.split_fn import AnalyzeSplitFn

    inner = AnalyzeSplitFn(spec.to_dict(), batch_size=50, num_partitions=3)
    fn = CachedAnalyzeSplitFn(inner, spec.to_dict(), str(cache), ReaderSettings("csv", 50),
                              num_partitions=3)
    fn.setup()
    return fn


def _targets(fn, split) -> dict:
    return {o.value[0]: o.value[1] for o in fn.process(split)
            if getattr(o, "tag", None) == "target"}


def _oracle(path: Path) -> dict:
    """(token, fold) -> [rows, exact sum] of the city feature, from the CSV text."""
    import csv

    rows = [r for r in csv.DictReader(path.open(encoding="utf-8"))]
    ok = []
    for r in rows:
        try:
            price = float(r["price"]) if r["price"] else None
        except ValueError:
            continue  # the rejected row
        ok.append((r["city"], price, r["user"]))
    folds = folds_of(pa.array([u for _, _, u in ok]), 3).tolist()
    out: dict = {}
    for (city, price, _), k in zip(ok, folds):
        if price is None:
            continue
        for key in ((None, k), (city, k)):
            cell = out.setdefault(key, [0, Fraction(0)])
            cell[0] += 1
            cell[1] += Fraction(price)
    return {k: [n, int(s * (1 << SUM_SHIFT))] for k, (n, s) in out.items()}


@pytest.fixture()
def entry(tmp_path):
    """A split analysed once with the cache: (spec, split, cache folder, stored file)."""
    from beam_prep.io.inputs.readers import Split

    spec = Spec.from_yaml_text(SPEC)
    path = days(tmp_path / "data", [4])[0]
    split = Split(str(path), "csv")
    cache = tmp_path / "cache"
    fresh = _targets(_split_fn(spec, cache), split)
    assert fresh["city"] == _oracle(path)
    (index,) = (cache / "entries").glob("*/*/index.json")
    stored = json.loads(index.read_text())["target"]
    return spec, split, cache, index.parent / stored["city"], fresh


def test_an_entry_stores_the_exact_table_readably_and_replays_it(entry):
    spec, split, cache, stored, fresh = entry
    lines = [json.loads(line) for line in stored.read_text(encoding="ascii").splitlines()]
    assert lines[0][0] is None and all(isinstance(c[3], str) for c in lines)
    assert {(t, k): [n, cache_target.parse_exact(s)] for t, k, n, s in lines} == fresh["city"]
    assert float.fromhex(lines[0][3]) == pytest.approx(
        float(Fraction(fresh["city"][(None, lines[0][1])][1], 1 << SUM_SHIFT)))
    assert _targets(_split_fn(spec, cache), split) == fresh  # replayed: a hit


def _rewrite(path: Path, body: bytes, *, fix_index: bool) -> None:
    import hashlib

    path.write_bytes(body)
    if fix_index:  # a consistent edit: the index's checksum matches the edited file
        index_path = path.parent / "index.json"
        index = json.loads(index_path.read_text())
        index["files"][path.name] = {"sha256": hashlib.sha256(body).hexdigest(),
                                     "bytes": len(body)}
        index_path.write_text(json.dumps(index))


@pytest.mark.parametrize("damage, fix_index", [
    (lambda b: b[: len(b) // 2], False),                          # truncated
    (lambda b: b.replace(b"0x", b"0x1", 1), False),               # edited digit
    (lambda b: b[: len(b) // 2], True),                           # truncated, index re-hashed
    (lambda b: b.replace(b",0,", b",7,", 1), True),               # fold out of range
    (lambda b: b.replace(b'"0x', b'"0.5x', 1), True),             # not an exact sum
    (lambda b: b + b.split(b"\n")[0] + b"\n", True),              # repeated cell
    (lambda b: b'{"a": 1}\n', True),                              # not a cell
], ids=["truncated", "edited", "truncated-rehashed", "fold", "sum", "repeated", "shape"])
def test_damaged_target_files_are_detected_and_the_split_recomputed(entry, damage, fix_index,
                                                                     caplog):
    spec, split, cache, stored, fresh = entry
    _rewrite(stored, damage(stored.read_bytes()), fix_index=fix_index)
    with caplog.at_level(logging.WARNING, logger="beam_prep.analyze"):
        assert _targets(_split_fn(spec, cache), split) == fresh
    assert "is not used" in caplog.text and stored.name in caplog.text
    assert _targets(_split_fn(spec, cache), split) == fresh  # rewritten: a hit again
    caplog.clear()


def test_an_index_without_the_target_table_is_a_miss(entry, caplog):
    spec, split, cache, stored, fresh = entry
    index_path = stored.parent / "index.json"
    index = json.loads(index_path.read_text())
    del index["target"]["item"]
    index_path.write_text(json.dumps(index))
    with caplog.at_level(logging.WARNING, logger="beam_prep.analyze"):
        assert _targets(_split_fn(spec, cache), split) == fresh
    assert "lists target tables" in caplog.text


@pytest.mark.parametrize("body, message", [
    (b'[null,0,1,"0x1p+0"]', "cut off"),
    (b'[null,0,0,"0x1p+0"]\n', "rows 0"),
    (b'[null,true,1,"0x1p+0"]\n', "fold True"),
    (b'[3,0,1,"0x1p+0"]\n', "token 3"),
    (b'[null,0,1,"0x1p-1075"]\n', "off the grid"),
    (b'[null,0,1,"0x1p+99999"]\n', "too large"),
    (b'[null,0,1,1.5]\n', "not an exact sum"),
    (b'["\xc3\xa9",0,1,"0x1p+0"]\n', "not ASCII"),
])
def test_load_table_names_the_file_line_and_problem(body, message):
    with pytest.raises(cache_target.CacheFormatError, match=message) as err:
        cache_target.load_table(body, folds=2, name="target-000.jsonl")
    assert str(err.value).startswith("target-000.jsonl")


@pytest.mark.parametrize("value", [0, 1, -1, 3 << SUM_SHIFT, -(7 << 2000), (1 << 2200) + 1,
                                   12345678901234567890 << 17])
def test_exact_text_round_trips(value):
    text = cache_target.exact_text(value)
    assert cache_target.parse_exact(text) == value
    assert Fraction(value, 1 << SUM_SHIFT) == (
        (-1 if text.startswith("-") else 1) * int(text.split("x")[1].split("p")[0], 16)
        * Fraction(2) ** int(text.split("p")[1]))


def test_store_has_no_target_files_without_target_encoding(tmp_path):
    result = cache_store.SplitResult({}, None, {"rows_read": 0, "rows_rejected": 0}, [])
    cache_store.write_entry(str(tmp_path), "ab" * 32, result, {})
    index = json.loads((Path(cache_store.entry_dir(str(tmp_path), "ab" * 32)) /
                        "index.json").read_text())
    assert "target" not in index


def test_a_consistently_edited_entry_is_recomputed_end_to_end(tmp_path, caplog):
    """A target file edited with its index re-hashed (so the checksums agree) is refused by
    the line checks: that split is read again, the artifacts are a fresh run's bytes."""
    files = days(tmp_path / "data", [1, 2])
    cache = tmp_path / "cache"
    run(tmp_path, files, str(tmp_path / "cold"), *_cache_args(cache), spec=SPEC)
    stored = sorted((cache / "entries").glob("*/*/target-000.jsonl"))[0]
    _rewrite(stored, stored.read_bytes().replace(b",0,", b",9,", 1), fix_index=True)
    with caplog.at_level(logging.WARNING, logger="beam_prep.analyze"):
        warm = run(tmp_path, files, str(tmp_path / "warm"), *_cache_args(cache), spec=SPEC)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (3, 1)
    assert "target-000.jsonl line 1: fold 9" in caplog.text
    assert_same_bytes(run(tmp_path, files, str(tmp_path / "plain"), *RANGES, spec=SPEC), warm)


@pytest.mark.parametrize("relname", ["../../elsewhere.jsonl", "meta.json.bak", 7])
def test_an_index_naming_an_unchecked_target_file_is_a_miss(entry, relname, caplog):
    spec, split, cache, stored, fresh = entry
    index_path = stored.parent / "index.json"
    index = json.loads(index_path.read_text())
    index["target"]["city"] = relname
    index_path.write_text(json.dumps(index))
    if isinstance(relname, str):  # a valid table there, not listed in the index's checksums
        (stored.parent / relname).write_bytes(cache_target.table_bytes({(None, 0): [1, 0]}))
    with caplog.at_level(logging.WARNING, logger="beam_prep.analyze"):
        assert _targets(_split_fn(spec, cache), split) == fresh
    assert "lists target tables" in caplog.text


@pytest.mark.slow  # three pipeline runs, two in worker processes (~1 min)
def test_two_worker_processes_give_the_target_bytes_of_one_process(tmp_path):
    files = days(tmp_path / "data", [1, 2, 3])
    cache = tmp_path / "cache"
    multi = ("--direct_running_mode=multi_processing", "--direct_num_workers=2",
             "--cache_dir", str(cache))
    plain = run(tmp_path, files, str(tmp_path / "plain"), spec=SPEC)
    run(tmp_path, files, str(tmp_path / "cold"), *multi, spec=SPEC)
    warm = run(tmp_path, files, str(tmp_path / "warm"), *multi, spec=SPEC)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (3, 0)
    assert_same_bytes(plain, warm)
