"""`beam-prep report`: the run time of a fresh `analyze` (run.json beside the manifest) and a
readable numeric histogram when one bucket reaches a long tail."""

from __future__ import annotations

import json
import re
import time

import numpy as np
from beam_prep.pipelines import analyze

from beam_prep.io.contract.run_record import read_run_record
from beam_prep.report import render_report
from beam_prep.report.analysis import _numeric_card
from beam_prep.report.page import fmt_num
from beam_prep.report.svg import WIDTH
from tests.report.htmlcheck import Page


def test_fresh_analyze_records_its_run_time_outside_the_manifest(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: x, kind: numeric}\n", encoding="utf-8")
    data = tmp_path / "d.csv"
    data.write_text("x\n1\n2\n4\n", encoding="utf-8")
    out = tmp_path / "art"

    start = time.monotonic()
    assert analyze.main(["--spec", str(spec), "--input", str(data), "--output", str(out),
                         "--quiet", "--no_report"]) == 0
    wall = time.monotonic() - start

    record = read_run_record(str(out))
    assert record is not None and record["job"] == "analyze"
    assert 0 < record["seconds"] <= wall
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["finished_utc"])
    manifest = (out / "manifest.json").read_text(encoding="utf-8")
    assert "seconds" not in manifest and "finished_utc" not in manifest  # stays deterministic
    run = Page(render_report(str(out))).sections["__run__"]
    assert run["run time"] == f"{fmt_num(record['seconds'])} s, finished " \
                              f"{record['finished_utc']}"


def test_damaged_run_record_is_ignored(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"seconds": "soon"}), encoding="utf-8")
    assert read_run_record(str(tmp_path)) is None
    (tmp_path / "run.json").write_text("{", encoding="utf-8")
    assert read_run_record(str(tmp_path)) is None


def _rects(html: str) -> list[tuple[float, float]]:
    return [(float(x), float(w)) for x, w in
            re.findall(r'<rect class="bar2?" x="([-\d.]+)" y="[-\d.]+" width="([-\d.]+)"', html)]


def test_long_tail_bucket_is_cut_so_the_others_stay_readable():
    values = np.exp(np.random.default_rng(0).normal(0, 1.5, 5000))
    bounds = [float(b) for b in np.quantile(values, np.arange(1, 10) / 10)]
    st = {"count": 5000, "missing_count": 0, "nan_count": 0, "infinite_count": 0,
          "mean": float(values.mean()), "variance": float(values.var()),
          "min": float(values.min()), "max": float(values.max()), "boundaries": bounds,
          "epsilon": 0.01}
    html = _numeric_card(st, {"name": "x", "kind": "numeric", "num_buckets": 10})
    bars = _rects(html)
    assert len(bars) == 10
    plot = WIDTH - 16 - 64  # the histogram's x axis, in pixels
    inner = sum(w for _, w in bars[1:-1])
    assert inner >= 0.6 * plot  # was 5 %: the last bucket took 95 % of the width
    assert all(x + w <= WIDTH - 16 + 1e-6 for x, w in bars)  # nothing drawn past the axis
    assert f"{fmt_num(float(values.max()))} →" in html  # the cut bucket's true end
    assert 'class="cut"' in html and "is cut at the dashed red line" in html


def test_buckets_of_similar_width_are_not_cut():
    st = {"count": 400, "mean": 2.0, "variance": 1.0, "min": 0.0, "max": 4.0,
          "boundaries": [1.0, 2.0, 3.0], "epsilon": 0.01}
    html = _numeric_card(st, {"name": "x", "kind": "numeric", "num_buckets": 4})
    assert 'class="cut"' not in html and "dashed red line" not in html
    assert len(_rects(html)) == 4
