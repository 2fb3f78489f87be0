"""Target encoding statistics (``target_encoding:``) against a from-scratch oracle.

The oracle groups the raw rows with ``collections`` and sums labels as exact
``fractions.Fraction`` values, then applies the documented formula
(docs/target_encoding.md) in float64; the job's ``vocab/<f>.target.jsonl`` and manifest
entry must match it exactly. The leakage guard: with a pure-noise label and many
categories, the all-folds (serving) encoding of the training rows correlates with their
label, the out-of-fold one does not; a deliberately leaky variant fails the same check.
"""

from __future__ import annotations

import collections
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from beam_prep.pipelines import analyze

from beam_prep.analyzers.cache.key import ReaderSettings, analysis_key
from beam_prep.analyzers.target.stats import folds_of
from beam_prep.errors import SpecError
from beam_prep.spec import Spec, StringFeature, TargetEncoding

HOSTILE = ["", "a\nb", '"quoted"', "\u202eevil\x1b[31m<b>", "tab\there", "\\", "é"]


def _run(tmp: Path, spec: str, rows: list[dict], name: str = "out", *extra: str,
         files: int = 1) -> Path:
    paths = []
    for i in range(files):
        data = tmp / f"{name}-data-{i}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows[i::files]),
                        encoding="utf-8")
        paths.append(str(data))
    (tmp / "spec.yaml").write_text(spec, encoding="utf-8")
    inputs = [a for p in paths for a in ("--input", p)]
    analyze.run(["--spec", str(tmp / "spec.yaml"), *inputs, "--output", str(tmp / name),
                 "--quiet", *extra])
    return tmp / name


def _spec(folds: int = 3, smoothing: float = 2.0, kind: str = "string") -> str:
    return (f"features:\n  - {{name: t, kind: {kind}, target_encoding: {{labels: y, "
            f"fold_column: u, folds: {folds}, smoothing: {smoothing}}}}}\n")


def _lines(art: Path, name: str = "t") -> list[list]:
    text = (art / "vocab" / f"{name}.target.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def oracle(tokens: list, labels: list, fold_of_row: list[int], folds: int,
           m: float) -> dict:
    """Everything the file and the manifest hold, from the raw rows."""
    rows = [(t, Fraction(y), k) for t, y, k in zip(tokens, labels, fold_of_row)
            if y is not None and math.isfinite(y)]
    fold_rows = collections.Counter(k for _, _, k in rows)
    fold_sum = collections.defaultdict(Fraction)
    count = collections.Counter()
    total = collections.defaultdict(Fraction)
    for t, y, k in rows:
        fold_sum[k] += y
        if t is not None:
            count[(str(t), k)] += 1
            total[(str(t), k)] += y
    n, s = len(rows), sum(fold_sum.values(), Fraction(0))
    g = float(s / n) if n else 0.0
    oof_mean = [float((s - fold_sum[k]) / (n - fold_rows[k])) if n - fold_rows[k] else 0.0
                for k in range(folds)]
    out = []
    for tok in sorted({t for t, _ in count}, key=lambda t: t.encode()):
        c = [count[(tok, k)] for k in range(folds)]
        sk = [total[(tok, k)] for k in range(folds)]
        st = sum(sk, Fraction(0))
        enc = (float(st) + m * g) / (sum(c) + m)
        oof = []
        for k in range(folds):
            rest_c = sum(c) - c[k]
            oof.append((float(st - sk[k]) + m * oof_mean[k]) / (rest_c + m)
                       if rest_c + m > 0 else oof_mean[k])
        out.append([tok, enc, c, [float(v) for v in sk], oof])
    return {"lines": out, "rows": n, "rows_per_fold": [fold_rows[k] for k in range(folds)],
            "global_mean": g, "out_of_fold_means": oof_mean}


def _data(seed: int, n: int = 400, cats: int = 15, *, float_labels: bool = False):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        y = float(rng.normal(3, 2)) if float_labels else float(rng.random() < 0.3)
        rows.append({"t": f"c{int(rng.integers(0, cats))}", "u": int(rng.integers(0, 60)),
                     "y": y})
    rows[0]["y"] = None
    rows[1]["t"] = None
    rows[2]["y"] = 0.1
    return rows


@pytest.mark.parametrize("float_labels", [False, True])
def test_file_and_manifest_match_the_oracle(tmp_path, float_labels):
    rows = _data(1, float_labels=float_labels)
    art = _run(tmp_path, _spec(folds=4, smoothing=3.5), rows)
    folds = folds_of(pa.array([r["u"] for r in rows]), 4).tolist()
    want = oracle([r["t"] for r in rows], [r["y"] for r in rows], folds, 4, 3.5)
    assert _lines(art) == want["lines"]
    stats = json.loads((art / "manifest.json").read_text())["features"]["t"]["stats"]
    te = stats["target_encoding"]
    for key in ("rows", "rows_per_fold", "global_mean", "out_of_fold_means"):
        assert te[key] == want[key], key
    assert te["tokens"] == len(want["lines"])
    assert (te["label_column"], te["fold_column"], te["folds"]) == ("y", "u", 4)


