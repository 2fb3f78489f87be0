"""Per-key keys and values below float32's smallest normal number (about 1.2e-38).

TensorFlow's CPU kernels flush float32 subnormals to zero: a key whose values are all about
1e-40 had a float32 scale of 0 in the Keras layer (NaN for every row of that key), and the
transform job (numpy, no flush) gave other values and other buckets than the layers.
"""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from beam_prep import Artifacts  # noqa: E402
from beam_prep.codegen.per_key_plan import scaling_row  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.io.inputs.readers import Split, read_split  # noqa: E402
from beam_prep.transform.layers import BatchEncoder  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.per_key import helpers  # noqa: E402
from tests.transform.test_equality import _compare, keras_outputs  # noqa: E402

SPEC = """
features:
  - {name: price, kind: numeric, per_key: store, num_buckets: 4, per_key_count: true}
  - {name: mm, kind: numeric, column: price, scaling: min_max, per_key: store, num_buckets: 3}
  - {name: raw, kind: numeric, column: price, scaling: none, per_key: store, num_buckets: 3}
"""
SUB = 1e-40  # a float32 subnormal, a normal float64


def test_a_scale_below_float32_normals_counts_as_zero():
    # sqrt(1e-80) = 1e-40 < float32's smallest normal: the variance-0 rule (scale 1)
    assert scaling_row("z_score", 2, SUB, 1e-80, 0.0, 2 * SUB)[1] == 1.0
    assert scaling_row("min_max", 2, SUB, 1e-80, 0.0, 2 * SUB) == (0.0, 1.0, True)
    assert scaling_row("z_score", 2, 1.0, 1e-74, 1.0, 1.0)[1] == 1e-37  # normal: kept
    assert scaling_row("min_max", 2, 0.0, 0.0, 0.0, 1e-37) == (0.0, 1e-37, False)


def test_subnormal_keys_are_finite_and_transform_equals_layers(tmp_path):
    keys, vals = [], []
    for key, values in {"sub": [SUB, 2 * SUB, 3 * SUB, 4 * SUB, -SUB, 0.0, -0.0, 5e-324],
                        "normal": [0.0, 1.0, 2.0, 3.0, 4.0]}.items():
        keys += [key] * len(values)
        vals += values
    pq.write_table(pa.table({"price": pa.array(vals, pa.float64()),
                             "store": pa.array(keys, pa.string())}), str(tmp_path / "t.parquet"))
    out = helpers.run(tmp_path, SPEC, str(tmp_path / "t.parquet"))
    module = tmp_path / "pp.py"
    module.write_text(render_module(Artifacts(out)), encoding="utf-8")
    pp = import_module_from(str(module), "bp_pk_subnormal")
    probe = [SUB, 1.5 * SUB, 0.5 * SUB, 5e-324, -0.0, 0.0, 1.0, 2.0, -SUB]
    serve_keys = [k for k in ("sub", "normal", "unknown") for _ in probe]
    serve = pa.table({"price": pa.array(probe * 3, pa.float64()),
                      "store": pa.array(serve_keys, pa.string())})
    pq.write_table(serve, str(tmp_path / "serve.parquet"))
    enc = BatchEncoder(out)
    [res] = list(read_split(Split(str(tmp_path / "serve.parquet"), "parquet"), enc.columns))
    mine = enc.encode(res.batch)
    ref = keras_outputs(pp, serve)
    assert np.isfinite(np.asarray(ref["price"], np.float64)).all()  # was NaN for "sub"
    assert np.isfinite(np.asarray(ref["mm"], np.float64)).all()
    assert not _compare(mine, ref)


@pytest.mark.parametrize("reader, line, args", [
    ("stats", b'["a",1,' + b"9" * 400 + b",0,1,1]", ()),
    ("stats", b'["a",1,1,' + b"9" * 400 + b",1,1]", ()),
    ("buckets", b'["a",1,0,[' + b"9" * 400 + b"]]", (2,)),
])
def test_a_400_digit_integer_in_a_per_key_line_is_an_artifact_error(reader, line, args):
    """json reads it as an int that float64 cannot hold; the check raised OverflowError."""
    from beam_prep.errors import ArtifactError
    from beam_prep.io.contract import per_key_buckets_file, per_key_file
    module = per_key_file if reader == "stats" else per_key_buckets_file
    with pytest.raises(ArtifactError, match="line 1"):
        module.parse_line(line, "f.jsonl", 1, *args)
