"""Instance weights (``weights`` / ``weights_expr``): vocabularies, moments and quantiles.

Oracles: exact Python sums (``fractions.Fraction``) and TFT's order for vocabularies,
``numpy.average`` for moments, a weighted empirical CDF for quantile boundaries. The
analysis runs through the real job (CSV in, artifact folder out) with several batch sizes
and partition counts; every run must give the same bytes.
"""

from __future__ import annotations

import csv
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep.analyzers.cache.key import ReaderSettings, analysis_key
from beam_prep.errors import ArtifactError, SpecError
from beam_prep.io.contract.manifest_check import validate_manifest
from beam_prep.spec import NumericFeature, Spec, StringFeature, TextFeature

ROWS = 3000
SPEC_YAML = """
features:
  - {name: city, kind: string, weights: w, min_count: 0}
  - {name: city_cut, kind: string, column: city, weights: w, min_count: 3.5, top_k: 7}
  - {name: code, kind: integer, weights_expr: "w * 2", min_count: 0}
  - {name: words, kind: text, weights: w}
  - {name: x, kind: numeric, weights: w, num_buckets: 5}
  - {name: city_plain, kind: string, column: city}
"""


def _data(seed: int = 7) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    cities = [f"c{int(k)}" for k in rng.zipf(1.6, ROWS) % 40]
    codes = [int(k) for k in rng.integers(0, 25, ROWS)]
    vocab = ["a", "b", "c", "dd", "e"]
    words = [" ".join(rng.choice(vocab, int(n))) for n in rng.integers(0, 5, ROWS)]
    x = [float(v) for v in np.round(rng.lognormal(1.0, 1.0, ROWS), 3)]
    w: list = [float(v) for v in rng.integers(0, 64, ROWS) / 8.0]  # exact sums
    for i in range(0, ROWS, 97):  # bad weights: missing, NaN, negative, infinite
        w[i] = [None, "nan", -1.5, "inf"][(i // 97) % 4]
    return {"city": cities, "code": codes, "words": words, "x": x, "w": w}


def _write_csv(columns: dict[str, list], path: Path) -> None:
    names = list(columns)
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(names)
        for row in zip(*columns.values()):
            out.writerow(["" if v is None else v for v in row])


def _valid(w) -> bool:
    return isinstance(w, float) and math.isfinite(w) and w >= 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("weighted")
    columns = _data()
    _write_csv(columns, root / "data.csv")
    (root / "spec.yaml").write_text(SPEC_YAML, encoding="utf-8")
    out = {}
    for label, flags in {"a": ["--batch_size", "4096"],
                         "b": ["--batch_size", "61", "--vocab_partitions", "5"],
                         "c": ["--batch_size", "250", "--vocab_partitions", "1",
                               "--input_split_bytes", "20000", "--spill_rows", "3"]}.items():
        analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "data.csv"),
                     "--output", str(root / label), "--quiet", "--no_report",
                     "--max_bad_fraction", "1", *flags])
        out[label] = root / label
    return {"columns": columns, "dirs": out}


def _oracle_vocab(tokens_per_row, weights, min_count=0.0, top_k=None) -> list[tuple[str, Fraction]]:
    sums: dict[str, Fraction] = {}
    for toks, w in zip(tokens_per_row, weights):
        if not _valid(w):
            continue
        for t in toks:
            sums[t] = sums.get(t, Fraction(0)) + Fraction(w)
    items = [(t, c) for t, c in sums.items() if c >= Fraction(min_count)]
    items.sort(key=lambda tc: (tc[1], tc[0].encode()), reverse=True)  # TFT's order
    return items[:top_k] if top_k else items


def _counts(path: Path) -> list[tuple[str, float]]:
    return [tuple(json.loads(line)) for line in path.read_text("utf-8").splitlines()]


def _check_vocab(run_dir: Path, name: str, expected) -> None:
    txt = (run_dir / "vocab" / f"{name}.txt").read_text("utf-8").splitlines()
    assert txt == [t for t, _ in expected]
    got = _counts(run_dir / "vocab" / f"{name}.counts.jsonl")
    assert [(t, Fraction(c)) for t, c in got] == expected


