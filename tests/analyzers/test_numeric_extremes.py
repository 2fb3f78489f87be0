"""End to end: numeric columns at the edges of float64 through analyze -> generate -> layers.

* A column without any finite value (empty, NaN, ±inf cells) must analyze (exit 0, with a
  warning) and generate an identity Normalization and a single bucket, with a comment saying why.
* Values near the float64 maximum must give the right mean (the naive sum overflows); a
  variance beyond float64 is null with a reason, and the generator refuses that Normalization.

Expected values are computed by hand here (exact decimal arithmetic), not read from the code.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep.errors import ArtifactError

keras = pytest.importorskip("keras")

from beam_prep.codegen.render import generate  # noqa: E402


def _write(tmp_path, rows: list[str], features: str):
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n" + features, encoding="utf-8")
    return str(spec), str(data)


def _analyze(spec: str, data: str, out: str) -> int:
    return analyze.main(["--spec", spec, "--input", data, "--output", out])


def _import(path: str, name: str):
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


def test_column_without_finite_value_analyzes_and_generates_identity_layers(tmp_path, capsys):
    rows = ["empty,price,tail", ",1,1", "nan,2,inf", "inf,3,inf", "-inf,4,inf", ",5,2"]
    spec, data = _write(tmp_path, rows, "  - {name: empty, kind: numeric, num_buckets: 4}\n"
                                        "  - {name: price, kind: numeric}\n"
                                        "  - {name: tail, kind: numeric, num_buckets: 2}\n")
    out = str(tmp_path / "artifacts")
    assert _analyze(spec, data, out) == 0
    printed = capsys.readouterr().err  # data warnings go to stderr, --quiet or not
    assert "warning: empty:" in printed and "no finite value" in printed

    with open(f"{out}/manifest.json", encoding="utf-8") as f:
        features = json.load(f)["features"]
    stats = features["empty"]["stats"]
    # The median of 1, inf, inf, inf, 2 is inf: JSON holds it as the largest float64.
    assert features["tail"]["stats"]["boundaries"] == [sys.float_info.max]
    assert (stats["count"], stats["missing_count"], stats["nan_count"],
            stats["infinite_count"]) == (0, 2, 1, 2)
    assert stats["mean"] is None and stats["variance"] is None
    assert stats["boundaries"] == []
    assert stats["null_reasons"]["mean"].startswith("no finite value")

    module_path = str(tmp_path / "pp.py")
    generate(out, module_path)
    with open(module_path, encoding="utf-8") as f:
        source = f.read()
    assert "# 'empty' had no finite value in the analysed data" in source
    pp = _import(module_path, "bp_numeric_extremes_empty")
    layers = pp.build_layers()
    x = np.array([[1.5], [-2.0], [1e6]], np.float32)
    norm = layers["empty"][0]
    np.testing.assert_array_equal(np.asarray(norm(x)), x)  # mean 0, variance 1
    bucket = layers["empty_bucket"][0]
    np.testing.assert_array_equal(np.asarray(bucket(x)), np.zeros((3, 1)))
    # The other column is untouched: mean 3, population variance 2 of 1..5.
    price = np.asarray(layers["price"][0](np.array([[3.0], [5.0]], np.float32)))
    np.testing.assert_allclose(price, [[0.0], [2.0 / np.sqrt(2.0)]], rtol=1e-6)
    tail = layers["tail_bucket"][0](np.array([[1.0], [2.0], [np.inf], [3e38]], np.float32))
    np.testing.assert_array_equal(np.asarray(tail), [[0], [0], [1], [0]])


def test_values_near_float64_max_keep_their_mean_and_an_unrepresentable_variance_is_refused(
        tmp_path, capsys):
    rows = ["wide,high", "1e308,1.7e308", "1e308,1.7e308", "-1e308,1.7e308", "1e308,1.7e308"]
    spec, data = _write(tmp_path, rows, "  - {name: wide, kind: numeric, num_buckets: 2}\n"
                                        "  - {name: high, kind: numeric}\n")
    out = str(tmp_path / "artifacts")
    assert _analyze(spec, data, out) == 0
    printed = capsys.readouterr().err
    assert "warning: wide: variance null" in printed

    with open(f"{out}/manifest.json", encoding="utf-8") as f:
        features = json.load(f)["features"]
    wide, high = features["wide"]["stats"], features["high"]["stats"]
    assert wide["mean"] == 5e307  # (3 - 1) * 1e308 / 4
    assert wide["variance"] is None  # exact: 0.75e616
    assert "float64" in wide["null_reasons"]["variance"]
    assert (wide["min"], wide["max"]) == (-1e308, 1e308)
    assert (high["mean"], high["variance"], high["null_reasons"]) == (1.7e308, 0.0, {})

    with pytest.raises(ArtifactError, match=r"Feature 'wide'.*variance.*scale the column"):
        generate(out, str(tmp_path / "pp.py"))
    from beam_prep import layers_from_artifacts

    with pytest.raises(ArtifactError, match=r"Feature 'wide'"):
        layers_from_artifacts(out)
