"""The analysed `imputed_value` on larger data, several splits: independent oracles.

mean: numpy's mean of the finite values (the manifest mean is the correctly rounded exact
mean, so within 1e-12 relative); median: the value's rank among the non-NaN values is
within the sketch's epsilon (0.01) of the middle; most_frequent: ``collections.Counter``
with the vocabulary's tie order (count descending, then bytes descending).
"""

from __future__ import annotations

import collections
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from beam_prep.pipelines import analyze

from beam_prep import Artifacts

N = 20000
SPEC = """
features:
  - {name: price, kind: numeric, impute: mean}
  - {name: price_med, kind: numeric, column: price, impute: median}
  - {name: city, kind: string, impute: most_frequent, top_k: 3}
  - {name: item, kind: integer, default_value: most_frequent}
  - {name: plain, kind: numeric, column: price}
"""


def _data(seed: int = 7):
    rng = np.random.default_rng(seed)
    price = rng.lognormal(2.0, 1.5, N)
    price[rng.random(N) < 0.1] = np.nan
    price_list = [None if i % 23 == 0 else float(v) for i, v in enumerate(price)]
    cities = [None if i % 31 == 0 else c for i, c in
              enumerate(rng.choice(["Oslo", "Rome", "Lima", "Kyiv"], N, p=[.3, .3, .2, .2]))]
    # 5 and 6 are made to tie exactly: the vocabulary orders "6" before "5" (bytes desc).
    rest = rng.choice([0, 1, 2, 3, 4, 7, 8, 9], N - 10000)
    items = [5] * 5000 + [6] * 5000 + [int(v) for v in rest]
    items = [None if i >= 10000 and i % 29 == 0 else v for i, v in enumerate(items)]
    return price_list, cities, items


def test_imputed_values_on_many_splits(tmp_path):
    price, cities, items = _data()
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"price": pa.array(price, pa.float64()), "city": cities,
                             "item": pa.array(items, pa.int64())}), str(path),
                   row_group_size=1500)
    (tmp_path / "spec.yaml").write_text(SPEC)
    outs = []
    for i, extra in enumerate((["--parquet_rows_per_split", "1500", "--batch_size", "700"],
                               ["--parquet_rows_per_split", "1500", "--batch_size", "4096"],
                               [])):
        out = tmp_path / f"out{i}"
        analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", str(path),
                     "--output", str(out), *extra])
        outs.append(out)
    # The batch size changes nothing; the split plan changes neither the mean nor the most
    # frequent value (the sketch's median may move within its epsilon).
    assert (outs[0] / "manifest.json").read_bytes() == (outs[1] / "manifest.json").read_bytes()
    art = Artifacts(str(outs[0]))
    one = Artifacts(str(outs[2]))
    for name in ("price", "city", "item"):
        assert one.stats(name)["imputed_value"] == art.stats(name)["imputed_value"]
    observed = np.array([p for p in price if p is not None and np.isfinite(p)])
    assert abs(art.stats("price")["imputed_value"] - observed.mean()) <= 1e-12 * observed.mean()
    med = art.stats("price_med")["imputed_value"]
    non_nan = np.sort(np.array([p for p in price if p is not None and not np.isnan(p)]))
    for m in (med, one.stats("price_med")["imputed_value"]):
        rank = np.searchsorted(non_nan, m, side="left")
        assert abs(rank - non_nan.size / 2) <= 0.01 * non_nan.size
    assert abs(med - np.median(non_nan)) < 0.05 * np.median(non_nan)
    counts = collections.Counter(c for c in cities if c is not None)
    top = sorted(counts, key=lambda t: (-counts[t], [-b for b in t.encode()] + [1]))[0]
    assert art.stats("city")["imputed_value"] == top == art.vocabulary("city")[0]
    icounts = collections.Counter(v for v in items if v is not None)
    itop = sorted(icounts, key=lambda v: (-icounts[v], [-b for b in str(v).encode()] + [1]))[0]
    assert icounts[5] == icounts[6] and itop == 6
    assert art.stats("item")["imputed_value"] == itop
    # The end-of-run summary names them (control characters escaped by repr).
    from beam_prep.analyzers.pipeline import summarize

    lines = {line.split()[0]: line for line in summarize(art.manifest).splitlines()[1:]}
    assert lines["city"].endswith(f", imputed {str(top)!r}")
    assert lines["item"].endswith(f", imputed {itop!r}")
    assert lines["price"].endswith(f", imputed {observed.mean():.6g}")
    assert "imputed" not in lines["plain"]
    # A feature without impute records nothing new.
    assert "imputed_value" not in art.stats("plain") and "quartiles" not in art.stats("plain")
    spec = {f["name"]: f for f in json.loads((outs[0] / "manifest.json").read_text())["spec"]
            ["features"]}
    assert "impute" not in spec["plain"] and spec["item"]["impute"] == "most_frequent"


PLAIN = """
features:
  - {name: price, kind: numeric, num_buckets: 4}
  - {name: city, kind: string, top_k: 3}
  - {name: item, kind: integer}
"""
WITH_FIELDS = """
features:
  - {name: price, kind: numeric, num_buckets: 4, impute: mean, missing_indicator: true}
  - {name: city, kind: string, top_k: 3, impute: most_frequent}
  - {name: item, kind: integer, default_value: most_frequent, missing_indicator: true}
"""


def test_the_fields_only_add_to_the_manifest(tmp_path):
    """With the fields removed again (spec entries, imputed_value), the manifest is the one
    of the spec without them: nothing else the analysis writes changes."""
    price, cities, items = _data(3)
    n = 3000
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"price": pa.array(price[:n], pa.float64()), "city": cities[:n],
                             "item": pa.array(items[:n], pa.int64())}), str(path))
    manifests = []
    for i, spec in enumerate((PLAIN, WITH_FIELDS)):
        (tmp_path / f"s{i}.yaml").write_text(spec)
        analyze.run(["--spec", str(tmp_path / f"s{i}.yaml"), "--input", str(path),
                     "--output", str(tmp_path / f"o{i}")])
        manifests.append(json.loads((tmp_path / f"o{i}" / "manifest.json").read_text()))
    plain, with_fields = manifests
    for f in with_fields["spec"]["features"]:
        f.pop("impute", None)
        f.pop("missing_indicator", None)
    for entry in with_fields["features"].values():
        assert "imputed_value" in entry["stats"]
        del entry["stats"]["imputed_value"]
    for m in manifests:
        del m["fingerprint"]
    assert with_fields == plain
    assert (tmp_path / "o0" / "vocab" / "city.txt").read_bytes() == \
        (tmp_path / "o1" / "vocab" / "city.txt").read_bytes()