def test_string_vocabulary_matches_the_exact_oracle(runs) -> None:
    c = runs["columns"]
    w = [float(v) if isinstance(v, str) else v for v in c["w"]]
    _check_vocab(runs["dirs"]["a"], "city", _oracle_vocab([[x] for x in c["city"]], w))
    _check_vocab(runs["dirs"]["a"], "city_cut",
                 _oracle_vocab([[x] for x in c["city"]], w, min_count=3.5, top_k=7))


def test_integer_vocabulary_uses_the_weight_expression(runs) -> None:
    c = runs["columns"]
    w = [2 * float(v) if v is not None else None for v in c["w"]]
    _check_vocab(runs["dirs"]["a"], "code", _oracle_vocab([[str(x)] for x in c["code"]], w))


def test_text_vocabulary_counts_each_occurrence_with_its_row_weight(runs) -> None:
    c = runs["columns"]
    w = [float(v) if isinstance(v, str) else v for v in c["w"]]
    expected = [(t, n) for t, n in _oracle_vocab([s.split() for s in c["words"]], w)]
    _check_vocab(runs["dirs"]["a"], "words", expected)


def test_files_and_manifest_are_identical_for_any_batches_splits_partitions(runs) -> None:
    dirs = runs["dirs"]
    for name in ("city", "city_cut", "code", "words"):
        for suffix in (".txt", ".counts.jsonl"):
            ref = (dirs["a"] / "vocab" / f"{name}{suffix}").read_bytes()
            for other in ("b", "c"):
                assert (dirs[other] / "vocab" / f"{name}{suffix}").read_bytes() == ref, \
                    (name, suffix, other)
    ref = json.loads((dirs["a"] / "manifest.json").read_text())
    for other in ("b", "c"):
        m = json.loads((dirs[other] / "manifest.json").read_text())
        for name in ("city", "city_cut", "code", "words", "x"):
            stats = dict(m["features"][name]["stats"])
            want = dict(ref["features"][name]["stats"])
            if name == "x":  # sketches depend on batches (as unweighted ones)
                stats.pop("boundaries"), want.pop("boundaries")
            assert stats == want, (name, other)


def test_weighted_moments_match_numpy_average(runs) -> None:
    c = runs["columns"]
    w = np.array([float(v) if v is not None else np.nan for v in c["w"]])
    x = np.array(c["x"])
    ok = np.isfinite(w) & (w >= 0)
    mean = np.average(x[ok], weights=w[ok])
    var = np.average((x[ok] - mean) ** 2, weights=w[ok])
    st = json.loads((runs["dirs"]["a"] / "manifest.json").read_text())["features"]["x"]["stats"]
    assert st["mean"] == pytest.approx(mean, rel=1e-13)
    assert st["variance"] == pytest.approx(var, rel=1e-11)
    assert st["weight_total"] == float(np.sum(w[ok]))
    assert st["count"] == int(ok.sum())
    assert st["invalid_weight_count"] == int((~ok).sum())
    assert (st["min"], st["max"]) == (float(x[ok].min()), float(x[ok].max()))


def test_weighted_quantiles_are_within_epsilon_of_the_weighted_cdf(runs) -> None:
    c = runs["columns"]
    w = np.array([float(v) if v is not None else np.nan for v in c["w"]])
    x = np.array(c["x"])
    ok = np.isfinite(w) & (w > 0)
    x, w = x[ok], w[ok]
    st = json.loads((runs["dirs"]["a"] / "manifest.json").read_text())["features"]["x"]["stats"]
    total = w.sum()
    for i, b in enumerate(st["boundaries"], start=1):
        below, at_most = w[x < b].sum() / total, w[x <= b].sum() / total
        q = i / 5
        assert below - st["epsilon"] - 1e-9 <= q <= at_most + st["epsilon"] + 1e-9, (i, b)
    # unweighted quantiles of the same values differ: the weights are used
    plain = np.quantile(x, [0.2, 0.4, 0.6, 0.8], method="inverted_cdf")
    assert not np.allclose(plain, st["boundaries"])


