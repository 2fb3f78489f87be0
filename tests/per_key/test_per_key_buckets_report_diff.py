"""Per-key buckets in the HTML report and in `beam-prep diff` (oracle: numpy quantiles)."""

from __future__ import annotations

import json

import pytest

from beam_prep import Artifacts, cli
from beam_prep.diff.compare import diff_artifacts
from beam_prep.report.analysis import render_analysis
from beam_prep.report.page import fmt_num
from tests.per_key import helpers
from tests.per_key.test_per_key_buckets import oracle

SPEC = "features:\n  - {name: price, kind: numeric, per_key: store, num_buckets: 4}\n"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bucket_drift")
    old = helpers.make_rows(n=1200, keys=25, seed=1)
    new = {k: list(v) for k, v in old.items()}
    # NEW: one key's values doubled, one key gone, one key new
    new["price"] = [p * 2.0 if s == "store_010" and p is not None else p
                    for p, s in zip(new["price"], new["store"])]
    new["store"] = ["brand new" if s == "store_011" else s for s in new["store"]]
    dirs = []
    for name, rows in (("old", old), ("new", new)):
        path = str(tmp / f"{name}.jsonl")
        helpers.write_jsonl(rows, path)
        dirs.append(helpers.run(tmp, SPEC, path, name=name))
    return old, new, dirs[0], dirs[1]


def test_diff_compares_per_key_boundaries(two_runs, capsys):
    old, new, a, b = two_runs
    before = oracle(old["store"], old["price"], 4)
    after = oracle(new["store"], new["price"], 4)
    (f,) = diff_artifacts(a, b).features
    d = f.per_key_buckets
    assert (d.old_keys, d.new_keys) == (len(before), len(after))
    assert (d.added, d.removed) == (1, 1)
    assert d.changed == sum(before[k] != after[k] for k in set(before) & set(after)) == 1
    o, n = before["store_010"], after["store_010"]
    assert d.top_shifted[0][0] == "store_010"
    assert d.max_boundary_shift == pytest.approx(
        max(abs(y - x) for x, y in zip(o, n)) / (o[-1] - o[0]))
    assert cli.main(["diff", a, b]) in (0, 1)
    assert "Per-key bucket boundaries" in capsys.readouterr().out
    assert cli.main(["diff", a, b, "--json"]) in (0, 1)
    body = json.loads(capsys.readouterr().out)
    assert body["features"][0]["per_key_buckets"]["changed"] == 1
    same = diff_artifacts(a, a).features[0].per_key_buckets
    assert (same.added, same.removed, same.changed) == (0, 0, 0)


def test_diff_json_of_specs_without_buckets_has_no_bucket_key(tmp_path, capsys):
    rows = helpers.make_rows(n=300, keys=20)
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    a = helpers.run(tmp_path, "features:\n  - {name: price, kind: numeric, per_key: store}\n",
                    path)
    assert cli.main(["diff", a, a, "--json"]) in (0, 1)
    assert "per_key_buckets" not in capsys.readouterr().out


def test_report_shows_per_key_boundaries(two_runs):
    old, _, a, _ = two_runs
    html = render_analysis(Artifacts(a))
    want = oracle(old["store"], old["price"], 4)
    counts = helpers.oracle(old["store"], old["price"])
    assert "per-key buckets" in html and "all exact" in html
    key = max(want, key=lambda k: (counts[k][0], [-b for b in k.encode()]))
    assert f"{counts[key][0]:,} values: " + ", ".join(fmt_num(b) for b in want[key]) in html
    assert "new\nline" not in html
