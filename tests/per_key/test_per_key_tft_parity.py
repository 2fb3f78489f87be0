"""Per-key scaling against TF Transform's scale_to_z_score_per_key / scale_by_min_max_per_key.

TFT runs in a subprocess (it switches tf.keras to Keras 2); the default suite reads its output
from the TFT store (``tests/parity/tft_store.py``, keyed by the sha256 of the rows). TFT
computes the per-key statistics in float32 from float32 input; beam_prep in float64, rounded
once: agreement to float32 precision (rtol 1e-5) is expected.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow_transform")
tf = pytest.importorskip("tensorflow")

import beam_prep  # noqa: E402
from tests.parity import tft_store  # noqa: E402
from tests.per_key import helpers  # noqa: E402

SPEC = """
features:
  - {name: z, kind: numeric, column: price, per_key: store}
  - {name: mm, kind: numeric, column: price, scaling: min_max, per_key: store}
"""


def test_matches_tft_per_key_scalings(tmp_path):
    rng = np.random.default_rng(5)
    n = 600
    keys = [f"k{i}" for i in rng.integers(0, 12, n)] + ["single", "twin", "twin"]
    x = np.float32(rng.normal(10.0, 3.0, n)).tolist() + [4.0, 2.0, 2.0]  # float32 values
    data = tmp_path / "rows.json"
    data.write_text(json.dumps({"x": x, "key": keys}))
    tft = tft_store.reference(
        "per_key", Path(__file__).with_name("tft_per_key_reference.py"),
        ["--data", str(data), "--output", "{out}/tft.json"], inputs=[data], root=tmp_path,
        assets=None, extra=["tft.json"])
    ref = json.loads((tft / "tft.json").read_text())
    rows = {"price": x, "store": keys}
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    out = helpers.run(tmp_path, SPEC, path)
    pp = beam_prep.layers_from_artifacts(out)
    got = pp.build_preprocessor()(pp.raw_columns(
        {"price": np.array(x).reshape(-1, 1), "store": np.array(keys, object).reshape(-1, 1)}))
    np.testing.assert_allclose(np.asarray(got["z"]).ravel(), ref["z"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got["mm"]).ravel(), ref["mm"], rtol=1e-5, atol=1e-5)
