"""Label-aware vocabularies (``labels:``): scores against a from-scratch numpy/Python oracle.

The oracle below recomputes TFT's formula (docs/label_vocabulary.md) from the raw rows with
``collections.Counter`` and ``math.log2``, one token and label at a time; the job's sidecar
scores, the vocabulary order and the manifest statistics must match it. A hand-checked case
pins the formula itself: a token that predicts its label perfectly in 2 of 4 rows is worth
2 bits-rows. Byte-identity across batch sizes, partitions and threads checks determinism.
"""

from __future__ import annotations

import collections
import json
import math
from pathlib import Path

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from beam_prep.errors import SpecError
from beam_prep.io.contract.label_sidecar import mutual_info_rows
from beam_prep.spec import Spec, StringFeature
from tests.artifact_diff import assert_same_artifacts


def _run(tmp: Path, spec: str, header: list[str], rows: list[list], name: str = "out",
         *extra: str) -> Artifacts:
    data = tmp / "data.jsonl"
    if not data.exists():
        data.write_text("".join(json.dumps(dict(zip(header, r))) + "\n" for r in rows),
                        encoding="utf-8")
    (tmp / "spec.yaml").write_text(spec, encoding="utf-8")
    analyze.run(["--spec", str(tmp / "spec.yaml"), "--input", str(data), "--output",
                 str(tmp / name), "--quiet", *extra])
    return Artifacts(str(tmp / name))


def oracle(tokens: list, labels: list, *, min_diff: float, adjusted: bool = False) -> dict:
    """Token → TFT's (adjusted) MI, from raw (token set per row, label) pairs."""
    rows = [(set(t if isinstance(t, list) else [t]) - {None}, y)
            for t, y in zip(tokens, labels) if y is not None and y >= 0]
    n = len(rows)
    y_count = collections.Counter(y for _, y in rows)
    x_count = collections.Counter(tok for ts, _ in rows for tok in ts)
    joint = collections.Counter((tok, y) for ts, y in rows for tok in ts)
    out = {}
    for tok, x in x_count.items():
        if x == n:
            out[tok] = 0.0
            continue
        total = 0.0
        for y, yc in y_count.items():
            m = min(max(joint[(tok, y)] / x, 1e-6), 1 - 1e-6) * x
            if abs(x * yc / n - m) < min_diff:
                continue
            total += m * (math.log2(m) + math.log2(n) - math.log2(x) - math.log2(yc))
            if adjusted:
                total -= _emi(n, x, yc)
        out[tok] = total
    return out


def _emi(n: int, x: int, y: int) -> float:
    """Expected MI of (x, y) under the hypergeometric law, with exact binomials."""
    total = 0.0
    for k in range(max(0, x + y - n), min(x, y) + 1):
        p = math.comb(x, k) * math.comb(n - x, y - k) / math.comb(n, y)
        if k:
            total += p * k * math.log2(n * k / (x * y))
    return total


def test_a_perfect_predictor_scores_its_rows_in_bits(tmp_path):
    art = _run(tmp_path, "features:\n  - {name: t, kind: string, labels: y, "
               "min_diff_from_avg: 0}\n", ["t", "y"],
               [["a", 1], ["a", 1], ["b", 0], ["b", 0]])
    rows = mutual_info_rows(art, "t")
    # a: label 1 in both of its rows, P(1) = 1/2: 2 rows x 1 bit (less the 1e-6 clip).
    assert [t for t, _, _ in rows] == ["b", "a"]  # equal scores: bytes descending
    assert [s for _, s, _ in rows] == pytest.approx([2.0, 2.0], abs=1e-4)
    assert [c for _, _, c in rows] == [2, 2]


SCORED = [(False, 0), (False, 4), (True, 0), (True, None)]  # (adjusted, min_diff_from_avg)