def test_bad_weights_are_counted_and_set_aside(runs) -> None:
    c = runs["columns"]
    bad = sum(not _valid(float(v) if isinstance(v, str) else v) for v in c["w"])
    assert bad == len(range(0, ROWS, 97))
    feats = json.loads((runs["dirs"]["a"] / "manifest.json").read_text())["features"]
    for name in ("city", "city_cut", "code", "words", "x"):
        assert feats[name]["stats"]["invalid_weight_count"] == bad
    assert "invalid_weight_count" not in feats["city_plain"]["stats"]
    # the unweighted feature of the same column still counts every row
    plain = _counts(runs["dirs"]["a"] / "vocab" / "city_plain.counts.jsonl")
    assert sum(n for _, n in plain) == ROWS
    assert all(isinstance(n, int) for _, n in plain)


def test_continuous_weights_are_deterministic_and_close_to_exact(tmp_path) -> None:
    rng = np.random.default_rng(3)
    n = 2000
    columns = {"k": [f"t{int(v)}" for v in rng.integers(0, 30, n)],
               "w": [float(v) for v in rng.lognormal(0.0, 4.0, n)]}
    _write_csv(columns, tmp_path / "d.csv")
    (tmp_path / "s.yaml").write_text(
        "features:\n  - {name: k, kind: string, weights: w, min_count: 0}\n")
    bodies = []
    for i, flags in enumerate([["--batch_size", "1000"],
                               ["--batch_size", "31", "--vocab_partitions", "3"]]):
        analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.csv"),
                     "--output", str(tmp_path / f"o{i}"), "--quiet", "--no_report", *flags])
        bodies.append((tmp_path / f"o{i}" / "vocab" / "k.counts.jsonl").read_bytes())
    assert bodies[0] == bodies[1]
    exact = dict(_oracle_vocab([[k] for k in columns["k"]], columns["w"]))
    for t, c in _counts(tmp_path / "o0" / "vocab" / "k.counts.jsonl"):
        assert c == float(exact[t])  # the float64 nearest the exact sum


def test_spec_checks_name_the_field_and_the_fix() -> None:
    with pytest.raises(SpecError, match="weights_expr.*drop `weights`"):
        StringFeature("a", weights="w", weights_expr="w").validate()
    with pytest.raises(SpecError, match="min_count.*>= 0"):
        StringFeature("a", weights="w", min_count=-1).validate()
    with pytest.raises(SpecError, match="min_count.*positive integer"):
        StringFeature("a", min_count=1.5).validate()  # unweighted: still an integer
    with pytest.raises(SpecError, match="tf_idf"):
        TextFeature("t", weights="w", output_mode="tf_idf").validate()
    with pytest.raises(SpecError, match="weights_expr.*numeric expression"):
        StringFeature("a", weights_expr="lower(w)").validate()
    StringFeature("a", weights="w", min_count=0.5).validate()
    spec = Spec.from_dict({"features": [{"name": "a", "kind": "string", "weights": "w"}]})
    assert spec.features[0].weights == "w"
    # unchanged canonical form without weights (fingerprints of old specs)
    assert "weights" not in StringFeature("a").to_dict()


def test_labels_with_weights_are_refused() -> None:
    import dataclasses

    from beam_prep.spec.weights import check_weights

    @dataclasses.dataclass(frozen=True)
    class Labelled:  # what the label-aware lane adds; refused until both analyses meet
        name: str = "a"
        kind: str = "string"
        weights: str | None = "w"
        weights_expr: str | None = None
        labels: str | None = "y"
        min_count: int = 1

    with pytest.raises(SpecError, match="labels"):
        check_weights(Labelled())
    with pytest.raises(SpecError, match="`weights` must be null when `labels` is set"):
        StringFeature("a", weights="w", labels="y").validate()
    with pytest.raises(SpecError, match="`weights` must be null when `per_key` is set"):
        Spec.from_dict({"features": [{"name": "x", "kind": "numeric", "per_key": "k",
                                      "weights": "w"}]})
    with pytest.raises(SpecError, match="`weights_expr` must be null when `labels` is set"):
        Spec.from_dict({"features": [{"name": "a", "kind": "string", "labels": "y",
                                      "weights_expr": "w * 2"}]})


def test_cache_key_changes_with_weights() -> None:
    reader = ReaderSettings("csv", 1024)
    keys = {analysis_key(Spec((StringFeature("a", **kw),)), reader)[0]
            for kw in ({}, {"weights": "w"}, {"weights": "v"}, {"weights_expr": "w * 2"})}
    assert len(keys) == 4
    n1 = analysis_key(Spec((NumericFeature("x"),)), reader)[0]
    assert n1 != analysis_key(Spec((NumericFeature("x", weights="w"),)), reader)[0]


