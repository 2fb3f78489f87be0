"""The transform job's per-key encoder == the generated PerKeyScaling layer (floats <= 1 ulp)."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from beam_prep import Artifacts  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.io.inputs.readers import Split, read_split  # noqa: E402
from beam_prep.transform.layers import BatchEncoder  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.per_key import helpers  # noqa: E402
from tests.transform.test_equality import _compare, keras_outputs  # noqa: E402

SPEC = """
features:
  - {name: z, kind: numeric, column: price, per_key: store, per_key_count: true}
  - {name: mm, kind: numeric, column: price, scaling: min_max, per_key: store}
  - {name: dz, kind: numeric, expr: "log1p(abs(price))", per_key: {expr: "concat(str(sid), '/x')"}}
"""


def _table(rows: dict) -> pa.Table:
    return pa.table({"price": pa.array(rows["price"], pa.float64()),
                     "store": pa.array(rows["store"], pa.string()),
                     "sid": pa.array(rows["sid"], pa.int64())})


def test_transform_encoder_equals_generated_per_key_layers(tmp_path):
    rows = helpers.make_rows(n=800, keys=25)
    rows["store"][:4] = ["solo"] * 4  # one key whose values are all equal: sigmoid for min_max
    rows["price"][:4] = [3.0] * 4
    pq.write_table(_table(rows), str(tmp_path / "train.parquet"))
    serve = {"price": [1.0, 2.5, None, float("nan"), -4.0, 1e6, 3.0, 7.25, 0.0, 12.0],
             "store": ["plain", "never seen", None, "", "new\nline", "nul\x00byte", "solo",
                       "ünïcødé ✓", "\x00beam_prep:no_key\x00", "store_020"],
             "sid": [0, 1, 2, None, 4, 5, 6, 99, 3, 2]}
    serve_table = _table(serve)
    pq.write_table(serve_table, str(tmp_path / "serve.parquet"))
    out = helpers.run(tmp_path, SPEC, str(tmp_path / "train.parquet"))
    module_path = tmp_path / "pp.py"
    module_path.write_text(render_module(Artifacts(out)), encoding="utf-8")
    module = import_module_from(str(module_path), "bp_per_key_transform")
    enc = BatchEncoder(out)
    [result] = list(read_split(Split(str(tmp_path / "serve.parquet"), "parquet"), enc.columns))
    mine = enc.encode(result.batch)
    ref = keras_outputs(module, serve_table)
    assert set(mine) == set(ref) == {"z", "z_key_count", "mm", "dz"}
    assert not _compare(mine, ref)
    # count_per_key per row: the oracle counts finite values per key in the training rows
    want = helpers.oracle(rows["store"], rows["price"])
    assert mine["z_key_count"].values.ravel().tolist() == [
        want.get(k, (0,))[0] if k else 0 for k in serve["store"]]
    # a deliberately wrong encoder is caught (the comparison can fail)
    mine["z"].values[6] += 1.0
    assert _compare(mine, ref) == ["z"]