def test_integer_feature_and_zero_smoothing(tmp_path):
    rng = np.random.default_rng(5)
    rows = [{"t": int(rng.integers(-3, 30)), "u": f"s{int(rng.integers(0, 9))}",
             "y": float(rng.integers(0, 5))} for _ in range(300)]
    art = _run(tmp_path, _spec(folds=2, smoothing=0, kind="integer"), rows)
    folds = folds_of(pa.array([r["u"] for r in rows]), 2).tolist()
    want = oracle([r["t"] for r in rows], [r["y"] for r in rows], folds, 2, 0.0)
    assert _lines(art) == want["lines"]


def test_folds_depend_only_on_the_fold_value():
    values = pa.array(list(range(5000)) * 2)
    folds = folds_of(values, 5)
    assert (folds[:5000] == folds[5000:]).all()  # same value, same fold
    assert (folds_of(pa.array([str(v) for v in range(5000)]), 5) == folds[:5000]).all()
    assert (folds_of(values.slice(7, 100), 5) == folds[7:107]).all()  # batch-independent
    counts = np.bincount(folds[:5000], minlength=5)
    chi2 = float(((counts - 1000) ** 2 / 1000).sum())
    assert chi2 < 20.5, counts  # 4 d.o.f.: p < 0.0004 for a fair hash


def _row_encodings(art: Path, rows: list[dict], folds: int) -> tuple[np.ndarray, ...]:
    lines = {line[0]: line for line in _lines(art)}
    stats = json.loads((art / "manifest.json").read_text())["features"]["t"]["stats"]
    te = stats["target_encoding"]
    fold = folds_of(pa.array([r["u"] for r in rows]), folds)
    serving = np.array([lines[r["t"]][1] if r["t"] in lines else te["global_mean"]
                        for r in rows])
    oof = np.array([lines[r["t"]][4][k] if r["t"] in lines else te["out_of_fold_means"][k]
                    for r, k in zip(rows, fold)])
    return serving, oof


def leak_check(encoding: np.ndarray, labels: np.ndarray) -> float:
    """The correlation of an encoding with a pure-noise label, in standard errors."""
    r = np.corrcoef(encoding, labels)[0, 1]
    return float(r * math.sqrt(len(labels)))


