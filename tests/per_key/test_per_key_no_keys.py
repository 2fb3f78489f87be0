"""A per_key feature whose data has no key at all: empty file, global scaling everywhere."""

from __future__ import annotations

import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import beam_prep  # noqa: E402
from beam_prep import Artifacts, cli  # noqa: E402
from beam_prep.codegen.render import generate  # noqa: E402
from beam_prep.io.contract.per_key_file import read_per_key  # noqa: E402
from beam_prep.io.inputs.readers import Split, read_split  # noqa: E402
from beam_prep.transform.layers import BatchEncoder  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.per_key import helpers  # noqa: E402


def test_no_key_gives_an_empty_file_and_global_scaling(tmp_path, capsys):
    rows = {"price": [1.0, 2.0, 6.0], "store": [None, "", None]}
    path = str(tmp_path / "rows.jsonl")
    helpers.write_jsonl(rows, path)
    out = helpers.run(tmp_path, "features:\n  - {name: price, kind: numeric, per_key: store}\n",
                      path)
    art = Artifacts(out, verify=True)
    assert art.stats("price")["key_count"] == 0
    assert os.path.getsize(os.path.join(out, "per_key", "price.jsonl")) == 0
    assert read_per_key(art, "price").keys == []
    mean, std = np.mean(rows["price"]), np.std(rows["price"])
    want = ((np.float32([[4.0], [1.0]]) - np.float32(mean)) / np.float32(std))
    batch = {"price": np.array([[4.0], [1.0]]), "store": np.array([["x"], [""]], object)}
    module_path = str(tmp_path / "pp.py")
    generate(out, module_path)
    pp = import_module_from(module_path, "bp_per_key_no_keys")
    twin = beam_prep.layers_from_artifacts(out)
    for got in (pp.build_preprocessor()(pp.raw_columns(batch)),
                twin.build_preprocessor()(twin.raw_columns(batch))):
        np.testing.assert_array_equal(np.asarray(got["price"]), want)
    enc = BatchEncoder(out)
    [result] = list(read_split(Split(path, "jsonl"), enc.columns))
    got = enc.encode(result.batch)["price"].values
    np.testing.assert_array_equal(
        got, ((np.float32(rows["price"]) - np.float32(mean)) / np.float32(std)).reshape(-1, 1))
    assert cli.main(["report", out, "--output", str(tmp_path / "r.html")]) == 0
    assert "no key in the data" in open(tmp_path / "r.html", encoding="utf-8").read()
    assert cli.main(["diff", out, out]) == 0
