"""The analysis side of `scaling: log1p | robust | piecewise_linear` (issue 23).

* spec errors: one line naming the field, the value and the fix;
* ``stats.quartiles`` only for features that need them (``needs_quartiles``): the manifest
  of a spec without the new options keeps its keys and bytes;
* the cache key changes exactly when the accumulation does (robust without num_buckets
  adds a sketch); a warm cache gives the bytes of a run without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beam_prep.analyzers.cache.key import feature_key
from beam_prep.errors import SpecError
from beam_prep.spec import NumericFeature, Spec
from tests.analyzers.test_cache import assert_same_bytes, days, last_run, run

OLD_OPTIONS = """
features:
  - {name: city, kind: string, top_k: 4}
  - {name: price, kind: numeric, num_buckets: 4}
  - {name: raw, kind: numeric, column: price, scaling: none}
  - {name: mm, kind: numeric, column: price, scaling: min_max}
  - {name: plain, kind: numeric, column: price}
"""
NEW_OPTIONS = OLD_OPTIONS + """\
  - {name: rb, kind: numeric, column: price, scaling: robust}
  - {name: lg, kind: numeric, column: price, scaling: log1p}
  - {name: pl, kind: numeric, column: price, scaling: piecewise_linear, num_buckets: 3}
"""
# The numeric stats keys of every manifest written before issue 23 (written sorted).
STATS_KEYS = sorted(["count", "missing_count", "nan_count", "infinite_count", "mean",
                     "variance", "min", "max", "null_reasons", "boundaries", "epsilon"])


def _one_line_error(spec: dict) -> str:
    with pytest.raises(SpecError) as e:
        Spec.from_dict(spec)
    message = str(e.value)
    assert "\n" not in message
    return message


def test_piecewise_linear_without_num_buckets_names_the_field_and_the_fix():
    message = _one_line_error({"features": [
        {"name": "price", "kind": "numeric", "scaling": "piecewise_linear"}]})
    assert "`num_buckets`" in message and "piecewise_linear" in message
    assert "set num_buckets" in message and "'price'" in message


def test_unknown_scaling_lists_the_new_options():
    message = _one_line_error({"features": [
        {"name": "price", "kind": "numeric", "scaling": "log"}]})
    for option in ("'log1p'", "'robust'", "'piecewise_linear'", "Received: scaling='log'"):
        assert option in message


def test_epsilon_is_allowed_for_robust_and_sets_the_sketch():
    assert NumericFeature("x", scaling="robust", epsilon=0.001).resolved_epsilon() == 0.001
    assert NumericFeature("x", scaling="robust").resolved_epsilon() == 0.01
    message = _one_line_error({"features": [
        {"name": "x", "kind": "numeric", "scaling": "log1p", "epsilon": 0.01}]})
    assert "`epsilon`" in message and "robust" in message


def test_needs_quartiles():
    assert NumericFeature("x", scaling="robust").needs_quartiles()
    for scaling in ("z_score", "min_max", "none", "log1p"):
        assert not NumericFeature("x", scaling=scaling).needs_quartiles()
    assert not NumericFeature("x", scaling="piecewise_linear", num_buckets=4).needs_quartiles()


def test_canonical_spec_of_old_options_is_unchanged():
    spec = Spec.from_dict({"features": [{"name": "x", "kind": "numeric"}]})
    assert spec.to_dict()["features"] == [{"name": "x", "kind": "numeric", "column": None,
                                           "num_buckets": None, "epsilon": None,
                                           "default_value": None}]


def test_cache_key_changes_when_the_accumulation_does():
    z = feature_key(NumericFeature("x"))
    robust = feature_key(NumericFeature("x", scaling="robust"))
    assert z != robust and robust["epsilon"] == 0.01  # a sketch for the quartiles
    assert feature_key(NumericFeature("x", scaling="robust", epsilon=0.001)) != robust
    # log1p needs no statistic; with num_buckets, robust and piecewise_linear read the
    # sketch z_score already builds: the entries are reusable (same key).
    assert feature_key(NumericFeature("x", scaling="log1p")) == z
    z4 = feature_key(NumericFeature("x", num_buckets=4))
    assert feature_key(NumericFeature("x", scaling="robust", num_buckets=4)) == z4
    assert feature_key(NumericFeature("x", scaling="piecewise_linear", num_buckets=4)) == z4


def _manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text(encoding="utf-8"))


def test_manifest_without_new_options_keeps_its_keys_and_entries(tmp_path):
    files = days(tmp_path / "data", [1, 2])
    old = _manifest(run(tmp_path, files, str(tmp_path / "old"), spec=OLD_OPTIONS))
    new = _manifest(run(tmp_path, files, str(tmp_path / "new"), spec=NEW_OPTIONS))
    for name in ("price", "raw", "mm", "plain"):
        assert list(old["features"][name]["stats"]) == STATS_KEYS
        # Adding features that use the new options changes nothing of the others.
        assert old["features"][name] == new["features"][name]
        assert old["spec"]["features"] == new["spec"]["features"][:5]
    assert "scaling" not in old["spec"]["features"][4]
    assert list(new["features"]["rb"]["stats"]) == sorted([*STATS_KEYS, "quartiles"])
    assert new["features"]["rb"]["stats"]["epsilon"] == 0.01
    for name in ("lg", "pl"):
        assert list(new["features"][name]["stats"]) == STATS_KEYS


# default suite time; the sketch behind the quartiles is replayed in test_cache.py's
# cold/warm test (num_buckets), the key in test_cache_key_changes_when_the_accumulation_does
@pytest.mark.slow
def test_warm_cache_gives_the_quartiles_of_a_run_without_cache(tmp_path):
    files = days(tmp_path / "data", [1, 2])
    cache = tmp_path / "cache"
    plain = run(tmp_path, files, str(tmp_path / "plain"), spec=NEW_OPTIONS)
    run(tmp_path, files, str(tmp_path / "cold"), "--cache_dir", str(cache), spec=NEW_OPTIONS)
    warm = run(tmp_path, files, str(tmp_path / "warm"), "--cache_dir", str(cache),
               spec=NEW_OPTIONS)
    assert last_run(cache)["misses"] == 0
    assert_same_bytes(plain, warm)
    assert _manifest(warm)["features"]["rb"]["stats"]["quartiles"] is not None


def test_report_and_diff_show_the_quartiles(tmp_path):
    import numpy as np

    from beam_prep.diff import diff_artifacts, render_json, render_table
    from beam_prep.report import render_report
    from tests.report.htmlcheck import Page, number

    one = run(tmp_path, days(tmp_path / "a", [1]), str(tmp_path / "one"), spec=NEW_OPTIONS)
    two = run(tmp_path, days(tmp_path / "b", [2]), str(tmp_path / "two"), spec=NEW_OPTIONS)
    q1 = _manifest(one)["features"]["rb"]["stats"]["quartiles"]
    q2 = _manifest(two)["features"]["rb"]["stats"]["quartiles"]
    card = Page(render_report(str(one))).sections["rb"]
    for row, value in zip(("q25", "median", "q75"), q1):
        assert number(card[row]) == pytest.approx(value, rel=1e-5)
    assert number(card["IQR"]) == pytest.approx(q1[2] - q1[0], rel=1e-5)
    assert number(card["epsilon"]) == 0.01
    assert "median" not in Page(render_report(str(one))).sections["plain"]
    report = diff_artifacts(str(one), str(two))
    std = float(np.sqrt(_manifest(one)["features"]["rb"]["stats"]["variance"]))
    (rb,) = [f for f in report.features if f.name == "rb"]
    assert rb.numeric.quartile_shift == pytest.approx(
        max(abs(b - a) for a, b in zip(q1, q2)) / std)
    table = render_table(report)
    assert "  rb quartiles: [" in table and "plain quartiles" not in table
    features = json.loads(render_json(report))["features"]
    assert [f["numeric"]["new_quartiles"] for f in features if f["name"] == "rb"] == [q2]
