"""`beam-prep diff` on artifact directories made by the real analyzer from small CSVs.

Planted drift (a new dominant token, a mean shifted by ~3 std) must be named; the numbers are
checked against oracles computed here from the raw rows (tests/diff/oracles.py, numpy).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from beam_prep import cli
from beam_prep.diff import diff_artifacts, render_json, render_table
from beam_prep.diff.cli import DRIFT_EXIT_CODE
from beam_prep.errors import SpecError
from tests.diff import oracles
from tests.diff.builders import SPEC_WITH_CITY, Raw, analyze_rows, make_rows

N = 2000


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("diff"))
    old = analyze_rows(root, "old", make_rows(N, 1))
    drift = analyze_rows(root, "drift", make_rows(N, 2, dominant="ZZ", dominant_share=0.3,
                                                  mean=16.0, drop=("x,y",)))
    same = analyze_rows(root, "same", make_rows(N, 3))
    hostile = analyze_rows(root, "hostile_old", Raw([None] * 40, [None] * 40))
    city = analyze_rows(root, "with_city", make_rows(N, 4), spec=SPEC_WITH_CITY,
                        city=[f"c{i % 3}" for i in range(N)])
    return {"old": old, "drift": drift, "same": same, "hostile": hostile, "city": city}


def _feature(report, name):
    return next(f for f in report.features if f.name == name)


def test_planted_drift_is_named_with_oracle_values(dirs):
    old, new = dirs["old"], dirs["drift"]
    report = diff_artifacts(old.path, new.path)
    country = _feature(report, "country").vocab
    oc, nc = oracles.counter(old.country), oracles.counter(new.country)
    assert country.top_added == [("ZZ", nc["ZZ"])]
    assert country.top_dropped == [("x,y", oc["x,y"])]
    assert country.jsd == pytest.approx(oracles.jsd(oc, nc), abs=1e-12)
    assert country.oov_share == pytest.approx(oracles.oov_share(oc, nc), abs=1e-15)
    assert country.index_changed_share == pytest.approx(oracles.index_changed(oc, nc))
    price = _feature(report, "price").numeric
    o = np.asarray(old.price, dtype=np.float64)
    n = np.asarray(new.price, dtype=np.float64)
    assert price.mean_shift == pytest.approx((n.mean() - o.mean()) / o.std(), rel=1e-9)
    assert price.std_shift == pytest.approx((n.std() - o.std()) / o.std(), rel=1e-9, abs=1e-12)
    assert 2.5 < price.mean_shift < 3.5
    by_metric = {(f.feature, f.metric): f for f in report.flags}
    assert {("country", "jsd"), ("country", "oov_share"), ("price", "mean_shift"),
            ("price", "boundary_shift")} <= set(by_metric)
    assert "'ZZ'" in by_metric["country", "jsd"].message
    assert ("price", "std_shift") not in by_metric
    text = render_table(report)
    assert "'ZZ'" in text and "DRIFT:" in text and "user (hashed: nothing to compare)" in text


def test_boundary_shift_is_read_from_both_manifests(dirs):
    old, new = dirs["old"], dirs["drift"]
    ob = json.load(open(f"{old.path}/manifest.json"))["features"]["price"]["stats"]
    nb = json.load(open(f"{new.path}/manifest.json"))["features"]["price"]["stats"]
    expected = max(abs(a - b) for a, b in zip(ob["boundaries"], nb["boundaries"]))
    shift = _feature(diff_artifacts(old.path, new.path), "price").numeric.boundary_shift
    assert shift == pytest.approx(expected / np.std(np.asarray(old.price)), rel=1e-9)


def test_same_distribution_raises_no_flag(dirs, capsys):
    report = diff_artifacts(dirs["old"].path, dirs["same"].path)
    assert report.flags == [] and report.spec_changes == ()
    code = cli.main(["diff", dirs["old"].path, dirs["same"].path, "--fail_on_drift"])
    assert code == 0 and "No drift flag raised." in capsys.readouterr().out


def test_fail_on_drift_exit_code_and_json(dirs, capsys):
    old, new = dirs["old"].path, dirs["drift"].path
    assert cli.main(["diff", old, new]) == 0
    capsys.readouterr()
    assert cli.main(["diff", old, new, "--fail_on_drift", "--json"]) == DRIFT_EXIT_CODE == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "beam_prep.diff" and doc["drift"] is True
    assert {"jsd", "mean_shift"} <= {f["metric"] for f in doc["flags"]}
    loose = ["--max_jsd", "1", "--max_oov_share", "1", "--max_size_change", "10",
             "--max_top_k_index_changed", "1", "--max_mean_shift", "100",
             "--max_boundary_shift", "100"]
    assert cli.main(["diff", old, new, "--fail_on_drift", *loose]) == 0


def test_different_specs_are_refused_naming_the_features(dirs, capsys):
    with pytest.raises(SpecError, match=r"features differ: \['city'\].*--allow_spec_change"):
        diff_artifacts(dirs["old"].path, dirs["city"].path)
    assert cli.main(["diff", dirs["old"].path, dirs["city"].path]) == 1
    assert "['city']" in capsys.readouterr().err


def test_hostile_old_empty_vocabulary_null_statistics_feature_only_in_new(dirs):
    old, new = dirs["hostile"], dirs["city"]
    report = diff_artifacts(old.path, new.path, allow_spec_change=True)
    assert report.spec_changes == ("city",)
    assert _feature(report, "city").status == "only_in_new"
    country = _feature(report, "country").vocab
    assert (country.old_size, country.jsd, country.index_changed_share) == (0, None, None)
    assert country.oov_share == 1.0 and country.new_size == len(oracles.counter(new.country))
    price = _feature(report, "price").numeric
    assert price.old_mean is None and price.mean_shift is None and price.boundary_shift is None
    assert price.missing_rate_change == -1.0
    assert {f.metric for f in report.flags} == {"oov_share", "size_change",
                                                 "missing_rate_change"}
    json.loads(render_json(report))              # finite values only (allow_nan=False)
    assert "city (string: only in new)" in render_table(report)
    reverse = diff_artifacts(new.path, old.path, allow_spec_change=True)
    assert _feature(reverse, "city").status == "only_in_old"
    assert _feature(reverse, "country").vocab.dropped == country.new_size
    assert _feature(reverse, "price").numeric.missing_rate_change == 1.0