@pytest.mark.parametrize("edit, match", [
    (lambda s: s.update(total_count=-1.0), "total_count"),
    (lambda s: s.update(total_count="3"), "total_count"),
    (lambda s: s["dropped_min_count"].update(count=float("inf")), "dropped_min_count.count"),
    (lambda s: s.update(invalid_weight_count=1.5), "invalid_weight_count"),
    (lambda s: s.update(weight_total=-2.0), "weight_total"),
])
def test_hostile_weighted_stats_are_refused(runs, edit, match) -> None:
    m = json.loads((runs["dirs"]["a"] / "manifest.json").read_text())
    validate_manifest(json.loads(json.dumps(m)), "m.json")
    edit(m["features"]["city"]["stats"])
    with pytest.raises(ArtifactError, match=match):
        validate_manifest(m, "m.json")


def test_float_counts_of_an_unweighted_feature_are_still_refused(runs) -> None:
    m = json.loads((runs["dirs"]["a"] / "manifest.json").read_text())
    m["features"]["city_plain"]["stats"]["total_count"] = 2.5
    with pytest.raises(ArtifactError, match="integer"):
        validate_manifest(m, "m.json")


def _shards(n: int, k: int, rng) -> list[np.ndarray]:
    cuts = np.sort(rng.choice(np.arange(1, n), k - 1, replace=False))
    order = rng.permutation(n)
    return np.split(order, cuts)


def test_band_sums_are_exact_and_order_free_over_any_sharding() -> None:
    import pyarrow as pa

    from beam_prep.analyzers.vocab.weights import MAX_WEIGHT, band_tables, combine_bands

    rng = np.random.default_rng(1)
    n = 5000
    tokens = np.array([f"t{int(v)}" for v in rng.integers(0, 25, n)])
    weights = np.minimum(rng.lognormal(0.0, 60.0, n), MAX_WEIGHT)  # 1e-200 .. 1e200
    weights[:50] = 0.0
    weights[50:60] = 5e-324  # subnormal
    exact: dict[str, Fraction] = {}
    for t, w in zip(tokens.tolist(), weights.tolist()):
        exact[t] = exact.get(t, Fraction(0)) + Fraction(w)
    results = []
    for k in (1, 3, 17):
        parts = [band_tables(pa.array(tokens[idx]), weights[idx])
                 for idx in _shards(n, k, rng)]
        t = combine_bands(parts[::-1] if k == 3 else parts).sort_by("token")
        results.append(t)
        for tok, c in zip(t.column("token").to_pylist(), t.column("count").to_pylist()):
            assert c == float(exact[tok])  # correctly rounded
    assert all(r.equals(results[0]) for r in results[1:])


def test_weighted_moments_are_exact_and_order_free_even_at_extremes() -> None:
    from beam_prep.analyzers.weighted_moments import WeightedMoments

    rng = np.random.default_rng(2)
    n = 3000
    x = rng.normal(0, 1, n) * 10.0 ** rng.integers(-320, 140, n)  # past 2**±300 too
    w = rng.lognormal(0, 2, n) * 10.0 ** rng.integers(-310, 290, n)
    w[:5] = 0.0
    sw = sum(Fraction(v) for v in w.tolist())
    swx = sum(Fraction(a) * Fraction(b) for a, b in zip(w.tolist(), x.tolist()))
    swxx = sum(Fraction(b) * Fraction(a) ** 2 for a, b in zip(x.tolist(), w.tolist()))
    mean = swx / sw
    var = swxx / sw - mean * mean
    merged = []
    for k in (1, 4, 11):
        m = WeightedMoments()
        for idx in _shards(n, k, rng):
            m = WeightedMoments.of(x[idx], w[idx]).merge(m)
        merged.append(m)
        assert m.mean == float(mean) and m.variance == float(var)
    assert merged[0] == merged[1] == merged[2]


