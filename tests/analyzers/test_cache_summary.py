"""`beam-prep analyze --cache_dir ... --summary_json F`: the scheduler's summary counts the
splits served from the cache and those analysed, and names the run's record.

The expected counts follow from the inputs: each small CSV file is one split, so a cold
run misses once per file and a warm run over one new file plus the old ones hits once per
old file.
"""

from __future__ import annotations

import json
import os

from beam_prep.pipelines import analyze

from tests.analyzers.test_cache import SPEC, days


def _main(tmp, files, out, cache, summary) -> dict:
    spec = tmp / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    inputs = [a for f in files for a in ("--input", str(f))]
    code = analyze.main(["--spec", str(spec), *inputs, "--output", str(out),
                         "--max_bad_fraction", "0.05", "--cache_dir", str(cache), "--quiet",
                         "--no_report", "--summary_json", str(summary)])
    assert code == 0
    return json.loads(summary.read_text())


def test_summary_json_counts_cache_hits_and_misses(tmp_path):
    cache = tmp_path / "cache"
    cold = _main(tmp_path, days(tmp_path / "data", [1, 2]), tmp_path / "a", cache,
                 tmp_path / "s1.json")
    assert (cold["counts"]["cache_hits"], cold["counts"]["cache_misses"]) == (0, 2)
    warm = _main(tmp_path, days(tmp_path / "data", [1, 2, 3]), tmp_path / "b", cache,
                 tmp_path / "s2.json")
    assert (warm["counts"]["cache_hits"], warm["counts"]["cache_misses"]) == (2, 1)
    record = warm["outputs"]["cache_run"]
    assert os.path.dirname(record) == str(cache / "runs")
    assert json.loads(open(record).read())["hits"] == 2
