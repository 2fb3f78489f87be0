"""The analysis cache with label-aware vocabularies: replayed label tables, and the key.

Oracle: a run without ``--cache_dir`` over the same files (every artifact byte-identical).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from beam_prep.analyzers.cache.key import ReaderSettings, analysis_key
from beam_prep.spec import Spec
from tests.analyzers.test_cache import assert_same_bytes, days, last_run, run

SPEC = """
features:
  - {name: city, kind: string, labels: item_id, min_diff_from_avg: 0}
  - {name: words, kind: text, column: note}
  - {name: price, kind: numeric}
  - {name: plain_city, column: city, kind: string}
"""


# default suite time; the label vocabulary's replay is byte-compared in the share test of
# tests/per_key/test_per_key_cache.py, and test_replay_emits_the_label_table_of_the_split
@pytest.mark.slow
def test_cold_and_warm_cache_replay_label_tables(tmp_path):
    files = days(tmp_path / "data", [1, 2])
    cache = tmp_path / "cache"
    plain = run(tmp_path, files, str(tmp_path / "plain"), spec=SPEC)
    cold = run(tmp_path, files, str(tmp_path / "cold"), "--cache_dir", str(cache), spec=SPEC)
    assert_same_bytes(plain, cold)
    warm = run(tmp_path, files, str(tmp_path / "warm"), "--cache_dir", str(cache), spec=SPEC)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (2, 0)
    assert_same_bytes(plain, warm)
    assert (warm / "vocab" / "city.mutual_info.jsonl").stat().st_size > 0
    assert len(list((cache / "entries").glob("*/*/labels-000.arrow"))) == 2


def _key(text: str) -> tuple[str, dict]:
    return analysis_key(Spec.from_yaml_text(text), ReaderSettings("csv", 50))


@pytest.mark.parametrize("change, invalidates", [
    ("labels: y", False),
    ("labels: y, adjusted_mutual_info: true", False),   # applied when scoring
    ("labels: y, min_diff_from_avg: 7, min_mutual_info: 0.1, top_k: 3", False),
    ("labels: z", True),                                # another label column is counted
    ("labels: y, default_value: none", True),           # fills cells before counting
])
def test_labels_change_the_cache_key_and_scoring_options_do_not(change, invalidates):
    base = "features:\n  - {name: c, kind: string, labels: y}\n"
    whole, per_feature = _key(base)
    new_whole, new_per_feature = _key(base.replace("labels: y", change))
    assert (new_whole != whole) == invalidates
    assert (new_per_feature["c"] != per_feature["c"]) == invalidates


def test_adding_labels_changes_the_key():
    assert (_key("features:\n  - {name: c, kind: string}\n")[0]
            != _key("features:\n  - {name: c, kind: string, labels: y}\n")[0])


def test_replay_emits_the_label_table_of_the_split(tmp_path):
    from beam_prep.analyzers.cache.fn import CachedAnalyzeSplitFn
    from beam_prep.analyzers.split_fn import AnalyzeSplitFn
    from beam_prep.io.inputs.readers import Split

    spec = Spec.from_yaml_text(SPEC)
    split = Split(str(days(tmp_path / "data", [3])[0]), "csv")

    def labels_of(cache: Path) -> list:
        inner = AnalyzeSplitFn(spec.to_dict(), batch_size=50, num_partitions=3)
        fn = CachedAnalyzeSplitFn(inner, spec.to_dict(), str(cache), ReaderSettings("csv", 50),
                                  num_partitions=3)
        fn.setup()
        return [o.value for o in fn.process(split) if getattr(o, "tag", None) == "labels"]

    def rows(outputs: list) -> list:  # partitions and their rows, in order
        return sorted((name, part, *row) for (name, part), table in outputs
                      for row in zip(*(table.column(c).to_pylist()
                                       for c in ("token", "label", "count"))))

    fresh = labels_of(tmp_path / "cache")
    replayed = labels_of(tmp_path / "cache")
    assert {n for (n, _), _ in fresh} == {"city"}
    assert rows(fresh) == rows(replayed) and len(rows(fresh)) > 10


@pytest.mark.slow  # three pipeline runs, two in worker processes (~1 min)
def test_two_worker_processes_give_the_label_vocabulary_bytes_of_one_process(tmp_path):
    files = days(tmp_path / "data", [1, 2, 3, 4])
    cache = tmp_path / "cache"
    multi = ("--direct_running_mode=multi_processing", "--direct_num_workers=2",
             "--cache_dir", str(cache))
    plain = run(tmp_path, files, str(tmp_path / "plain"), spec=SPEC)
    cold = run(tmp_path, files, str(tmp_path / "cold"), *multi, spec=SPEC)
    warm = run(tmp_path, files, str(tmp_path / "warm"), *multi, spec=SPEC)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (4, 0)
    assert_same_bytes(plain, cold)
    assert_same_bytes(plain, warm)