@pytest.fixture(scope="module")
def noise_run(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 6000
    rows = [{"t": f"c{int(rng.integers(0, 1500))}", "u": i, "y": float(rng.random() < 0.5)}
            for i in range(n)]
    art = _run(tmp_path_factory.mktemp("noise"), _spec(folds=5, smoothing=1.0), rows)
    return art, rows


def test_out_of_fold_encoding_does_not_leak_the_label(noise_run):
    art, rows = noise_run
    y = np.array([r["y"] for r in rows])
    serving, oof = _row_encodings(art, rows, 5)
    assert leak_check(serving, y) > 10  # the serving encoding has seen each row's label
    assert abs(leak_check(oof, y)) < 4  # out of fold: no more than noise


def test_the_leak_check_fails_a_leaky_variant(noise_run):
    art, rows = noise_run
    y = np.array([r["y"] for r in rows])
    serving, oof = _row_encodings(art, rows, 5)
    # deliberately leaky "out-of-fold" encodings: the serving value, or each row's own
    # label mixed in with weight 1/(rows of its token)
    assert not abs(leak_check(serving, y)) < 4
    lines = {line[0]: line for line in _lines(art)}
    leaky = np.array([(o * 4 + yi) / 5 for o, yi in zip(oof, y)])
    assert not abs(leak_check(leaky, y)) < 4
    assert lines  # the run produced tokens


def test_own_label_does_not_change_its_out_of_fold_value(tmp_path):
    rows = _data(3, n=200, cats=6)
    a = _run(tmp_path, _spec(), rows, "a")
    rows[10]["y"] = 1.0 - rows[10]["y"]
    b = _run(tmp_path, _spec(), rows, "b")
    k = int(folds_of(pa.array([rows[10]["u"]]), 3)[0])
    la = {line[0]: line for line in _lines(a)}[rows[10]["t"]]
    lb = {line[0]: line for line in _lines(b)}[rows[10]["t"]]
    assert la[4][k] == lb[4][k]
    assert la[1] != lb[1]  # the serving value did change
    assert [la[4][j] for j in range(3) if j != k] != [lb[4][j] for j in range(3) if j != k]


def test_byte_identical_across_batch_sizes_and_files(tmp_path):
    rows = _data(7, float_labels=True)
    a = _run(tmp_path, _spec(), rows, "a")
    b = _run(tmp_path, _spec(), rows, "b", "--batch_size", "29", files=3)
    assert (a / "vocab/t.target.jsonl").read_bytes() == (b / "vocab/t.target.jsonl").read_bytes()
    fa = json.loads((a / "manifest.json").read_text())["features"]
    fb = json.loads((b / "manifest.json").read_text())["features"]
    assert fa == fb


def test_hostile_tokens_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    rows = [{"t": HOSTILE[i % len(HOSTILE)], "u": i, "y": float(rng.random())}
            for i in range(70)]
    art = _run(tmp_path, _spec(), rows)
    folds = folds_of(pa.array([r["u"] for r in rows]), 3).tolist()
    want = oracle([r["t"] for r in rows], [r["y"] for r in rows], folds, 3, 2.0)
    assert _lines(art) == want["lines"]
    assert sorted(line[0] for line in _lines(art)) == sorted(HOSTILE)


@pytest.mark.parametrize("te, message", [
    ({"labels": "y", "folds": 3}, "`fold_column` must be given"),
    ({"labels": "y", "fold_column": "u", "folds": 1}, "`target_encoding.folds`"),
    ({"labels": "y", "fold_column": "u", "smoothing": -1}, "`target_encoding.smoothing`"),
    ({"labels": "y", "fold_column": "y"}, "`target_encoding.fold_column`"),
    ({"labels": "t", "fold_column": "u"}, "`target_encoding.labels`"),
])
def test_spec_errors_name_the_field(te, message):
    with pytest.raises(SpecError, match=message) as err:
        Spec.from_dict({"features": [{"name": "t", "kind": "string", "target_encoding": te}]})
    assert "\n" not in str(err.value)


def test_list_features_are_refused():
    with pytest.raises(SpecError, match="list feature"):
        StringFeature("t", shape="list",
                      target_encoding=TargetEncoding("y", "u")).validate()


def test_other_specs_keep_their_bytes_and_the_cache_key_changes():
    plain = StringFeature("t")
    assert "target_encoding" not in plain.to_dict()
    settings = ReaderSettings("jsonl", batch_size=64)
    keys = {analysis_key(Spec((f,)), settings)[0] for f in (
        plain, StringFeature("t", target_encoding=TargetEncoding("y", "u")),
        StringFeature("t", target_encoding=TargetEncoding("y", "u", folds=3)),
        StringFeature("t", target_encoding=TargetEncoding("y", "v")))}
    assert len(keys) == 4


@pytest.mark.slow  # default suite time; test_target_encoding_cache.py covers the cache
def test_cache_dir_serves_target_encoding(tmp_path):
    rows = _data(0, n=60)
    plain = _run(tmp_path, _spec(), rows, "plain")
    for name in ("cold", "warm"):
        cached = _run(tmp_path, _spec(), rows, name, "--cache_dir", str(tmp_path / "c"))
        assert _lines(cached) == _lines(plain)


def test_fold_column_read_as_another_feature_reads_it(tmp_path):
    rows = [{"t": f"c{i % 4}", "u": i % 7, "y": float(i % 2)} for i in range(60)]
    spec = ("features:\n  - {name: t, kind: string, target_encoding: {labels: y, "
            "fold_column: u, folds: 3, smoothing: 1}}\n  - {name: u, kind: integer}\n")
    art = _run(tmp_path, spec, rows)
    folds = folds_of(pa.array([r["u"] for r in rows]), 3).tolist()
    want = oracle([r["t"] for r in rows], [r["y"] for r in rows], folds, 3, 1.0)
    assert _lines(art) == want["lines"]


@pytest.mark.parametrize("case", ["normal", "wide", "subnormal", "huge", "cents", "mixed"])
def test_grouped_label_sums_are_exact(case):
    from beam_prep.analyzers.exact_sums import SUM_SHIFT
    from beam_prep.analyzers.target import stats as target_stats

    rng = np.random.default_rng(1)
    n = 3000
    x = {"normal": lambda: rng.normal(size=n),
         "wide": lambda: rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n),
         "subnormal": lambda: np.concatenate([[5e-324, -5e-324, 2.2e-308],
                                              rng.normal(size=n - 3) * 1e-310]),
         "huge": lambda: rng.normal(size=n) * 1e305,
         "cents": lambda: np.round(rng.normal(size=n) * 100, 2),
         "mixed": lambda: np.concatenate([[1e300, -1e300, 1.0, 1e-300] * 10,
                                          rng.normal(size=n - 40)])}[case]()
    groups = rng.integers(0, 40, n)
    distinct, _, sums = target_stats._group_sums(groups, x)  # noqa: SLF001
    for g, s in zip(distinct.tolist(), sums):
        assert Fraction(s, 1 << SUM_SHIFT) == sum((Fraction(v) for v in x[groups == g]),
                                                  Fraction(0))
