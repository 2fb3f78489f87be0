"""Global quantile boundaries and quartiles do not depend on ``--batch_size``.

Found by the session-8 review: the tfx-bsl sketch was fed batch by batch, so boundaries moved
in the 4th digit between ``--batch_size`` 333 and the default. The sketch is now fed in fixed
chunks (:mod:`beam_prep.analyzers.sketch_chunks`). Unweighted and weighted (``weights:``)
features, with missing values and NaN so batches and chunks do not line up.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep.analyzers.numeric import new_sketch
from beam_prep.analyzers.sketch_chunks import CHUNK, ChunkedSketch

# Unweighted and weighted: two features on the column x, analysed together (3 runs, not 6).
SPEC = ("features:\n"
        "  - {name: plain, column: x, kind: numeric, num_buckets: 5, scaling: robust}\n"
        "  - {name: weighted, column: x, kind: numeric, num_buckets: 5, weights: w}\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The values and, per feature, (boundaries, quartiles) of the default batch size, 333 and
    7001."""
    tmp_path = tmp_path_factory.mktemp("batch_size")
    rng = np.random.default_rng(0)
    values = rng.normal(size=40000)
    weights = rng.integers(1, 4, size=values.size)
    lines = []
    for i, (v, w) in enumerate(zip(values, weights)):
        row = {"w": int(w)}
        if i % 97:  # every 97th row has no x
            row["x"] = float(v)
        lines.append(json.dumps(row) + "\n")
    data = tmp_path / "t.jsonl"
    data.write_text("".join(lines))
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    got = {"plain": [], "weighted": []}
    for i, extra in enumerate(([], ["--batch_size", "333"], ["--batch_size", "7001"])):
        out = tmp_path / f"o{i}"
        analyze.run(["--spec", str(spec), "--input", str(data), "--output", str(out),
                     "--quiet", "--no_report", *extra])
        features = json.loads((out / "manifest.json").read_text())["features"]
        for kind in got:
            stats = features[kind]["stats"]
            got[kind].append((stats["boundaries"], stats.get("quartiles")))
    return values, got


@pytest.mark.parametrize("kind", ["plain", "weighted"])
def test_global_boundaries_do_not_depend_on_batch_size(runs, kind):
    values, runs_of = runs
    got = runs_of[kind]
    assert got[0] == got[1] == got[2]
    # and the boundaries are quantiles of the data (the sketch's ε = 0.01 rank error)
    kept = values[np.arange(values.size) % 97 != 0]
    ranks = np.searchsorted(np.sort(kept), got[0][0]) / kept.size
    if kind == "plain":
        assert np.all(np.abs(ranks - np.array([0.2, 0.4, 0.6, 0.8])) < 0.02)


def test_chunked_sketch_is_independent_of_how_values_arrive():
    rng = np.random.default_rng(1)
    x = rng.normal(size=3 * CHUNK + 123)
    w = rng.integers(1, 5, size=x.size).astype(np.float64)

    def fed(cuts, weighted):
        s = ChunkedSketch(new_sketch(0.01))
        for part in np.split(np.arange(x.size), cuts):
            s.add(x[part], w[part] if weighted else None)
        return pickle.loads(s.finish()).GetQuantiles(7).to_pylist()

    for weighted in (False, True):
        a = fed([CHUNK], weighted)
        assert a == fed([5, 999, 2 * CHUNK + 1], weighted) == fed(list(range(1, x.size, 4096)),
                                                                 weighted)
