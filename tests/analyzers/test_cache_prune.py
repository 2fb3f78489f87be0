"""`beam-prep cache prune`: keeps the entries the last N runs used, deletes the others."""

from __future__ import annotations

import pytest

from beam_prep import cli
from beam_prep.analyzers.cache_fn import CachedListSplits, record_run
from beam_prep.analyzers.cache_prune import prune
from beam_prep.errors import ArtifactError, InputError
from beam_prep.io.readers import Split
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
                   f"20260101T00000{i}000000Z-run{i}")
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
    assert report.runs_removed == ("20260101T000000000000Z-run0.json",)
    assert _present(folder, keys) == [2, 3, 4]
    assert not (folder / "entries" / keys[1][:2] / keys[1]).exists()
    assert sorted(p.name for p in (folder / "runs").iterdir()) == [
        "20260101T000001000000Z-run1.json", "20260101T000002000000Z-run2.json"]
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
    (folder / "runs" / "20260101T000002000000Z-run2.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="run2.json cannot be read.*nothing was deleted"):
        prune(str(folder), keep_runs=1)
    assert _present(folder, keys) == [1, 2, 3, 4, "plan"]
