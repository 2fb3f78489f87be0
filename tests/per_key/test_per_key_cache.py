"""per_key with the analysis cache: replayed entries give the same bytes; keys change."""

from __future__ import annotations

import glob
import os

from beam_prep.analyzers.cache.key import ReaderSettings, analysis_key
from beam_prep.spec import Spec
from tests.per_key import helpers

SPEC = "features:\n  - {name: price, kind: numeric, per_key: store}\n"


def _runs(cache: str) -> list[str]:
    return sorted(glob.glob(os.path.join(cache, "runs", "*.json")))


def test_cached_runs_replay_per_key_stats_byte_identically(tmp_path):
    import json

    rows = helpers.make_rows(n=2000, keys=30)
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    cache = str(tmp_path / "cache")
    plain = helpers.run(tmp_path, SPEC, path, "--input_split_bytes", "30000", name="plain")
    first = helpers.run(tmp_path, SPEC, path, "--input_split_bytes", "30000", "--cache_dir",
                        cache, name="first")
    second = helpers.run(tmp_path, SPEC, path, "--input_split_bytes", "30000", "--cache_dir",
                         cache, "--vocab_partitions", "5", name="second")
    records = [json.load(open(p)) for p in _runs(cache)]
    assert records[-1]["hits"] > 1 and records[-1]["misses"] == 0
    assert glob.glob(os.path.join(cache, "entries", "*", "*", "per_key-000.arrow"))
    for out in (first, second):
        for rel in ("per_key/price.jsonl", "manifest.json"):
            with open(os.path.join(plain, rel), "rb") as a, open(os.path.join(out, rel),
                                                                 "rb") as b:
                assert a.read() == b.read(), (out, rel)


def test_cache_key_changes_with_per_key():
    settings = ReaderSettings("csv", batch_size=1024)

    def key(extra: str) -> str:
        text = "features:\n  - {name: price, kind: numeric" + extra + "}\n"
        return analysis_key(Spec.from_yaml_text(text), settings)[0]

    keys = {key(""), key(", per_key: store"), key(", per_key: shop"),
            key(", per_key: {expr: \"str(sid)\"}"), key(", per_key: {expr: \"str(sid2)\"}")}
    assert len(keys) == 5
    # per_key_count is read from the merged statistics: it reuses every entry
    assert key(", per_key: store, per_key_count: true") == key(", per_key: store")
    # a spec without per_key keeps its key (and its canonical spec) unchanged
    assert "per_key" not in Spec.from_yaml_text(
        "features:\n  - {name: price, kind: numeric}\n").to_dict()["features"][0]


def test_per_key_and_label_vocabularies_share_cache_entries(tmp_path):
    rows = helpers.make_rows(n=1500, keys=20)
    rows["y"] = [i % 2 for i in range(1500)]
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    spec = ("features:\n  - {name: price, kind: numeric, per_key: store}\n"
            "  - {name: shop, kind: string, column: store, labels: y}\n")
    cache = str(tmp_path / "cache")
    plain = helpers.run(tmp_path, spec, path, name="plain")
    helpers.run(tmp_path, spec, path, "--cache_dir", cache, name="first")
    again = helpers.run(tmp_path, spec, path, "--cache_dir", cache, name="again")
    labels = [os.path.relpath(p, plain) for p in glob.glob(os.path.join(plain, "vocab", "shop*"))]
    assert "vocab/shop.mutual_info.jsonl" in labels  # the label vocabulary, replayed too
    for rel in ("per_key/price.jsonl", "manifest.json", *labels):
        with open(os.path.join(plain, rel), "rb") as a, open(os.path.join(again, rel), "rb") as b:
            assert a.read() == b.read(), rel
