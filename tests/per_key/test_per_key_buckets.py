"""Per-key buckets (``per_key`` + ``num_buckets``): analysis against a numpy oracle,
determinism, cache, manifest checks, generated layers and transform job."""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import pyarrow as pa
import pytest

from beam_prep import Artifacts
from beam_prep.analyzers.per_key_buckets import hist as pkh
from beam_prep.errors import ArtifactError, SpecError
from beam_prep.io.contract.per_key_buckets_file import read_buckets
from beam_prep.spec import Spec
from tests.per_key import helpers

SPEC = """
features:
  - {name: price, kind: numeric, per_key: store, num_buckets: 4}
  - {name: by_sid, kind: numeric, column: price, scaling: min_max, num_buckets: 3,
     per_key: {expr: "str(sid)"}}
"""
REL = "per_key/price.buckets.jsonl"


def oracle(keys: list, values: list, num_buckets: int) -> dict[str, list[float]]:
    """key -> exact boundaries: sorted finite values at ``min(i * n // k, n - 1)``."""
    groups: dict[str, list[float]] = {}
    for k, v in zip(keys, values):
        if k is not None and k != "" and v is not None and np.isfinite(v):
            groups.setdefault(k, []).append(float(v))
    out = {}
    for k, vs in groups.items():
        x = np.sort(np.array(vs))
        n = x.size
        out[k] = [float(x[min(i * n // num_buckets, n - 1)]) for i in range(1, num_buckets)]
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pkbuckets")
    rows = helpers.make_rows(n=2500, keys=30)
    path = str(tmp / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    return rows, path, tmp


@pytest.fixture(scope="module")
def analysed(data):
    rows, path, tmp = data
    return helpers.run(tmp, SPEC, path, name="base")


def test_boundaries_per_key_equal_the_numpy_oracle_and_hostile_keys_round_trip(data,
                                                                               analysed):
    rows, _, _ = data
    art = Artifacts(analysed, verify=True)
    table = read_buckets(art, "price")
    want = oracle(rows["store"], rows["price"], 4)
    assert table.keys == sorted(want, key=lambda k: k.encode("utf-8"))
    assert set(helpers.HOSTILE_KEYS) <= set(table.keys)
    for i, k in enumerate(table.keys):
        assert table.boundaries[i].tolist() == want[k], k
        assert table.level[i] == 0  # few distinct values: exact
    by_sid = read_buckets(art, "by_sid")
    want_sid = oracle([str(s) for s in rows["sid"]], rows["price"], 3)
    assert {k: b.tolist() for k, b in zip(by_sid.keys, by_sid.boundaries)} == want_sid
    st = art.stats("price")
    assert st["bucket_key_count"] == len(want) == st["key_count"]
    entry = art.manifest["features"]["price"]["files"]["per_key_buckets"]
    assert entry["path"] == REL
    assert os.path.getsize(os.path.join(analysed, REL)) == entry["bytes"]
    text = open(os.path.join(analysed, REL), encoding="utf-8").read()
    assert text.count("\n") == len(want) == len(text.splitlines())


def test_bytes_do_not_depend_on_batches_splits_partitions_or_the_cache(data, analysed):
    _, path, tmp = data
    cache = str(tmp / "cache")
    other = helpers.run(tmp, SPEC, path, "--batch_size", "37", "--vocab_partitions", "7",
                        "--input_split_bytes", "20000", name="other")
    cold = helpers.run(tmp, SPEC, path, "--input_split_bytes", "20000", "--cache_dir", cache,
                       name="cold")
    warm = helpers.run(tmp, SPEC, path, "--input_split_bytes", "20000", "--cache_dir", cache,
                       "--vocab_partitions", "3", name="warm")
    assert glob.glob(os.path.join(cache, "entries", "*", "*", "per_key_buckets-000.arrow"))
    record = json.load(open(sorted(glob.glob(os.path.join(cache, "runs", "*.json")))[-1]))
    assert record["hits"] > 1 and record["misses"] == 0
    for out in (other, cold, warm):
        for rel in (REL, "per_key/by_sid.buckets.jsonl"):
            assert open(os.path.join(out, rel), "rb").read() == \
                open(os.path.join(analysed, rel), "rb").read(), (out, rel)
        assert Artifacts(out).manifest["features"] == Artifacts(analysed).manifest["features"]


def test_histograms_are_order_free_and_big_keys_stay_bounded_within_their_cell():
    rng = np.random.default_rng(7)
    n = 60000
    keys = pa.array([f"k{i}" for i in rng.integers(0, 6, n)] )
    values = rng.lognormal(0, 3, n) * rng.choice([-1.0, 1.0], n)
    values[:50] = np.nan
    values[50:60] = np.inf
    chunks = [pkh.batch_hist(keys.slice(i, 4000), values[i:i + 4000]) for i in range(0, n, 4000)]
    a = pkh.merge(chunks)
    order = rng.permutation(len(chunks))
    b = pkh.merge([pkh.merge([chunks[i] for i in order[:5]]),
                   pkh.merge([chunks[i] for i in order[5:]])])
    c = pkh.merge([pkh.batch_hist(keys, values)])
    d = chunks[order[0]]  # one chunk at a time into a coarse accumulator (levels differ)
    for i in order[1:]:
        d = pkh.merge([chunks[i], d])
    for other in (b, c, d):
        assert other.keys.equals(a.keys)
        for field in ("level", "offsets", "codes", "counts"):
            assert np.array_equal(getattr(other, field), getattr(a, field)), field
    assert (np.diff(a.offsets) <= pkh.MAX_BINS).all() and (a.level > 0).all()
    got = pkh.boundaries(a, 16)
    names = np.array(keys.to_pylist())
    for i, k in enumerate(a.keys.to_pylist()):
        x = np.sort(values[(names == k) & np.isfinite(values)])
        exact = x[[min(j * x.size // 16, x.size - 1) for j in range(1, 16)]]
        shift = np.uint64(a.level[i])
        # the boundary is in the grid cell of the exact quantile (the documented error)
        assert np.array_equal(pkh.sortable(got[i]) >> shift, pkh.sortable(exact) >> shift)
        assert a.level[i] <= 48  # cells narrower than 2**-4 relative
    assert int(a.key_counts().sum()) == int(np.isfinite(values).sum())


def test_manifest_check_refuses_missing_or_tampered_bucket_entries(analysed, tmp_path):
    import shutil

    from beam_prep.io.contract.manifest_check import validate_manifest

    manifest = Artifacts(analysed).manifest
    spec = Spec.from_dict(manifest["spec"])
    validate_manifest(manifest, "m.json", spec)
    for drop, what in ((("files", "per_key_buckets"), "per_key_buckets"),
                       (("stats", "bucket_key_count"), "bucket_key_count")):
        bad = json.loads(json.dumps(manifest))
        del bad["features"]["price"][drop[0]][drop[1]]
        with pytest.raises(ArtifactError, match=what):
            validate_manifest(bad, "m.json", spec)
    bad = json.loads(json.dumps(manifest))
    bad["features"]["price"]["stats"]["bucket_key_count"] = -1
    with pytest.raises(ArtifactError, match="bucket_key_count"):
        validate_manifest(bad, "m.json", spec)
    # a line edited in place (same length, sha256 skipped): the checked reader refuses it
    copy = str(tmp_path / "copy")
    shutil.copytree(analysed, copy)
    path = os.path.join(copy, REL)
    body = open(path, "rb").read()
    lines = body.split(b"\n")
    first = json.loads(lines[0])
    first[3] = first[3][::-1]  # boundaries out of order
    lines[0] = json.dumps(first, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    open(path, "wb").write(b"\n".join(lines))
    with pytest.raises(ArtifactError, match="boundaries"):
        read_buckets(Artifacts(copy, verify=False), "price")


def test_spec_accepts_per_key_num_buckets_and_the_cache_key_changes():
    from beam_prep.analyzers.cache.key import ReaderSettings, analysis_key

    def key(extra: str) -> str:
        text = "features:\n  - {name: p, kind: numeric, per_key: s" + extra + "}\n"
        return analysis_key(Spec.from_yaml_text(text), ReaderSettings("csv", 1024))[0]

    assert key(", num_buckets: 4") != key("")
    # the entry holds per-key histograms: said in the key itself (not only via epsilon)
    from beam_prep.analyzers.cache.key import feature_key

    keyed = Spec.from_yaml_text("features:\n  - {name: p, kind: numeric, per_key: s, "
                                "num_buckets: 4}\n").features[0]
    assert feature_key(keyed)["per_key_buckets"] is True
    assert key(", num_buckets: 4") == key(", num_buckets: 8")  # num_buckets: post-merge
    plain = "features:\n  - {name: p, kind: numeric, num_buckets: 4}\n"
    assert "per_key_buckets" not in json.dumps(
        analysis_key(Spec.from_yaml_text(plain), ReaderSettings("csv", 1024)))
    # scaling none: the per-key buckets alone (test_per_key_buckets_no_scaling.py) ...
    alone = ", scaling: none, num_buckets: 4"
    assert feature_key(Spec.from_yaml_text(
        "features:\n  - {name: p, kind: numeric, per_key: s" + alone + "}\n"
    ).features[0])["per_key_buckets"] is True
    with pytest.raises(SpecError, match="per_key"):  # ... and nothing without num_buckets
        Spec.from_yaml_text("features:\n  - {name: p, kind: numeric, per_key: s, "
                            "scaling: none}\n")
