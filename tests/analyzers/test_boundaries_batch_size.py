"""Known issue (review, session 8): global quantile ``boundaries`` depend on ``--batch_size``.

The project rule is byte-identical artifacts whatever the sharding or batch size; mean,
variance, min, max, vocabularies and the per-key files hold it, but the global quantile
sketch is fed batch by batch, so ``num_buckets`` boundaries move in the 4th digit between
``--batch_size`` 333 and the default. Strict xfail: it fails loudly once fixed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from beam_prep.pipelines import analyze


@pytest.mark.xfail(strict=True, reason="quantile sketch fed per batch: boundaries depend on "
                   "--batch_size (found by the review lane; not fixed)")
def test_global_boundaries_do_not_depend_on_batch_size(tmp_path):
    data = tmp_path / "t.jsonl"
    values = np.random.default_rng(0).normal(size=20000)
    data.write_text("".join(json.dumps({"x": float(v)}) + "\n" for v in values))
    spec = tmp_path / "s.yaml"
    spec.write_text("features:\n  - {name: x, kind: numeric, num_buckets: 5}\n")
    got = []
    for i, extra in enumerate(([], ["--batch_size", "333"])):
        out = tmp_path / f"o{i}"
        analyze.run(["--spec", str(spec), "--input", str(data), "--output", str(out), *extra])
        got.append(json.loads((out / "manifest.json").read_text())["features"]["x"]["stats"]
                   ["boundaries"])
    assert got[0] == got[1]
