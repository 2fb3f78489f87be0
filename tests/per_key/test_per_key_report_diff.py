"""Per-key statistics in the HTML report and in `beam-prep diff` (oracle: the rows)."""

from __future__ import annotations

import json

import pytest

from beam_prep import Artifacts, cli
from beam_prep.diff.compare import diff_artifacts
from beam_prep.report.analysis import render_analysis
from tests.per_key import helpers

SPEC = "features:\n  - {name: price, kind: numeric, per_key: store}\n"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("drift")
    old = helpers.make_rows(n=1200, keys=25, seed=1)
    new = {k: list(v) for k, v in old.items()}
    # NEW: one key's values shifted by +100, one key gone, one key new
    new["price"] = [p + 100.0 if s == "store_010" and p is not None else p
                    for p, s in zip(new["price"], new["store"])]
    new["store"] = ["brand new" if s == "store_011" else s for s in new["store"]]
    dirs = []
    for name, rows in (("old", old), ("new", new)):
        path = str(tmp / f"{name}.jsonl")
        helpers.write_jsonl(rows, path)
        dirs.append(helpers.run(tmp, SPEC, path, name=name))
    return old, new, dirs[0], dirs[1]


def test_diff_counts_added_removed_and_changed_keys(two_runs, capsys):
    old, new, a, b = two_runs
    before, after = helpers.oracle(old["store"], old["price"]), helpers.oracle(
        new["store"], new["price"])
    report = diff_artifacts(a, b)
    (f,) = report.features
    d = f.per_key
    assert (d.old_keys, d.new_keys) == (len(before), len(after))
    assert d.added == len(set(after) - set(before)) == 1
    assert d.removed == len(set(before) - set(after)) == 1
    assert d.changed == sum(before[k] != after[k] for k in set(before) & set(after)) == 1
    n, mean, var, _, _ = before["store_010"]
    assert d.top_shifted[0][0] == "store_010"
    assert d.max_mean_shift == pytest.approx((after["store_010"][1] - mean) / var ** 0.5)
    assert d.top_added == (("brand new", after["brand new"][0]),)
    assert cli.main(["diff", a, b]) in (0, 1)
    out = capsys.readouterr().out
    assert "Per-key statistics" in out and "brand new" in out
    assert cli.main(["diff", a, b, "--json"]) in (0, 1)
    body = json.loads(capsys.readouterr().out)
    assert body["features"][0]["per_key"]["changed"] == 1
    # same directory: nothing changed
    same = diff_artifacts(a, a).features[0].per_key
    assert (same.added, same.removed, same.changed) == (0, 0, 0)


def test_report_shows_key_count_and_escapes_hostile_keys(two_runs):
    old, _, a, _ = two_runs
    html = render_analysis(Artifacts(a))
    want = helpers.oracle(old["store"], old["price"])
    assert f"<td>{len(want)}</td>" in html or f">{len(want)}<" in html
    assert "new\nline" not in html and "<script" not in html
    # the key with the most values is listed with its count and mean
    import html as html_mod

    key = max(want, key=lambda k: (want[k][0], [-b for b in k.encode()]))
    n, mean = want[key][0], want[key][1]
    assert f"{n:,} values, mean {mean:.6g}" in html
    assert html_mod.escape(key.replace("\n", ""))[:3] in html
