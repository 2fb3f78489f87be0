"""A weighted artifact folder through every reader: generated module, report and diff.

The layers are the same kinds as without weights; only the vocabulary order, the moments and
the boundaries differ, and they must be the ones the analysis wrote.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep.diff.compare import diff_artifacts
from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.report.build import write_report
from beam_prep.report.sidecar import summarize_sidecar

keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

from beam_prep.codegen.render import generate  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402

SPEC = """
features:
  - {name: city, kind: string, weights: w, min_count: 0}
  - {name: x, kind: numeric, weights: w, num_buckets: 3}
"""


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("weighted_readers")
    rng = np.random.default_rng(5)
    rows = ["city,x,w"]
    for _ in range(400):  # many tokens: the report's block parser sees float counts
        rows.append(f"t{int(rng.integers(0, 90))},{rng.normal():.4f},{rng.integers(1, 9) / 3}")
    (root / "d.csv").write_text("\n".join(rows) + "\n")
    (root / "s.yaml").write_text(SPEC)
    (root / "s2.yaml").write_text(SPEC.replace("min_count: 0", "min_count: 2.5"))
    for name, spec in (("a", "s.yaml"), ("b", "s2.yaml")):
        analyze.run(["--spec", str(root / spec), "--input", str(root / "d.csv"),
                     "--output", str(root / name), "--quiet", "--no_report"])
    return root


def _apply(stack, x):
    for layer in stack if isinstance(stack, list) else [stack]:
        x = layer(x)
    return x


def test_generated_module_uses_the_weighted_vocabulary_and_moments(folders, tmp_path) -> None:
    out = str(tmp_path / "pre.py")
    generate(str(folders / "a"), out)
    module = import_module_from(out, "bp_weighted_generated")
    layers = module.build_layers()
    vocab = (folders / "a" / "vocab" / "city.txt").read_text().splitlines()
    got = np.asarray(_apply(layers["city"], keras.ops.convert_to_tensor(vocab[:3])))
    assert got.ravel().tolist() == [1, 2, 3]  # index 0 = OOV, then the weighted order
    stats = json.loads((folders / "a" / "manifest.json").read_text())["features"]["x"]["stats"]
    z = np.asarray(_apply(layers["x"][:1], keras.ops.convert_to_tensor([[stats["mean"]]])))
    assert abs(float(z.ravel()[0])) < 1e-5


def test_report_reads_float_counts(folders, tmp_path) -> None:
    s = summarize_sidecar(Artifacts(str(folders / "a")), "city", top_n=5)
    listed = [json.loads(line)[1] for line in
              (folders / "a" / "vocab" / "city.counts.jsonl").read_text().splitlines()]
    assert s.tokens == len(listed)
    assert s.total == pytest.approx(sum(listed))
    assert any(isinstance(c, float) for c in listed)
    write_report(str(folders / "a"), str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text()
    assert "values seen (summed weights)" in page and "instance weights" in page
    assert "rows set aside (invalid weight)" in page and "total weight" in page
    assert "implied OOV rate</th><td>0.00%" in page  # min_count 0: every weight is listed


def test_diff_compares_weighted_vocabularies(folders) -> None:
    report = diff_artifacts(str(folders / "a"), str(folders / "b"), allow_spec_change=True)
    city = next(f for f in report.features if f.name == "city")
    assert city.vocab is not None and city.vocab.dropped > 0
    assert city.vocab.new_size < city.vocab.old_size



WEIGHTED_CACHE_SPEC = """
features:
  - {name: city, kind: string, weights: price, min_count: 0, top_k: 5}
  - {name: item, kind: integer, column: item_id, weights_expr: "price * 0.5"}
  - {name: price_w, kind: numeric, column: price, num_buckets: 4, weights_expr: "price * price"}
  - {name: words, kind: text, column: note, ngrams: 2, weights: price}
  - {name: plain, kind: string, column: city}
"""


def test_cold_and_warm_cache_give_the_bytes_of_a_run_without_cache(tmp_path) -> None:
    from tests.analyzers.test_cache import days, last_run, run
    from tests.artifact_diff import assert_same_artifacts

    files = days(tmp_path / "data", [1, 2, 3])
    cache = tmp_path / "cache"
    plain = run(tmp_path, files, str(tmp_path / "plain"), spec=WEIGHTED_CACHE_SPEC)
    cold = run(tmp_path, files, str(tmp_path / "cold"), "--cache_dir", str(cache),
               spec=WEIGHTED_CACHE_SPEC)
    assert last_run(cache)["misses"] == 3
    assert_same_artifacts(plain, cold)
    warm = run(tmp_path, files, str(tmp_path / "warm"), "--cache_dir", str(cache),
               spec=WEIGHTED_CACHE_SPEC)
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (3, 0)
    assert_same_artifacts(plain, warm)
    stats = json.loads((warm / "manifest.json").read_text())["features"]
    assert stats["city"]["stats"]["invalid_weight_count"] > 0  # missing prices
    assert stats["price_w"]["stats"]["weight_total"] > 0
    # (another weight column changes the entries' key: test_weighted.py's
    # test_cache_key_changes_with_weights)


@pytest.mark.parametrize("line", [b'["a",-1.5]', b'["a",1e999]', b'["a",NaN]', b'["a","2"]',
                                  b'["a",true]'])
def test_hostile_weighted_sidecar_lines_are_refused(line) -> None:
    import io

    from beam_prep.diff.sidecar_lines import iter_pairs
    from beam_prep.errors import ArtifactError
    from beam_prep.report.sidecar import summarize_lines

    good = b"".join(b'["t%d",%d.5]\n' % (i, 100 - i) for i in range(40))
    for body in (line + b"\n" + good, good + line + b"\n"):  # decoded line, then block parse
        with pytest.raises(ArtifactError):
            summarize_lines(io.BytesIO(body), top_n=5, weighted=True)
        with pytest.raises(ArtifactError):
            list(iter_pairs(io.BytesIO(body), name="f", weighted=True))
    # the same floats in an unweighted sidecar are refused too
    with pytest.raises(ArtifactError):
        list(iter_pairs(io.BytesIO(good), name="f"))


def test_artifacts_counts_of_a_weighted_feature_are_its_float_counts(folders) -> None:
    art = Artifacts(str(folders / "a"))
    lines = (folders / "a" / "vocab" / "city.counts.jsonl").read_text().splitlines()
    assert art.counts("city") == [tuple(json.loads(line)) for line in lines]
    assert any(isinstance(c, float) for _, c in art.counts("city"))