def test_text_chunks_do_not_change_weighted_counts(monkeypatch) -> None:
    import pyarrow as pa

    from beam_prep.analyzers import split_fn
    from beam_prep.analyzers.vocab.split import SplitVocabulary
    from beam_prep.analyzers.vocab.weights import combine_bands

    f = TextFeature("t", weights="w", ngrams=2)
    texts = pa.array(["a b a", "b c", None, "c c a b", "a"])
    w = np.array([0.5, 2.0, 1.0, 0.25, 3.0])

    def counted(chunk_bytes: int):
        monkeypatch.setattr(split_fn, "TEXT_CHUNK_BYTES", chunk_bytes)
        acc = SplitVocabulary("t", num_partitions=1, spill_dir=None, file_stem="s",
                              weighted=True)
        docs, hist = split_fn.AnalyzeSplitFn._add_text(f, texts, acc, w)
        bands = [{int(k.rsplit(".w", 1)[1]): t} for (k, _), t in acc.result()]
        out = combine_bands(bands).sort_by("token")
        return out.to_pydict(), docs, hist

    small, big = counted(4), counted(1 << 22)
    assert small == big
    got = dict(zip(small[0]["token"], small[0]["count"]))
    assert got["a"] == 0.5 * 2 + 0.25 + 3.0 and got["a b"] == 0.5 + 0.25
    assert small[1] == 4


def test_weights_are_an_optional_input_of_the_trunk_accumulators() -> None:
    import pyarrow as pa

    from beam_prep.analyzers.numeric import NumericAccumulator
    from beam_prep.analyzers.vocab.split import SplitVocabulary

    # All weights 1: the weighted accumulators agree with the plain ones.
    values = pa.array(["a", "b", "a", None, "c", "a"])
    plain = SplitVocabulary("f", num_partitions=1, spill_dir=None, file_stem="s")
    plain.add_values(values)
    weighted = SplitVocabulary("f", num_partitions=1, spill_dir=None, file_stem="s",
                               weighted=True)
    weighted.add_values(values, np.ones(len(values)))
    (key, _), table = plain.result()[0]
    counts = dict(zip(table.column("token").to_pylist(), table.column("count").to_pylist()))
    from beam_prep.analyzers.vocab.weights import combine_bands, parse_band_key

    bands = [{parse_band_key(k)[1]: t} for (k, _), t in weighted.result()]
    assert key == "f" and all(parse_band_key(k)[0] == "f" for (k, _), _ in weighted.result())
    got = combine_bands(bands)
    assert dict(zip(got.column("token").to_pylist(), got.column("count").to_pylist())) == {
        t: float(c) for t, c in counts.items()} == {"a": 3.0, "b": 1.0, "c": 1.0}

    x = np.array([1.0, 2.0, 4.0, np.nan, np.inf])
    a, b = NumericAccumulator(0.01), NumericAccumulator(0.01, weighted=True)
    a.add(x, 2)
    b.add(x, 2, np.ones(len(x)))
    pa_, pb = a.result(), b.result()
    assert (pa_.missing, pa_.nan, pa_.infinite) == (pb.missing, pb.nan, pb.infinite) == (2, 1, 1)
    assert pa_.moments.mean == pb.moments.mean == 7 / 3
    # Giving weights to a plain accumulator, or none to a weighted one, is a bug: refused.
    with pytest.raises(ValueError, match="weighted=False"):
        a.add(x, 0, np.ones(len(x)))
    with pytest.raises(ValueError, match="weighted=True"):
        weighted.add_values(values)
    # A weighted accumulator takes (token, weight) pairs only, and only valid weights.
    with pytest.raises(ValueError, match="add_values"):
        weighted.add_table(table)
    with pytest.raises(ValueError, match="1 of 6 weights are not valid"):
        weighted.add_values(values, np.array([1.0, 1.0, -1.0, 1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="one weight per value"):
        weighted.add_values(values, np.ones(5))
    with pytest.raises(ValueError, match="nan"):
        b.add(x, 0, np.array([1.0, np.nan, 1.0, 1.0, 1.0]))


def test_bad_weights_and_a_weighted_min_count_of_one_warn(runs) -> None:
    from beam_prep.analyzers.data_warnings import data_warnings

    m = json.loads((runs["dirs"]["a"] / "manifest.json").read_text())
    lines = data_warnings(m)
    bad = len(range(0, ROWS, 97))
    for name in ("city", "code", "words", "x"):
        assert f"warning: {name}: {bad:,} rows set aside: their weight is missing, NaN, " \
               "negative or infinite (invalid_weight_count)" in lines
    assert not any(line.startswith("warning: city_plain") for line in lines)
    m["spec"]["features"][0]["min_count"] = 1
    m["features"]["city"]["stats"]["dropped_min_count"] = {"tokens": 4, "count": 0.5}
    assert any("4 tokens dropped" in line and "min_count: 0" in line for line in data_warnings(m))


def test_list_features_count_each_value_with_its_row_weight(tmp_path) -> None:
    rows = [{"tags": ["a", "b", "a"], "w": 0.5}, {"tags": [], "w": 2.0},
            {"tags": ["b"], "w": 1.25}, {"tags": None, "w": 3.0}, {"tags": ["c"], "w": -1.0},
            {"tags": ["c", "a"], "w": 0.0}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text(
        "features:\n  - {name: tags, kind: string, shape: list, weights: w, min_count: 0}\n")
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                 "--output", str(tmp_path / "o"), "--quiet", "--no_report"])
    expected = _oracle_vocab([r["tags"] or [] for r in rows], [r["w"] for r in rows])
    _check_vocab(tmp_path / "o", "tags", expected)
    stats = json.loads((tmp_path / "o" / "manifest.json").read_text())["features"]["tags"]
    assert stats["stats"]["invalid_weight_count"] == 1
    assert stats["stats"]["missing_count"] == 2


def test_a_weights_column_may_be_an_integer_column_of_another_feature(tmp_path) -> None:
    from beam_prep.analyzers.split_fn import required_columns

    spec = Spec.from_dict({"features": [
        {"name": "item", "kind": "integer", "column": "n"},
        {"name": "city", "kind": "string", "weights": "n", "min_count": 0}]})
    assert required_columns(spec) == {"n": "int64", "city": "string"}
    (tmp_path / "d.csv").write_text("n,city\n3,a\n1,b\n2,a\n,b\n")
    (tmp_path / "s.yaml").write_text(json.dumps(spec.to_dict()))
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.csv"),
                 "--output", str(tmp_path / "o"), "--quiet", "--no_report"])
    assert _counts(tmp_path / "o" / "vocab" / "city.counts.jsonl") == [("a", 5), ("b", 1)]
    stats = json.loads((tmp_path / "o" / "manifest.json").read_text())["features"]["city"]
    assert stats["stats"]["invalid_weight_count"] == 1
    bad = Spec.from_dict({"features": [{"name": "s", "kind": "string", "column": "n"},
                                       {"name": "c", "kind": "string", "weights": "n"}]})
    with pytest.raises(SpecError, match="`weights` of feature 'c'.*numeric column"):
        required_columns(bad)


