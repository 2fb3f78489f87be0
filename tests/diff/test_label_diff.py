"""`beam-prep diff` of label-aware vocabularies: top tokens by score and label shares.

Oracles: the raw columns (label shares with collections.Counter, scores with the
from-scratch MI oracle of tests/analyzers/test_label_vocab.py).
"""

from __future__ import annotations

import collections
import json

import pytest

from beam_prep.diff.compare import diff_artifacts
from beam_prep.diff.render import render_json, render_table
from tests.analyzers.test_label_vocab import oracle
from tests.label_artifacts import make_labeled_dir


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("label_diff")
    old = make_labeled_dir(str(root / "old"), seed=1, positive=0.2)
    new = make_labeled_dir(str(root / "new"), seed=2, positive=0.45)
    return old, new


def _share(labels: list[int], value: int) -> float:
    return collections.Counter(labels)[value] / len(labels)


def test_label_share_change_is_measured_and_flagged(pair):
    (old, old_cols), (new, new_cols) = pair
    report = diff_artifacts(old, new)
    city = next(f for f in report.features if f.name == "city")
    m = city.mutual_info
    assert m is not None and m.old_label_column == m.new_label_column == "clicked"
    want = abs(_share(new_cols["clicked"], 1) - _share(old_cols["clicked"], 1))
    assert m.label_share_change == pytest.approx(want, rel=1e-12)
    assert "label_share_change" in [f.metric for f in city.flags]
    for (token, score), want_top in zip(m.old_top, sorted(
            oracle(old_cols["city"], old_cols["clicked"], min_diff=0).items(),
            key=lambda kv: (-kv[1], [-b for b in kv[0].encode()]))):
        assert token == want_top[0] and score == pytest.approx(want_top[1], rel=1e-9)
    assert len(m.old_top) == report.thresholds.top_n
    plain = next(f for f in report.features if f.name == "plain")
    assert plain.mutual_info is None


def test_same_directory_has_no_label_drift_and_renders(pair):
    (old, _), _ = pair
    report = diff_artifacts(old, old)
    city = next(f for f in report.features if f.name == "city")
    assert city.mutual_info.top_overlap == 1.0 and city.mutual_info.label_share_change == 0.0
    assert not report.flags
    table = render_table(report)
    assert "city ranked by MI with 'clicked': top overlap 100.00%" in table
    assert "\x1b" not in table and "\u202e" not in table
    body = json.loads(render_json(report))
    feats = {f["name"]: f for f in body["features"]}
    assert "mutual_info" in feats["city"] and "mutual_info" not in feats["plain"]