def _scored_name(adjusted: bool, min_diff: int | None) -> str:
    return f"t_{'ami' if adjusted else 'mi'}_{'default' if min_diff is None else min_diff}"


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """One analysis of the rows with one feature per (adjusted, min_diff) case, all on the
    column ``t`` (one pipeline instead of one per case)."""
    rng = np.random.default_rng(3)
    n = 600
    y = [int(v) for v in rng.integers(0, 3, n)]
    t = [f"k{int(rng.integers(0, 12)) + 3 * y[i] * (rng.random() < 0.4)}" for i in range(n)]
    y[5], t[9] = None, None  # a row without label; a row without value
    spec = "features:\n"
    for adjusted, min_diff in SCORED:
        option = "" if min_diff is None else f", min_diff_from_avg: {min_diff}"
        spec += (f"  - {{name: {_scored_name(adjusted, min_diff)}, column: t, kind: string, "
                 f"labels: y{option}{', adjusted_mutual_info: true' if adjusted else ''}}}\n")
    art = _run(tmp_path_factory.mktemp("scored"), spec, ["t", "y"],
               [[a, b] for a, b in zip(t, y)])
    return t, y, art


@pytest.mark.parametrize("adjusted, min_diff", SCORED)
def test_scores_and_order_match_the_oracle(scored, adjusted, min_diff):
    t, y, art = scored
    name = _scored_name(adjusted, min_diff)
    want = oracle(t, y, min_diff=2 if min_diff is None else min_diff, adjusted=adjusted)
    rows = mutual_info_rows(art, name)
    assert {tok: s for tok, s, _ in rows} == pytest.approx(want, rel=1e-9, abs=1e-9)
    expected_order = sorted(want, key=lambda k: (-want[k], [-b for b in k.encode()]))
    assert [tok for tok, _, _ in rows] == expected_order
    assert art.vocabulary(name) == expected_order
    stats = art.stats(name)["mutual_info"]
    labelled = [v for v in y if v is not None]
    assert stats["rows"] == len(labelled) and stats["rows_without_label"] == 1
    assert stats["label_rows"] == {str(k): v for k, v in
                                  sorted(collections.Counter(labelled).items())}
    assert art.stats(name)["missing_count"] == 1


def test_list_features_count_a_token_once_per_row_and_integers_as_decimal(tmp_path):
    rows = [[["a", "a", "b"], 1, [3, 3]], [["b"], 0, [10]], [["c", "a"], 1, [3]],
            [[], 0, [10, 3]], [["c"], -1, [7]], [["a"], 1, []]]
    art = _run(tmp_path, "features:\n  - {name: t, kind: string, shape: list, labels: y, "
               "min_diff_from_avg: 0}\n  - {name: i, kind: integer, shape: list, labels: y,"
               " min_diff_from_avg: 0}\n", ["t", "y", "i"], rows)
    tokens, ints, labels = zip(*[(r[0], r[2], r[1]) for r in rows])
    want = oracle(list(tokens), list(labels), min_diff=0)
    got = {tok: s for tok, s, _ in mutual_info_rows(art, "t")}
    assert got == pytest.approx(want, rel=1e-9)
    assert dict(art.counts("t")) == {"a": 3, "b": 2, "c": 1}  # 'c' of the -1 row left out
    want_i = oracle([[str(v) for v in r] for r in ints], list(labels), min_diff=0)
    assert {t: s for t, s, _ in mutual_info_rows(art, "i")} == pytest.approx(want_i, rel=1e-9)


def test_filters_top_k_min_count_and_min_mutual_info(tmp_path):
    rng = np.random.default_rng(5)
    y = [int(v) for v in rng.integers(0, 2, 400)]
    t = [f"w{int(rng.integers(0, 20)) + 20 * y[i] * (i % 3 == 0)}" for i in range(400)]
    rows = [[a, b] for a, b in zip(t, y)]
    want = oracle(t, y, min_diff=0)
    counts = collections.Counter(t)
    art = _run(tmp_path, "features:\n  - {name: t, kind: string, labels: y, top_k: 5, "
               "min_count: 12, min_mutual_info: 0.5, min_diff_from_avg: 0}\n", ["t", "y"], rows,
               "out", "--vocab_partitions", "4")  # local top_k per partition, then global
    kept = [k for k in want if counts[k] >= 12 and want[k] >= 0.5]
    best = sorted(kept, key=lambda k: (-want[k], [-b for b in k.encode()]))[:5]
    assert art.vocabulary("t") == best
    st = art.stats("t")
    assert st["dropped_min_count"]["tokens"] == sum(1 for k in want if counts[k] < 12)
    assert st["mutual_info"]["dropped_min_mutual_info"]["tokens"] == sum(
        1 for k in want if counts[k] >= 12 and want[k] < 0.5)
    assert st["dropped_top_k"]["tokens"] == len(kept) - 5
    assert st["distinct_values"] == len(want)


