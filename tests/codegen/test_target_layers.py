"""The ``<name>_target_encoding`` output of the generated module and the runtime twin.

Oracle: the analysis file ``vocab/<name>.target.jsonl`` (itself checked against a numpy /
Fraction groupby in tests/analyzers/test_target_encoding.py): every token, hostile ones
included ("[UNK]", "", a newline, quotes, bidi, -1 for integers), must map to its
encoding as float32; unseen and missing values to the global mean.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from beam_prep.pipelines import analyze  # noqa: E402

import beam_prep  # noqa: E402
from beam_prep.codegen.plan_types import MISSING_INTEGER  # noqa: E402
from beam_prep.codegen.render import generate  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402

HOSTILE = ["[UNK]", "", "a\nb", "'''\"", "\u202eevil\x1b[31m", "\\x00", "ok"]
INTS = [-1, 0, 7, 2**40, -(2**62)]


@pytest.fixture(scope="module")
def art(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("target_layers")
    rng = np.random.default_rng(4)
    rows = [{"s": HOSTILE[i % len(HOSTILE)], "i": INTS[i % len(INTS)], "u": i,
             "y": float(rng.normal())} for i in range(140)]
    (tmp / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "spec.yaml").write_text(
        "features:\n"
        "  - {name: s, kind: string, target_encoding: {labels: y, fold_column: u}}\n"
        "  - {name: i, kind: integer, target_encoding: {labels: y, fold_column: u, "
        "folds: 2, smoothing: 0.5}}\n")
    out = str(tmp / "art")
    analyze.run(["--spec", str(tmp / "spec.yaml"), "--input", str(tmp / "d.jsonl"),
                 "--output", out, "--quiet"])
    module_path = os.path.join(str(tmp), "pp_target.py")
    generate(out, module_path)
    return out, import_module_from(module_path, "pp_target_layers")


def _file(art_dir: str, name: str) -> tuple[dict, float]:
    lines = [json.loads(x) for x in open(f"{art_dir}/vocab/{name}.target.jsonl",
                                         encoding="utf-8")]
    manifest = json.load(open(f"{art_dir}/manifest.json"))
    mean = manifest["features"][name]["stats"]["target_encoding"]["global_mean"]
    return {line[0]: line[1] for line in lines}, mean


@pytest.mark.parametrize("which", ["generated", "runtime"])
def test_every_token_maps_to_its_encoding(art, which):
    out, module = art
    model = (module.build_preprocessor(out) if which == "generated"
             else beam_prep.layers_from_artifacts(out).build_preprocessor())
    s_file, s_mean = _file(out, "s")
    i_file, i_mean = _file(out, "i")
    assert sorted(s_file) == sorted(HOSTILE)
    s_in = [*HOSTILE, "unseen"]
    i_in = [*INTS, 12345, 999, MISSING_INTEGER]
    result = model({"s": tf.constant([[v] for v in s_in]),
                    "i": tf.constant([[v] for v in i_in], tf.int64)})
    want_s = np.array([s_file[v] for v in HOSTILE] + [s_mean], np.float32)
    want_i = np.array([i_file[str(v)] for v in INTS] + [i_mean] * 3, np.float32)
    np.testing.assert_array_equal(result["s_target_encoding"].numpy()[:, 0], want_s)
    np.testing.assert_array_equal(result["i_target_encoding"].numpy()[:, 0], want_i)
    assert result["s_target_encoding"].dtype == tf.float32


def test_module_checks_the_target_file(art):
    out, module = art
    assert any(path.endswith("s.target.jsonl") for path, _, _ in module._FILES)
