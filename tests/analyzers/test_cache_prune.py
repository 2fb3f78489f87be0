"""`beam-prep cache prune`: keeps the entries the last N runs used, deletes the others."""

from __future__ import annotations

import pytest

from beam_prep import cli
from beam_prep.analyzers.cache.fn import CachedListSplits, record_run
from beam_prep.analyzers.cache.prune import prune
from beam_prep.errors import ArtifactError, InputError
from beam_prep.io.inputs.readers import Split
from tests.analyzers.test_cache import _cached_fn, _spec, write_day


@pytest.fixture()
def cache(tmp_path):
    """Entries for d1..d4, d1's split plan, and three run records: (d1 + its plan, d2),
    (d2, d3), (d3, d4)."""
    spec = _spec()
    folder = tmp_path / "cache"
    keys = {}
    for day in range(1, 5):
        split = Split(str(write_day(tmp_path / f"d{day}.csv", day, rows=20)), "csv")
        (status, key), = [o.value for o in _cached_fn(spec, folder).process(split)
                          if getattr(o, "tag", None) == "cache"]
        keys[day] = key
    lister = CachedListSplits("csv", 100, 50, str(folder))
    keys["plan"] = [o.value[1] for o in lister.process(str(tmp_path / "d1.csv"))
                    if hasattr(o, "tag")][0]
    for i, used in enumerate([(1, "plan", 2), (2, 3), (3, 4)]):
        record_run({"hits": 0, "misses": 2, "keys": [keys[d] for d in used]}, str(folder),
                   f"20260101T00000{i}000000Z-0000000{i}")
    return folder, keys


def _present(folder, keys) -> list:
    return [d for d, k in keys.items() if (folder / "entries" / k[:2] / k / "index.json").exists()
            or (folder / "plans" / k[:2] / f"{k}.json").exists()]


def test_prune_keeps_what_the_last_runs_used(cache):
    folder, keys = cache
    report = prune(str(folder), keep_runs=2, dry_run=True)
    assert (report.entries_kept, report.entries_removed) == (3, 1)
    assert _present(folder, keys) == [1, 2, 3, 4, "plan"]  # a dry run deletes nothing
    report = prune(str(folder), keep_runs=2)
    assert report.runs_removed == ("20260101T000000000000Z-00000000.json",)
    assert _present(folder, keys) == [2, 3, 4]
    assert not (folder / "entries" / keys[1][:2] / keys[1]).exists()
    assert sorted(p.name for p in (folder / "runs").iterdir()) == [
        "20260101T000001000000Z-00000001.json", "20260101T000002000000Z-00000002.json"]
    prune(str(folder), keep_runs=1)
    assert _present(folder, keys) == [3, 4]


def test_cli_prune(cache, capsys):
    folder, keys = cache
    assert cli.main(["cache", "prune", "--cache_dir", str(folder), "--keep_runs", "1"]) == 0
    assert "kept 2 entries used by the last 1 run(s); deleted 2 entries and 2 older" in (
        capsys.readouterr().out)
    assert _present(folder, keys) == [3, 4]


def test_prune_refuses_bad_arguments_and_unreadable_records(cache, tmp_path):
    folder, keys = cache
    with pytest.raises(InputError, match="keep_runs must be a positive integer"):
        prune(str(folder), keep_runs=0)
    with pytest.raises(InputError, match="holds no analysis cache"):
        prune(str(tmp_path / "elsewhere"), keep_runs=1)
    (folder / "runs" / "20260101T000002000000Z-00000002.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="00000002.json cannot be read.*nothing was deleted"):
        prune(str(folder), keep_runs=1)
    assert _present(folder, keys) == [1, 2, 3, 4, "plan"]


def test_prune_touches_only_the_names_the_cache_writes(cache):
    """Files a user keeps in the folder (even under entries/, plans/, runs/) survive."""
    folder, keys = cache
    foreign = {"notes.txt": b"mine", "entries/ab/abc/README.txt": b"keep",
               "entries/ph/photos/a.jpg": b"jpg", "plans/backup.json": b"{}",
               "plans/20/2024.json": b"{}", "runs/marathon.json": b"{not json"}
    for rel, data in foreign.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    prune(str(folder), keep_runs=1)
    assert _present(folder, keys) == [3, 4]
    assert {rel: (folder / rel).read_bytes() for rel in foreign} == foreign


def test_a_folder_that_is_not_a_cache_is_refused_and_left_alone(tmp_path):
    user = tmp_path / "work"
    files = {"notes.txt": b"mine", "plans/q1.json": b"{}", "entries/ph/photos/a.jpg": b"x"}
    for rel, data in files.items():
        (user / rel).parent.mkdir(parents=True, exist_ok=True)
        (user / rel).write_bytes(data)
    with pytest.raises(InputError, match="holds no analysis cache"):
        prune(str(user), keep_runs=1)
    assert {rel: (user / rel).read_bytes() for rel in files} == files


@pytest.mark.parametrize("cache_dir, output, refused", [
    ("art", "art", True), ("art/store", "art", True), ("art/", "art", True),
    ("art-cache", "art", False), ("gs://b/art/c", "gs://b/art", True),
    ("gs://b/art2", "gs://b/art", False)])
def test_a_cache_inside_the_output_folder_is_refused(tmp_path, monkeypatch, cache_dir, output,
                                                     refused):
    from beam_prep.analyzers.cache.fn import check_cache_dir

    monkeypatch.chdir(tmp_path)
    if refused:
        with pytest.raises(InputError, match="--cache_dir must not be the --output folder"):
            check_cache_dir(cache_dir, output)
    else:
        check_cache_dir(cache_dir, output)


def test_a_read_only_cache_only_warns_about_the_run_record(tmp_path, monkeypatch, caplog):
    from beam_prep.analyzers.cache import fn as cache_fn
    from beam_prep.analyzers.cache import store as cache_store

    def read_only(path, data):
        raise OSError(30, "Read-only file system", path)

    monkeypatch.setattr(cache_store, "write_atomic", read_only)
    record = cache_fn.record_run({"hits": 1, "misses": 0, "keys": ["k"]}, str(tmp_path), "r1")
    assert record["hits"] == 1 and "cannot write the run record" in caplog.text
    assert not (tmp_path / "runs").exists()
