"""Per-key statistics of the analysis against a numpy group-by oracle; determinism."""

from __future__ import annotations

import os

import numpy as np
import pytest

from beam_prep import Artifacts
from beam_prep.io.contract.per_key_file import read_per_key
from tests.per_key import helpers

SPEC = """
features:
  - {name: price, kind: numeric, per_key: store}
  - {name: price_mm, kind: numeric, column: price, scaling: min_max, per_key: {expr: "str(sid)"}}
  - {name: plain, kind: numeric, column: price}
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("perkey")
    rows = helpers.make_rows()
    path = str(tmp / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    return rows, path


def _table(out: str, name: str):
    art = Artifacts(out, verify=True)
    return art, read_per_key(art, name)


def test_per_key_stats_match_a_groupby_oracle_and_hostile_keys_round_trip(tmp_path, data):
    rows, path = data
    out = helpers.run(tmp_path, SPEC, path)
    art, table = _table(out, "price")
    want = helpers.oracle(rows["store"], rows["price"])
    assert table.keys == sorted(want, key=lambda k: k.encode("utf-8"))
    for i, k in enumerate(table.keys):
        got = (int(table.count[i]), table.mean[i], table.variance[i], table.minimum[i],
               table.maximum[i])
        assert got == want[k], k
    assert set(helpers.HOSTILE_KEYS) <= set(table.keys)
    assert art.stats("price")["key_count"] == len(want)
    from beam_prep.analyzers.pipeline import summarize

    assert f" {len(want)} keys" in summarize(art.manifest)
    entry = art.manifest["features"]["price"]["files"]["per_key"]
    assert entry["path"] == "per_key/price.jsonl"
    assert os.path.getsize(os.path.join(out, entry["path"])) == entry["bytes"]
    # one key per line: no raw line break inside a line
    text = open(os.path.join(out, entry["path"]), encoding="utf-8").read()
    assert text.count("\n") == len(want) and len(text.splitlines()) == len(want)
    # the expression key: str(sid)
    _, by_sid = _table(out, "price_mm")
    want_sid = helpers.oracle([str(s) for s in rows["sid"]], rows["price"])
    assert by_sid.keys == sorted(want_sid)
    assert [int(c) for c in by_sid.count] == [want_sid[k][0] for k in by_sid.keys]
    # global statistics unchanged by per_key
    assert {k: v for k, v in art.stats("price").items() if k != "key_count"} == \
        art.stats("plain")


def test_bytes_do_not_depend_on_batches_splits_or_partitions(tmp_path, data):
    _, path = data
    a = helpers.run(tmp_path, SPEC, path, "--batch_size", "4096", name="a")
    b = helpers.run(tmp_path, SPEC, path, "--batch_size", "37", "--vocab_partitions", "7",
                    "--input_split_bytes", "20000", name="b")
    for rel in ("per_key/price.jsonl", "per_key/price_mm.jsonl"):
        with open(os.path.join(a, rel), "rb") as fa, open(os.path.join(b, rel), "rb") as fb:
            assert fa.read() == fb.read(), rel
    # the manifest differs in input.splits only
    ma, mb = Artifacts(a).manifest, Artifacts(b).manifest
    assert ma["features"] == mb["features"]
    assert ma["input"]["splits"] < mb["input"]["splits"]


def test_a_key_holding_every_row_has_the_global_mean_and_variance(tmp_path):
    rng = np.random.default_rng(3)
    rows = {"price": rng.normal(1e6, 3.0, 500).tolist(), "store": ["only"] * 500}
    path = str(tmp_path / "one.jsonl")
    helpers.write_jsonl(rows, path)
    out = helpers.run(tmp_path, "features:\n  - {name: price, kind: numeric, per_key: store}\n",
                      path)
    art, table = _table(out, "price")
    s = art.stats("price")
    assert table.keys == ["only"]
    assert (table.mean[0], table.variance[0], table.minimum[0], table.maximum[0]) == \
        (s["mean"], s["variance"], s["min"], s["max"])


def test_vectorised_read_out_equals_the_moments_of_each_key():
    import pyarrow as pa

    from beam_prep.analyzers.per_key import stats as pks

    rng = np.random.default_rng(1)
    n = 20000
    keys = pa.array([f"k{i}" for i in rng.integers(0, 500, n)])
    values = rng.lognormal(0, 4, n) * rng.choice([-1, 1], n)
    values[:40] = rng.choice([1e-300, 5e-320, 1e200, -3e300, 0.0, 1e300], 40)  # slow path
    stats = pks.merge([pks.batch_stats(keys.slice(i, 3000), values[i:i + 3000])
                       for i in range(0, n, 3000)])
    means, variances = pks.means_and_variances(stats)
    for i in range(len(stats)):
        m = pks.moments(stats, i)
        assert (m.mean, m.variance) == (means[i], variances[i])


def test_a_bare_per_key_is_a_column_name_even_when_it_looks_like_an_expression(tmp_path):
    from beam_prep.spec import Spec

    spec = Spec.from_yaml_text(
        'features:\n  - {name: price, kind: numeric, per_key: "str(a+b)"}\n')
    assert spec.features[0].input_columns() == {"price": "float", "str(a+b)": "string"}
    rows = {"price": [1.0, 3.0, 10.0], "str(a+b)": ["x", "x", "y"]}
    path = str(tmp_path / "odd.jsonl")
    helpers.write_jsonl(rows, path)
    out = helpers.run(tmp_path, 'features:\n  - {name: price, kind: numeric, '
                      'per_key: "str(a+b)"}\n', path)
    _, table = _table(out, "price")
    assert table.keys == ["x", "y"] and table.mean.tolist() == [2.0, 10.0]
