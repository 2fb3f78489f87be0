"""`impute` and `missing_indicator` with `--cache_dir`: post-merge fields.

The imputed value is read from the merged statistics or vocabulary, so adding or changing
the fields reuses every cache entry; the oracle is a run without the cache (same bytes).
"""

from __future__ import annotations

from tests.analyzers.test_cache import SPEC, assert_same_bytes, days, last_run, run

IMPUTED = (SPEC.replace("{name: city, kind: string, top_k: 4}",
                        "{name: city, kind: string, top_k: 4, impute: most_frequent, "
                        "missing_indicator: true}")
           .replace("{name: item, kind: integer, column: item_id}",
                    "{name: item, kind: integer, column: item_id, default_value: most_frequent}")
           .replace("{name: price, kind: numeric, num_buckets: 4}",
                    "{name: price, kind: numeric, num_buckets: 4, impute: mean, "
                    "missing_indicator: true}"))


def test_adding_impute_reuses_entries_and_gives_the_bytes_of_a_fresh_run(tmp_path):
    assert IMPUTED != SPEC and IMPUTED.count("impute") == 2
    files = days(tmp_path / "data", [1, 2])
    cache = tmp_path / "cache"
    run(tmp_path, files, str(tmp_path / "cold"), "--cache_dir", str(cache))
    assert last_run(cache)["misses"] == 2
    warm = run(tmp_path, files, str(tmp_path / "warm"), "--cache_dir", str(cache), spec=IMPUTED)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (2, 0)
    assert_same_bytes(run(tmp_path, files, str(tmp_path / "fresh"), spec=IMPUTED), warm)


def test_median_needs_the_sketch_and_invalidates_only_without_num_buckets(tmp_path):
    from beam_prep.io.inputs.readers import Split
    from tests.analyzers.test_cache import _cached_fn, _spec, _status, write_day

    split = Split(str(write_day(tmp_path / "d.csv", 3)), "csv")
    cache = tmp_path / "cache"
    twice = "{name: twice, kind: numeric, expr: \"price * 2\"}"
    price = "{name: price, kind: numeric, num_buckets: 4}"
    assert twice in SPEC and price in SPEC
    assert _status(_cached_fn(_spec(), cache), split) == ["miss"]
    for old, new, status in [
            (twice, twice[:-1] + ", impute: mean}", "hit"),            # post-merge
            (twice, twice[:-1] + ", impute: median}", "miss"),         # a sketch now
            (price, price[:-1] + ", impute: median}", "hit")]:         # the same sketch
        spec = _spec(SPEC.replace(old, new))
        assert _status(_cached_fn(spec, cache), split) == [status], new