def test_artifacts_do_not_depend_on_batches_partitions_or_threads(tmp_path):
    rng = np.random.default_rng(11)
    rows = [[f"q{int(rng.integers(0, 40))}", int(rng.integers(0, 4)),
             [f"z{int(v)}" for v in rng.integers(0, 9, int(rng.integers(0, 4)))]]
            for _ in range(700)]
    spec = ("features:\n  - {name: q, kind: string, labels: y, adjusted_mutual_info: true}\n"
            "  - {name: z, kind: string, shape: list, labels: y}\n"
            "  - {name: plain, column: q, kind: string}\n")
    a = _run(tmp_path, spec, ["q", "y", "z"], rows, "a", "--batch_size", "700")
    b = _run(tmp_path, spec, ["q", "y", "z"], rows, "b", "--batch_size", "13",
             "--vocab_partitions", "5", "--split_threads", "2")
    assert_same_artifacts(Path(a.path), Path(b.path))


def test_spec_without_labels_keeps_its_canonical_form():
    d = StringFeature("a", top_k=3).to_dict()
    assert not {"labels", "adjusted_mutual_info", "min_diff_from_avg",
                "min_mutual_info"} & set(d)
    assert StringFeature("a", labels="y").to_dict()["labels"] == "y"


@pytest.mark.parametrize("entry, message", [
    ("{name: a, kind: string, min_diff_from_avg: 2}", "`min_diff_from_avg` must be null unless"),
    ("{name: a, kind: integer, labels: y, min_diff_from_avg: -1}", "a finite number >= 0"),
    ("{name: a, kind: string, labels: a}", "another column than the feature's own"),
    ("{name: a, kind: string, labels: ''}", "the name of an integer label column"),
    ("{name: a, kind: text, labels: y}", "labels"),
])
def test_bad_label_fields_are_refused_in_one_line(entry, message):
    with pytest.raises(SpecError) as e:
        Spec.from_yaml_text(f"features:\n  - {entry}\n")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_label_column_read_as_another_type_is_refused():
    from beam_prep.analyzers.split_fn import required_columns

    spec = Spec.from_yaml_text("features:\n  - {name: a, kind: string, labels: y}\n"
                               "  - {name: y, kind: string}\n")
    with pytest.raises(SpecError, match="'y' is read as"):
        required_columns(spec)


def test_dictionary_encoded_batches_count_like_plain_ones():
    """Parquet strings arrive dictionary-encoded, possibly with repeated or null values."""
    import pyarrow as pa

    from beam_prep.analyzers.label.counts import count_batch

    codes = pa.array([0, 1, 2, 0, None, 3, 2])
    encoded = pa.DictionaryArray.from_arrays(codes, pa.array(["a", None, "a", "b"]))
    plain = pa.array(["a", None, "a", "a", None, "b", "a"])
    labels = pa.array([1, 1, 0, 1, 1, None, 0])

    def rows(table):
        return sorted(zip(*(table.column(c).to_pylist() for c in ("token", "label", "count"))),
                      key=str)

    want = collections.Counter((t, y) for t, y in zip(plain.to_pylist(), labels.to_pylist())
                               if t is not None and y is not None)
    got = rows(count_batch(encoded, labels))
    assert got == rows(count_batch(plain, labels))
    assert {(t, y): c for t, y, c in got if t is not None} == dict(want)
    assert {y: c for t, y, c in got if t is None} == {-1: 1, 0: 2, 1: 4}


def test_a_missing_label_column_fails_before_the_pipeline_naming_it(tmp_path):
    from beam_prep.errors import InputError

    (tmp_path / "d.csv").write_text("city,y\nA,1\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text(
        "features:\n  - {name: city, kind: string, labels: clicked}\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.csv"),
                     "--output", str(tmp_path / "out"), "--quiet"])
    assert "'clicked' (feature 'city')" in str(e.value) and "`labels`" in str(e.value)
    assert not (tmp_path / "out" / "manifest.json").exists()