def test_float_runs_survive_spilling_and_merge_levels(tmp_path) -> None:
    import pyarrow as pa

    from beam_prep.analyzers.vocab.merge import merge_runs, write_run
    from beam_prep.analyzers.vocab.topk import sort_vocabulary
    from beam_prep.analyzers.vocab.weights import WEIGHTED_SCHEMA

    rng = np.random.default_rng(4)
    runs, everything = [], []
    for r in range(7):  # disjoint tokens per run, as hash partitions
        tokens = [f"r{r}t{i}" for i in range(30)]
        counts = rng.integers(0, 20, 30) / 4.0
        table = sort_vocabulary(pa.Table.from_arrays(
            [pa.array(tokens, pa.large_string()), pa.array(counts), pa.array(np.zeros(30, int))],
            schema=WEIGHTED_SCHEMA))
        everything.append(table)
        runs.append(write_run(table, str(tmp_path / f"run{r}.arrow"), batch_rows=4)
                    if r % 2 else table)
    merged = pa.concat_tables(list(merge_runs(runs, fan_in=2, batch_rows=4,
                                              temp_dir=str(tmp_path / "levels"))))
    assert merged.schema.field("count").type == pa.float64()
    assert merged.equals(sort_vocabulary(pa.concat_tables(everything)).combine_chunks()) or \
        merged.to_pydict() == sort_vocabulary(pa.concat_tables(everything)).to_pydict()
