"""Derived features in the analysis: statistics and vocabularies of `expr:` features.

Oracles are written here independently: numpy for the numbers, plain Python string
operations for the strings (ASCII case mapping and whitespace, the cross escaping of
docs/expressions.md), collections.Counter for the counts.
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from beam_prep.pipelines import analyze

from beam_prep import Artifacts

N = 1200
SPEC = """
features:
  - {name: ratio, kind: numeric, expr: "price / (qty + 1)", num_buckets: 4}
  - {name: log_price, kind: numeric, expr: "log1p(price)"}
  - {name: city, kind: string, expr: "lower(strip(town))"}
  - {name: country_year, kind: string, expr: "cross(country, str(year))"}
  - {name: tags, kind: string, expr: "split(tag_text, '|')"}
  - {name: price, kind: numeric}
"""
ASCII_SPACE = " \t\n\v\f\r"


def _rows(seed: int = 3) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    towns = [" Berlin ", "berlin", "PARIS", "Paris\t", "ÉCOLE", "  ", "Köln", "a b"]
    countries = ["DE", "FR", "a|b", "x\\y", "Ξ"]
    tag_pool = ["red|blue", "blue", "|green||red|", "||", "yellow|red"]
    price = [float(v) for v in np.round(rng.lognormal(1.0, 1.0, N), 3)]
    price[7] = None
    qty = [int(v) for v in rng.integers(0, 9, N)]
    qty[9] = None
    return {"price": price, "qty": qty,
            "town": [towns[i] for i in rng.integers(0, len(towns), N)],
            "country": [countries[i] for i in rng.integers(0, len(countries), N)],
            "year": [int(v) for v in rng.integers(2019, 2024, N)],
            "tag_text": [tag_pool[i] for i in rng.integers(0, len(tag_pool), N)]}


def _ascii_lower(s: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("|", "\\|")


def _vocab(values) -> list[str]:
    counts = collections.Counter(v for v in values if v is not None)
    order = sorted(counts.items(), key=lambda tc: (-tc[1], [-b for b in tc[0].encode()] + [1]))
    return [t for t, _ in order]


@pytest.fixture(scope="module")
def rows():
    return _rows()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_derived_statistics_and_vocabularies_equal_oracles(tmp_path, rows, fmt):
    table = pa.table({"price": pa.array(rows["price"], pa.float64()),
                      "qty": pa.array(rows["qty"], pa.int64()),
                      "town": rows["town"], "country": rows["country"],
                      "year": pa.array(rows["year"], pa.int64()), "tag_text": rows["tag_text"]})
    data = tmp_path / f"data.{fmt}"
    if fmt == "csv":
        pcsv.write_csv(table, str(data))
    else:
        pq.write_table(table, str(data), row_group_size=500)
    (tmp_path / "spec.yaml").write_text(SPEC)
    out = tmp_path / "out"
    analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", str(data),
                 "--output", str(out), "--batch_size", "256"])
    art = Artifacts(str(out), verify=True)

    price = np.array([np.nan if p is None else p for p in rows["price"]])
    qty = np.array([np.nan if q is None else q for q in rows["qty"]], dtype=np.float64)
    ratio = price / (qty + 1)
    kept = ratio[~np.isnan(ratio)]
    s = art.stats("ratio")
    assert s["count"] == kept.size == N - 2 and s["missing_count"] == 2
    assert s["mean"] == pytest.approx(kept.mean(), rel=1e-9)
    assert s["variance"] == pytest.approx(kept.var(), rel=1e-9)
    assert (s["min"], s["max"]) == (kept.min(), kept.max())
    logs = np.log1p(price[~np.isnan(price)])
    s = art.stats("log_price")
    assert s["count"] == N - 1 and s["missing_count"] == 1
    assert s["mean"] == pytest.approx(logs.mean(), rel=1e-9)
    assert s["variance"] == pytest.approx(logs.var(), rel=1e-9)

    cities = [_ascii_lower(t.strip(ASCII_SPACE)) or None for t in rows["town"]]
    assert art.vocabulary("city") == _vocab(cities)
    assert art.stats("city")["missing_count"] == cities.count(None) > 0
    assert "école" not in art.vocabulary("city") and "École" in art.vocabulary("city")
    crosses = [f"{_escape(c)}|{y}" for c, y in zip(rows["country"], rows["year"])]
    assert art.vocabulary("country_year") == _vocab(crosses)
    assert "a\\|b|2020" in art.vocabulary("country_year")
    tags = [t for text in rows["tag_text"] for t in text.split("|") if t]
    assert art.vocabulary("tags") == _vocab(tags)
    assert art.stats("tags")["missing_count"] == rows["tag_text"].count("||")
    assert math.isclose(art.stats("price")["mean"], float(np.nanmean(price)), rel_tol=1e-9)
