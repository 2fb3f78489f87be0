"""`beam-prep analyze --cache_dir`: the artifacts are the bytes of a run without the cache.

The oracle of every test is an independent run of the job without ``--cache_dir`` over the
same files: every file of the artifact directory (manifest included) must be byte-identical.
Hit and miss counts come from the run records the job writes into the cache.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep.analyzers.cache.key import CACHE_FORMAT_VERSION
from tests.artifact_diff import assert_same_artifacts, changed_sources
from tests.io.commit import test_output_gcs

SPEC = """
features:
  - {name: city, kind: string, top_k: 4}
  - {name: item, kind: integer, column: item_id}
  - {name: price, kind: numeric, num_buckets: 4}
  - {name: words, kind: text, column: note, output_mode: tf_idf, ngrams: 2}
  - {name: twice, kind: numeric, expr: "price * 2"}
  - {name: user, kind: hashed, num_bins: 8}
"""
gcs = test_output_gcs.gcs  # the GCS emulator fixture (module scope)
CITIES = ["Paris", "Berlin", "Oslo", "Rome", "Lima", "Kyiv", "Quito"]
WORDS = ["red", "green", "blue", "Fast", "slow", "cat", "dog", "the"]


def write_day(path: Path, day: int, rows: int = 120) -> Path:
    """One CSV file of ``rows`` rows (one of them rejected: a price that is not a number)."""
    rng = np.random.default_rng(day)
    lines = ["city,item_id,price,note,user"]
    for i in range(rows):
        city = CITIES[int(rng.integers(0, len(CITIES) - day % 3))]
        price = "oops" if i == 7 else ("" if i % 11 == 0 else f"{rng.lognormal(1, 1):.4f}")
        note = " ".join(rng.choice(WORDS, int(rng.integers(0, 5))))
        lines.append(f"{city},{int(rng.integers(0, 30))},{price},{note},u{i % 5}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def days(folder: Path, numbers) -> list[Path]:
    folder.mkdir(exist_ok=True)
    return [p if p.exists() else write_day(p, n)
            for n, p in ((n, folder / f"d{n}.csv") for n in numbers)]


def run(tmp: Path, files: list[Path], out: str, *extra: str, spec: str = SPEC) -> Path:
    spec_path = tmp / f"spec-{abs(hash(spec))}.yaml"
    spec_path.write_text(spec, encoding="utf-8")
    inputs = [a for f in files for a in ("--input", str(f))]
    analyze.run(["--spec", str(spec_path), *inputs, "--output", out,
                 "--max_bad_fraction", "0.05", "--batch_size", "50", "--vocab_partitions", "3",
                 *extra])
    return Path(out)


def assert_same_bytes(a: Path, b: Path) -> None:
    files = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert "manifest.json" in files
    assert_same_artifacts(a, b)  # names what differs: files, first line or byte, JSON keys


def last_run(cache: Path) -> dict:
    records = sorted((cache / "runs").glob("*.json"))
    return json.loads(records[-1].read_text())


def test_cold_and_warm_cache_give_the_bytes_of_a_run_without_cache(tmp_path):
    files = days(tmp_path / "data", [1, 2, 3])
    cache = tmp_path / "cache"
    ranges = ("--input_split_bytes", "2500")  # two record-aligned byte ranges per file
    plain = run(tmp_path, files, str(tmp_path / "plain"), *ranges)
    cold = run(tmp_path, files, str(tmp_path / "cold"), "--cache_dir", str(cache), *ranges)
    assert last_run(cache)["hits"] == 0 and last_run(cache)["misses"] == 6
    assert_same_bytes(plain, cold)
    warm = run(tmp_path, files, str(tmp_path / "warm"), "--cache_dir", str(cache), *ranges)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (6, 0)
    assert_same_bytes(plain, warm)
    manifest = json.loads((warm / "manifest.json").read_text())
    assert manifest["input"]["rows_rejected"] == 3  # one per file, replayed from the cache
    assert manifest["input"]["splits"] == 6
    assert len(list((cache / "entries").glob("*/*/index.json"))) == 6
    assert len(list((cache / "plans").glob("*/*.json"))) == 3  # the byte-range plans
    assert len(last_run(cache)["keys"]) == 9  # 6 entries + 3 plans, for pruning


def test_rolling_window_gives_the_bytes_of_a_full_run(tmp_path):
    """d1..d5 with the cache, then d2..d6: only d6 is read, the result is a full d2..d6 run."""
    cache = tmp_path / "cache"
    run(tmp_path, days(tmp_path / "data", range(1, 6)), str(tmp_path / "first"),
        "--cache_dir", str(cache))
    window = days(tmp_path / "data", range(2, 7))
    rolled = run(tmp_path, window, str(tmp_path / "rolled"), "--cache_dir", str(cache))
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (4, 1)
    assert_same_bytes(run(tmp_path, window, str(tmp_path / "full")), rolled)


# ---- the split DoFn alone: a replayed entry emits what the analysis emits -----------------

def _spec(text: str = SPEC):
    import yaml

    from beam_prep.spec import Spec

    return Spec.from_dict(yaml.safe_load(text))


def _fresh_fn(spec, temp: Path | None = None, spill_rows: int = 8192):
    from beam_prep.analyzers.split_fn import AnalyzeSplitFn

    return AnalyzeSplitFn(spec.to_dict(), batch_size=50, num_partitions=3,
                          temp_dir=None if temp is None else str(temp), spill_rows=spill_rows)


def _cached_fn(spec, cache: Path, temp: Path | None = None, spill_rows: int = 8192,
               partitions: int = 3):
    from beam_prep.analyzers.cache.fn import CachedAnalyzeSplitFn
    from beam_prep.analyzers.cache.key import ReaderSettings

    fn = CachedAnalyzeSplitFn(_fresh_fn(spec, temp, spill_rows), spec.to_dict(), str(cache),
                              ReaderSettings("csv", 50), num_partitions=partitions,
                              temp_dir=None if temp is None else str(temp),
                              spill_rows=spill_rows)
    fn.setup()
    return fn


def _summary(outputs) -> dict:
    """Everything emitted, in a form that does not depend on how tables were cut."""
    import pickle

    from beam_prep.analyzers.spill import materialize

    vocab: dict = {}
    out: dict = {"vocab": vocab, "rejected": [], "cache": []}
    for o in outputs:
        tag = getattr(o, "tag", None)
        value = o.value if tag is not None else o
        if tag is None:
            (name, part), table = value
            t = materialize(table)
            for tok, c, df in zip(*(t.column(k).to_pylist() for k in ("token", "count", "df"))):
                old = vocab.setdefault(name, {}).get(tok, (0, 0))
                vocab[name][tok] = (old[0] + c, old[1] + df)
                out.setdefault("partition_ok", []).append(part < 3)
        elif tag == "numeric":
            group, (split_id, partials) = value
            out["numeric"] = (group, split_id, {
                k: (p.moments, p.missing, p.nan, p.infinite,
                    None if p.sketch is None else pickle.loads(p.sketch).__getstate__())
                for k, p in partials.items()})
        elif tag == "meta":
            out["meta"] = value
        else:
            out[tag].append(value)
    out["rejected"].sort()
    return out


def test_replayed_entry_emits_exactly_the_split_results(tmp_path):
    from beam_prep.io.inputs.readers import Split

    spec = _spec()
    split = Split(str(write_day(tmp_path / "d.csv", 4)), "csv")
    fresh = _fresh_fn(spec)
    fresh.setup()
    expected = _summary(fresh.process(split))
    expected.pop("cache")
    miss = _summary(_cached_fn(spec, tmp_path / "cache").process(split))
    hit = _summary(_cached_fn(spec, tmp_path / "cache").process(split))
    assert [s for s, _ in miss.pop("cache")] == ["miss"]
    assert [s for s, _ in hit.pop("cache")] == ["hit"]
    assert miss == expected
    assert hit == expected
    assert expected["meta"]["rows_rejected"] == 1 and len(expected["rejected"]) == 1
    assert sum(c for c, _ in expected["vocab"]["city"].values()) == 119  # 120 - 1 rejected


def test_spilled_tables_are_stored_and_replayed_through_files(tmp_path):
    """Tables at the spill threshold travel as files: stored from them, re-spilled on replay."""
    from beam_prep.analyzers.spill import SpillRef
    from beam_prep.io.inputs.readers import Split

    spec = _spec()
    split = Split(str(write_day(tmp_path / "d.csv", 4)), "csv")
    fresh = _fresh_fn(spec, tmp_path / "tmp0", spill_rows=2)
    fresh.setup()
    expected = _summary(fresh.process(split))
    expected.pop("cache")
    miss = _cached_fn(spec, tmp_path / "cache", tmp_path / "tmp1", spill_rows=2)
    assert _summary(miss.process(split))["vocab"] == expected["vocab"]
    replay = list(_cached_fn(spec, tmp_path / "cache", tmp_path / "tmp2", spill_rows=2,
                             partitions=2).process(split))
    assert any(isinstance(o[1], SpillRef) for o in replay if not hasattr(o, "tag"))
    assert all(o[0][1] < 2 for o in replay if not hasattr(o, "tag"))  # this run's partitions
    got = _summary(replay)
    assert got["vocab"] == expected["vocab"] and got["meta"] == expected["meta"]


def _entry(cache: Path) -> Path:
    (index,) = (cache / "entries").glob("*/*/index.json")
    return index.parent


def _flip_byte(folder: Path) -> None:
    p = folder / "vocab-000.arrow"
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))


def _truncate(folder: Path) -> None:
    p = folder / "numeric.json"
    p.write_bytes(p.read_bytes()[:-5])


def _wrong_version(folder: Path) -> None:
    p = folder / "index.json"
    text = p.read_text()
    current = f'"format_version": {CACHE_FORMAT_VERSION}'
    assert current in text  # the damage must really change the version
    p.write_text(text.replace(current, '"format_version": 99'))


def _torn_index(folder: Path) -> None:
    p = folder / "index.json"
    p.write_bytes(p.read_bytes()[:40])


def _missing_payload(folder: Path) -> None:
    (folder / "meta.json").unlink()


@pytest.mark.parametrize("damage", [_flip_byte, _truncate, _wrong_version, _torn_index,
                                    _missing_payload])
def test_a_damaged_entry_is_recomputed_with_a_warning(tmp_path, caplog, damage):
    from beam_prep.io.inputs.readers import Split

    spec = _spec()
    split = Split(str(write_day(tmp_path / "d.csv", 5)), "csv")
    fresh = _fresh_fn(spec)
    fresh.setup()
    expected = _summary(fresh.process(split))
    expected.pop("cache")
    list(_cached_fn(spec, tmp_path / "cache").process(split))
    damage(_entry(tmp_path / "cache"))
    with caplog.at_level(logging.WARNING, logger="beam_prep.analyze"):
        again = _summary(_cached_fn(spec, tmp_path / "cache").process(split))
    assert [s for s, _ in again.pop("cache")] == ["miss"]
    assert again == expected
    assert "is not used" in caplog.text
    caplog.clear()
    healed = _summary(_cached_fn(spec, tmp_path / "cache").process(split))  # rewritten
    assert [s for s, _ in healed.pop("cache")] == ["hit"] and healed == expected
    assert "is not used" not in caplog.text


# ---- what invalidates an entry ------------------------------------------------------------

def _status(fn, split) -> list[str]:
    return [o.value[0] for o in fn.process(split) if getattr(o, "tag", None) == "cache"]


def test_a_file_rewritten_in_place_is_read_again(tmp_path):
    """Same size, mtime restored with os.utime: the ctime still tells (and the size/mtime)."""
    from beam_prep.io.inputs.readers import Split

    spec = _spec()
    path = write_day(tmp_path / "d.csv", 1)
    split = Split(str(path), "csv")
    cache = tmp_path / "cache"
    assert _status(_cached_fn(spec, cache), split) == ["miss"]
    assert _status(_cached_fn(spec, cache), split) == ["hit"]
    # Same bytes count, other content, mtime put back.
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    swapped = text.replace("Paris", "PARIS")
    assert swapped != text and len(swapped) == len(text)
    path.write_text(swapped, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    got = _summary(_cached_fn(spec, cache).process(split))
    assert [s for s, _ in got.pop("cache")] == ["miss"]
    assert "PARIS" in got["vocab"]["city"] and "Paris" not in got["vocab"]["city"]
    # A longer file (size changes), then only a newer mtime: both read again.
    path.write_text(swapped + "Oslo,1,2.5,red,u1\n", encoding="utf-8")
    assert _status(_cached_fn(spec, cache), split) == ["miss"]
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert _status(_cached_fn(spec, cache), split) == ["miss"]
    assert _status(_cached_fn(spec, cache), split) == ["hit"]


def _index_of(cache: Path, key: str) -> dict:
    return json.loads((cache / "entries" / key[:2] / key / "index.json").read_text())


@pytest.mark.parametrize("change, invalidates", [
    ("top_k: 4", False),                              # the spec as written: a hit
    ("top_k: 1, min_count: 3", False),                # applied after the merge
    ("top_k: 4, mask_token: zz, output_mode: multi_hot", False),
    ("top_k: 4, default_value: Nowhere", True),       # fills missing cells before counting
    ("top_k: 4, impute: most_frequent", False),       # read from the merged vocabulary
    ("top_k: 4, missing_indicator: true", False),     # a layer output only
    ("top_k: 4, column: user", True),                 # another column
    ("top_k: 4, expr: 'lower(city)'", True),          # another expression
])
def test_only_accumulating_spec_fields_invalidate_entries(tmp_path, change, invalidates):
    from beam_prep.io.inputs.readers import Split

    base = _spec()
    split = Split(str(write_day(tmp_path / "d.csv", 2)), "csv")
    cache = tmp_path / "cache"
    first = [o.value[1] for o in _cached_fn(base, cache).process(split)
             if getattr(o, "tag", None) == "cache"][0]
    changed = _spec(SPEC.replace("{name: city, kind: string, top_k: 4}",
                                 "{name: city, kind: string, " + change + "}"))
    (status, key), = [o.value for o in _cached_fn(changed, cache).process(split)
                      if getattr(o, "tag", None) == "cache"]
    assert status == ("miss" if invalidates else "hit")
    if invalidates:  # the per-feature keys name the feature that changed, and only it
        old, new = _index_of(cache, first), _index_of(cache, key)
        old_keys, new_keys = old["feature_keys"], new["feature_keys"]
        assert [n for n in old_keys if old_keys[n] != new_keys[n]] == ["city"]


@pytest.mark.parametrize("old, new, invalidates", [
    ("output_mode: tf_idf, ngrams: 2", "output_mode: tf_idf, ngrams: 2, max_tokens: 3", False),
    ("output_mode: multi_hot, ngrams: 2", "output_mode: int, ngrams: 2, "
                                           "output_sequence_length: 9", False),
    ("output_mode: tf_idf, ngrams: 2", "output_mode: count, ngrams: 2", True),  # no df
    ("output_mode: tf_idf, ngrams: 2", "output_mode: tf_idf", True),
    ("output_mode: tf_idf, ngrams: 2", "output_mode: tf_idf, ngrams: 2, standardize: lower",
     True),
])
def test_text_tokenisation_invalidates_and_max_tokens_does_not(tmp_path, old, new, invalidates):
    from beam_prep.io.inputs.readers import Split

    split = Split(str(write_day(tmp_path / "d.csv", 3)), "csv")
    cache = tmp_path / "cache"
    words = "{name: words, kind: text, column: note, output_mode: tf_idf, ngrams: 2}"
    assert _status(_cached_fn(_spec(SPEC.replace(words, words.replace(
        "output_mode: tf_idf, ngrams: 2", old))), cache), split) == ["miss"]
    status = _status(_cached_fn(_spec(SPEC.replace(words, words.replace(
        "output_mode: tf_idf, ngrams: 2", new))), cache), split)
    assert status == ["miss" if invalidates else "hit"]


def test_num_buckets_invalidates_only_through_the_sketch_epsilon(tmp_path):
    from beam_prep.io.inputs.readers import Split

    split = Split(str(write_day(tmp_path / "d.csv", 3)), "csv")
    cache = tmp_path / "cache"
    price = "{name: price, kind: numeric, num_buckets: 4}"
    assert _status(_cached_fn(_spec(), cache), split) == ["miss"]
    for other, status in [("num_buckets: 50", "hit"),       # epsilon min(1/50, 0.01) = 0.01
                          ("num_buckets: 4, scaling: min_max", "hit"),
                          ("num_buckets: 200", "miss"),     # epsilon 0.005: another sketch
                          ("num_buckets: 4, epsilon: 0.001", "miss")]:
        spec = _spec(SPEC.replace(price, price.replace("num_buckets: 4", other)))
        assert _status(_cached_fn(spec, cache), split) == [status], other


# ---- runners and file systems -------------------------------------------------------------

@pytest.mark.slow  # three pipeline runs, two of them in worker processes (~1 min here)
def test_two_worker_processes_with_a_cache_give_the_bytes_of_one_process(tmp_path):
    files = days(tmp_path / "data", [1, 2, 3, 4])
    cache = tmp_path / "cache"
    multi = ("--direct_running_mode=multi_processing", "--direct_num_workers=2",
             "--cache_dir", str(cache), "--spill_rows", "4")
    plain = run(tmp_path, files, str(tmp_path / "plain"))
    cold = run(tmp_path, files, str(tmp_path / "cold"), *multi)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (0, 4), changed_sources()
    warm = run(tmp_path, files, str(tmp_path / "warm"), *multi)
    # misses with sources listed: an edit during the test changed the keys (format version)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (4, 0), changed_sources()
    assert_same_bytes(plain, cold)
    assert_same_bytes(plain, warm)


@pytest.mark.slow  # four pipeline runs against the GCS emulator
def test_cache_and_inputs_on_gcs(gcs, tmp_path):
    """Cache on gs://, inputs on gs://: hits on the second run, and an object written again
    (same bytes: a new generation) is read again."""
    from beam_prep.analyzers.cache.fn import read_run
    from beam_prep.io import filesystem as fs
    from beam_prep.io.commit import output

    local = days(tmp_path / "data", [1, 2])
    remote = []
    for f in local:
        remote.append(f"{gcs}/cache-test/data/{f.name}")
        fs.write_bytes(remote[-1], f.read_bytes())
    cache = f"{gcs}/cache-test/cache"
    plain = run(tmp_path, remote, str(tmp_path / "plain"))

    def counts() -> tuple[int, int]:
        names = [p for p in output.list_files(f"{cache}/runs") if p.endswith(".json")]
        record = read_run(cache, sorted(names)[-1][:-len(".json")])
        return record["hits"], record["misses"]

    assert_same_bytes(plain, run(tmp_path, remote, str(tmp_path / "cold"), "--cache_dir", cache))
    assert counts() == (0, 2)
    assert any(p.endswith("/index.json") for p in output.list_files(f"{cache}/entries"))
    assert_same_bytes(plain, run(tmp_path, remote, str(tmp_path / "warm"), "--cache_dir", cache))
    assert counts() == (2, 0)
    fs.write_bytes(remote[1], local[1].read_bytes())  # rewritten: same bytes, new generation
    assert_same_bytes(plain, run(tmp_path, remote, str(tmp_path / "again"), "--cache_dir",
                                 cache))
    assert counts() == (1, 1)


def _parquet_splits(tmp_path: Path) -> list:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from beam_prep.io.inputs.readers import list_splits

    table = pcsv.read_csv(write_day(tmp_path / "d.csv", 6, rows=300),
                          convert_options=pcsv.ConvertOptions(
                              column_types={"price": "string", "note": "string"}))
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=70)
    return list_splits(str(tmp_path / "d.parquet"), "parquet", parquet_rows_per_split=100)


def _byte_range_splits(tmp_path: Path) -> list:
    from beam_prep.io.inputs.readers import list_splits

    return list_splits(str(write_day(tmp_path / "d.csv", 6, rows=300)), "csv",
                       split_bytes=4000)


@pytest.mark.parametrize("make_splits", [_parquet_splits, _byte_range_splits])
def test_row_group_and_byte_range_splits_are_cached_one_by_one(tmp_path, make_splits):
    from beam_prep.analyzers.cache.fn import CachedAnalyzeSplitFn
    from beam_prep.analyzers.cache.key import ReaderSettings

    spec = _spec()
    splits = make_splits(tmp_path)
    assert len(splits) >= 3
    fmt = splits[0].format
    fresh = _fresh_fn(spec)
    fresh.setup()

    def cached():
        fn = CachedAnalyzeSplitFn(_fresh_fn(spec), spec.to_dict(), str(tmp_path / "cache"),
                                  ReaderSettings(fmt, 50), num_partitions=3)
        fn.setup()
        return fn

    keys = set()
    for split in splits:
        expected = _summary(fresh.process(split))
        expected.pop("cache")
        for status in ("miss", "hit"):
            got = _summary(cached().process(split))
            (seen, key), = got.pop("cache")
            assert seen == status and got == expected, (split, status)
            keys.add(key)
    assert len(keys) == len(splits)


def test_byte_range_plans_are_read_from_the_cache(tmp_path, monkeypatch):
    """The planning pass reads a whole CSV file: a cached plan spares it."""
    from beam_prep.analyzers.cache import fn as cache_fn
    from beam_prep.io.inputs.readers import list_splits

    path = str(write_day(tmp_path / "d.csv", 6, rows=300))
    expected = list_splits(path, "csv", split_bytes=4000)
    assert len(expected) >= 3

    def listed():
        fn = cache_fn.CachedListSplits("csv", 100, 4000, str(tmp_path / "cache"))
        out = list(fn.process(path))
        return ([o for o in out if not hasattr(o, "tag")],
                [o.value for o in out if hasattr(o, "tag")])

    first, use = listed()
    assert first == expected and use[0][0] == "plan"

    def no_planning(*args, **kwargs):
        raise AssertionError("the file was planned again")

    monkeypatch.setattr(cache_fn, "list_splits", no_planning)
    again, use_again = listed()
    assert again == expected and use_again == use
    (plan,) = (tmp_path / "cache" / "plans").glob("*/*.json")
    plan.write_text("{torn")
    monkeypatch.undo()
    assert listed()[0] == expected  # a damaged plan is planned again


def test_an_index_describing_another_split_is_not_trusted_and_symlinks_are_not_written_through(
        tmp_path, caplog):
    """Tampering: entry A's index copied over entry B's (its key and hashes edited to match)
    is refused; a payload replaced by a symlink is recomputed without writing its target."""
    from beam_prep.io.inputs.readers import Split

    spec = _spec()
    cache = tmp_path / "cache"
    splits = [Split(str(write_day(tmp_path / f"d{d}.csv", d)), "csv") for d in (1, 2)]
    keys = [[o.value[1] for o in _cached_fn(spec, cache).process(s)
             if getattr(o, "tag", None) == "cache"][0] for s in splits]
    folders = [cache / "entries" / k[:2] / k for k in keys]
    forged = json.loads((folders[0] / "index.json").read_text())
    forged["key"] = keys[1]
    for name in forged["files"]:  # B's entry now holds A's payloads, hashes matching
        (folders[1] / name).write_bytes((folders[0] / name).read_bytes())
    (folders[1] / "index.json").write_text(json.dumps(forged))
    fresh = _fresh_fn(spec)
    fresh.setup()
    expected = _summary(fresh.process(splits[1]))
    expected.pop("cache")
    with caplog.at_level(logging.WARNING, logger="beam_prep.analyze"):
        got = _summary(_cached_fn(spec, cache).process(splits[1]))
    assert [s for s, _ in got.pop("cache")] == ["miss"] and got == expected
    assert "describes another split" in caplog.text
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"do not overwrite")
    (folders[1] / "meta.json").unlink()
    (folders[1] / "meta.json").symlink_to(victim)
    got = _summary(_cached_fn(spec, cache).process(splits[1]))
    assert [s for s, _ in got.pop("cache")] == ["miss"] and got == expected
    assert victim.read_bytes() == b"do not overwrite"
    assert not (folders[1] / "meta.json").is_symlink()
