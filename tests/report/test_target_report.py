"""The target-encoding part of the HTML report (oracle: the raw rows)."""

from __future__ import annotations

import json
from collections import Counter

from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from beam_prep.report.analysis import render_analysis
from beam_prep.report.page import fmt_num

EVIL = "<script>x</script>"


def test_report_shows_totals_and_the_largest_tokens_escaped(tmp_path):
    cities = ["a"] * 30 + ["b"] * 20 + [EVIL] * 25 + [f"z{i}" for i in range(15)]
    rows = [{"c": c, "u": i, "y": float(i % 3 == 0)} for i, c in enumerate(cities)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text("features:\n  - {name: c, kind: string, "
                                     "target_encoding: {labels: y, fold_column: u, folds: 4}}\n")
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                 "--output", str(tmp_path / "art"), "--quiet"])
    html = render_analysis(Artifacts(str(tmp_path / "art")))
    assert "target encoding (10 tokens with the most labelled rows)" in html
    assert fmt_num(sum(r["y"] for r in rows) / len(rows)) in html  # the global mean
    assert f"{len(rows):,} (per fold:" in html
    for _tok, n in Counter(cities).most_common(3):
        assert f"{n:,} rows, encoding" in html
    assert EVIL not in html and "&lt;script&gt;" in html
