"""`beam-prep diff` and `beam-prep report` on the imputed value (`impute`).

Directories come from the real analyzer (tests/diff/builders.py); the expected values are
computed here from the raw rows (numpy mean of the observed prices; Counter for the most
frequent country, ties by bytes descending).
"""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from beam_prep import cli
from beam_prep.diff import diff_artifacts, render_json, render_table
from beam_prep.report import render_report
from tests.diff.builders import analyze_rows, make_rows
from tests.report.htmlcheck import Page

SPEC = """
features:
  - {name: country, kind: string, impute: most_frequent, missing_indicator: true}
  - {name: price, kind: numeric, num_buckets: 4, default_value: mean}
  - {name: user, kind: hashed, num_bins: 8}
"""
N = 1500


def _with_missing(raw):
    for i in range(0, len(raw.country), 17):
        raw.country[i] = None
    for i in range(3, len(raw.price), 13):
        raw.price[i] = None
    return raw


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("imputed_diff"))
    old = analyze_rows(root, "old", _with_missing(make_rows(N, 1)), spec=SPEC)
    drift = analyze_rows(root, "drift", _with_missing(
        make_rows(N, 2, dominant="ZZ", dominant_share=0.6, mean=16.0)), spec=SPEC)
    same = analyze_rows(root, "same", _with_missing(make_rows(N, 1)), spec=SPEC)
    return {"old": old, "drift": drift, "same": same}


def _top(values):
    counts = collections.Counter(v for v in values if v is not None)
    return sorted(counts, key=lambda t: (-counts[t], [-b for b in t.encode()] + [1]))[0]


def _observed(values):
    return np.array([v for v in values if v is not None])


def test_imputed_values_and_their_drift_match_the_raw_rows(dirs):
    old, new = dirs["old"], dirs["drift"]
    report = diff_artifacts(old.path, new.path)
    by_name = {f.name: f for f in report.features}
    country, price = by_name["country"].imputed, by_name["price"].imputed
    assert (country.old, country.new) == (_top(old.country), _top(new.country)) == ("US", "ZZ")
    assert country.changed and country.strategy == "most_frequent"
    a, b = _observed(old.price), _observed(new.price)
    assert price.old == pytest.approx(a.mean(), rel=1e-12)
    assert price.new == pytest.approx(b.mean(), rel=1e-12)
    assert price.shift == pytest.approx((b.mean() - a.mean()) / a.std(), rel=1e-9)
    metrics = {(f.feature, f.metric) for f in report.flags}
    assert {("country", "imputed_changed"), ("price", "imputed_shift")} <= metrics
    assert by_name["user"].imputed is None
    table = render_table(report)
    assert "Imputed values" in table and "'US' -> 'ZZ'" in table
    doc = json.loads(render_json(report))
    entries = {f["name"]: f for f in doc["features"]}
    assert entries["country"]["imputed"]["new"] == "ZZ"
    assert "imputed" not in entries["user"]  # features without impute: no key


def test_same_data_raises_no_imputed_flag(dirs, capsys):
    report = diff_artifacts(dirs["old"].path, dirs["same"].path)
    assert report.flags == []
    assert cli.main(["diff", dirs["old"].path, dirs["same"].path, "--fail_on_drift"]) == 0
    assert "Imputed values" in capsys.readouterr().out


def test_report_names_the_imputed_value_and_the_indicator(dirs):
    old = dirs["old"]
    html = render_report(old.path)
    assert not Page(html).errors
    mean = _observed(old.price).mean()
    assert f"filled with the mean of the observed values: {mean:.6g}" in html
    assert "filled with the most frequent value (top of the vocabulary): &#x27;US&#x27;" in html
    assert "&#x27;country_missing&#x27; is 1 where the value is missing" in html
    assert html.count("filled with") == 2  # only the features with impute
