"""The ranking benchmarks' shared file/metric module and the generator's list-length option."""

from __future__ import annotations

import ast
import math
import os

import numpy as np
import pytest

from benchmarks import bench_ranking_quality as bench
from benchmarks import gen_ranking, ltr_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _imported(path: str) -> set[str]:
    """Every module name a file imports, at the top or inside a function."""
    names: set[str] = set()
    with open(path) as f:
        for node in ast.walk(ast.parse(f.read())):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
    return {n.rsplit(".", 1)[-1] for n in names}


def test_benchmark_scripts_do_not_import_each_other() -> None:
    """gen_ranking and the ranking benchmarks share ltr_files, not each other (no cycle)."""
    scripts = ("gen_ranking", "bench_ranking_quality", "tune_lightgbm",
               "explore_ranking_holdout")
    for script in scripts:
        got = _imported(os.path.join(ROOT, "benchmarks", f"{script}.py"))
        assert "ltr_files" in got, script
        if script in ("gen_ranking", "bench_ranking_quality"):
            assert not got & {"gen_ranking", "bench_ranking_quality"}, (script, got)
    assert not _imported(os.path.join(ROOT, "benchmarks", "ltr_files.py")) & set(scripts)


def test_default_list_sizes_keep_the_old_stream() -> None:
    """The default draws sizes exactly as before the option: rng.integers(5, 31)."""
    x, y, sizes = gen_ranking.generate(200, seed=3)
    np.testing.assert_array_equal(sizes, np.random.default_rng(3).integers(5, 31, 200))
    x2, y2, sizes2 = gen_ranking.generate(200, seed=3, list_sizes=(5, 30))
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(sizes, sizes2)


def test_long_lists_cover_the_range(tmp_path) -> None:  # noqa: ANN001
    gen_ranking.main(["--out", str(tmp_path), "--train_queries", "400", "--test_queries",
                      "40", "--list_sizes", "20,200"])
    sizes = np.loadtxt(tmp_path / "rank.train.query", dtype="int64")
    assert len(sizes) == 400 and sizes.min() >= 20 and sizes.max() <= 200
    assert sizes.min() < 30 and sizes.max() > 190            # both ends reached
    x, y, read_sizes = ltr_files.read_lightgbm(str(tmp_path / "rank.train"), 24)
    np.testing.assert_array_equal(read_sizes, sizes)
    assert x.shape == (sizes.sum(), 24) and set(np.unique(y)) <= {0, 1, 2, 3, 4}


def test_list_ranks_are_appended_per_list_and_leave_the_labels(tmp_path) -> None:  # noqa: ANN001
    gen_ranking.main(["--out", str(tmp_path / "plain"), "--train_queries", "30",
                      "--test_queries", "5"])
    gen_ranking.main(["--out", str(tmp_path / "ranked"), "--train_queries", "30",
                      "--test_queries", "5", "--list_ranks"])
    x, y, sizes = ltr_files.read_lightgbm(str(tmp_path / "plain" / "rank.train"), 24)
    x2, y2, sizes2 = ltr_files.read_lightgbm(str(tmp_path / "ranked" / "rank.train"), 48)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(sizes, sizes2)
    np.testing.assert_array_equal(x, x2[:, :24])
    start = 0
    for n in sizes:                                   # a per-list loop, as a reader would
        block = x[start:start + n]
        for j in (0, 9, 23):
            below = (block[:, j][:, None] > block[:, j][None, :]).sum(axis=1)
            np.testing.assert_allclose(x2[start:start + n, 24 + j], below / max(n - 1, 1),
                                       atol=1e-6)
        start += n


def test_bad_list_sizes_is_one_line() -> None:
    with pytest.raises(SystemExit, match="--list_sizes: '30,20' is not MIN,MAX"):
        gen_ranking.main(["--out", "/nonexistent", "--list_sizes", "30,20"])


def _clean(family: str, x: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    return gen_ranking._relevance(x, sizes, None, family)


def test_families_listwise_terms_against_a_per_list_loop() -> None:
    """Each family's list term, recomputed one list at a time in plain Python."""
    x, _, sizes = gen_ranking.generate(60, seed=1)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    shared = gen_ranking._shared_terms(x)
    b0, logc4 = x[:, 8], np.log1p(x[:, 4])
    listwise, pointwise = _clean("listwise", x, sizes), _clean("pointwise", x, sizes)
    pct = gen_ranking._list_percentile(logc4, sizes)
    for a, b in zip(starts[:-1], starts[1:]):
        mean = sum(b0[a:b]) / (b - a)
        np.testing.assert_allclose(listwise[a:b], shared[a:b] + 2.0 * (b0[a:b] - mean))
        np.testing.assert_allclose(pointwise[a:b], shared[a:b] + 2.0 * (b0[a:b] - 0.5))
        for i in range(a, b):   # rank among the list (ties impossible: continuous draws)
            below = sum(1 for j in range(a, b) if logc4[j] < logc4[i])
            assert pct[i] == pytest.approx(below / max(b - a - 1, 1))


def test_pointwise_and_mixed_scores_do_not_move_with_the_list_as_designed() -> None:
    """Moving a document to another list: pointwise keeps its relevance, the others do not."""
    x, _, sizes = gen_ranking.generate(40, seed=2)
    first = int(sizes[0])
    moved = np.concatenate([x[first:], x[:first]])     # list 0 now last, same members
    resized = np.concatenate([sizes[1:], sizes[:1]])
    split = np.array([first - 1, 1] + list(sizes[1:]))  # list 0 cut into two lists
    for family, changes in (("pointwise", False), ("listwise", True), ("mixed", True)):
        base = _clean(family, x, sizes)
        np.testing.assert_allclose(
            _clean(family, moved, resized), np.concatenate([base[first:], base[:first]]))
        differs = not np.allclose(_clean(family, x, split)[:first], base[:first])
        assert differs is changes, family


def test_families_give_labels_at_the_global_cuts_and_unknown_is_refused(tmp_path) -> None:
    for family in gen_ranking.FAMILIES:
        x, y, sizes = gen_ranking.generate(800, seed=0, family=family)
        share = np.bincount(y, minlength=5) / len(y)
        np.testing.assert_allclose(share, [0.50, 0.25, 0.15, 0.07, 0.03], atol=0.005)
        oracle = gen_ranking.oracle_ndcg(x, y, sizes, family)
        assert 0.5 < oracle < 1.0, family
    with pytest.raises(ValueError, match="family: 'nope' is not one of"):
        gen_ranking.generate(10, family="nope")
    with pytest.raises(ValueError, match="features: 12 is too few for family 'mixed'"):
        gen_ranking.generate(10, features=12, family="mixed")
    with pytest.raises(SystemExit):
        gen_ranking.main(["--out", str(tmp_path), "--family", "nope"])


def test_write_read_round_trip(tmp_path) -> None:  # noqa: ANN001
    rng = np.random.default_rng(0)
    x = rng.lognormal(0, 2, (7, 3)).astype("float32")
    y, sizes = np.array([0, 1, 2, 3, 4, 0, 1]), np.array([3, 4])
    ltr_files.write_lightgbm(str(tmp_path / "r"), x, y, sizes)
    x2, y2, s2 = ltr_files.read_lightgbm(str(tmp_path / "r"), 3)
    np.testing.assert_allclose(x2, x, rtol=1e-5)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(s2, sizes)


def test_ndcg_against_hand_formula() -> None:
    labels = ltr_files.padded(np.array([2.0, 0.0, 1.0, 0.0, 0.0]), np.array([3, 2]), -1.0)
    scores = ltr_files.padded(np.array([0.9, 0.8, 0.1, 0.5, 0.2]), np.array([3, 2]), 0.0)
    # list 1 ranked (2, 0, 1): DCG 3 + 0 + 1/log2(4); ideal (2, 1, 0): 3 + 1/log2(3).
    # list 2 has no relevant document: IDCG = 0 -> it scores 0 and counts.
    want = (3 + 1 / math.log2(4)) / (3 + 1 / math.log2(3)) / 2
    assert ltr_files.numpy_ndcg(labels, scores) == pytest.approx(want, abs=1e-12)


def test_test_batches_of_different_widths_are_scored_as_one_array() -> None:
    """Long lists: each test batch is padded to its own longest list (here 3, then 2 wide)."""
    labels = [np.array([[2.0, 0.0, 1.0]]), np.array([[0.0, 1.0]])]
    scores = [np.array([[0.9, 0.8, 0.1]]), np.array([[0.2, 0.5]])]
    y, s = bench.padded_rows(labels, -1), bench.padded_rows(scores, 0.0)
    assert y.tolist() == [[2.0, 0.0, 1.0], [0.0, 1.0, -1.0]]
    assert s.shape == (2, 3)
    # list 1 as in test_ndcg_against_hand_formula; list 2 ranks its relevant document first
    want = ((3 + 1 / math.log2(4)) / (3 + 1 / math.log2(3)) + 1.0) / 2
    assert ltr_files.numpy_ndcg(y, s) == pytest.approx(want, abs=1e-12)


def test_bench_seeds_share_no_ensemble_member() -> None:
    """Member i of an ensemble trains with training.seed + i: bench seeds 0-4 of a 3-member
    ensemble must use 15 distinct member seeds (consecutive seeds gave 7)."""
    members = [bench.launcher_seed(s) + i for s in range(5) for i in range(3)]
    assert len(set(members)) == 15
    assert len({s + i for s in range(5) for i in range(3)}) == 7  # the old mapping


def test_lightgbm_seed_dependence_and_cpu_lines() -> None:
    assert not bench.lgb_depends_on_seed({"num_leaves": 15, "learning_rate": 0.05})
    assert not bench.lgb_depends_on_seed({"bagging_fraction": 1.0})
    assert bench.lgb_depends_on_seed({"bagging_fraction": 0.8, "bagging_freq": 1})
    assert bench.lgb_depends_on_seed({"feature_fraction": 0.5})
    # More training documents than the binning sample: the bins come from a seeded sample.
    assert not bench.lgb_depends_on_seed({}, rows=bench.LGB_BIN_SAMPLE)
    assert bench.lgb_depends_on_seed({}, rows=bench.LGB_BIN_SAMPLE + 1)
    assert not bench.lgb_depends_on_seed({"bin_construct_sample_cnt": 10**6}, rows=300_000)
    assert bench.cpu_lines([10.0, 14.0], [2.0]) == [
        "cpu_s per training, ours: 12.0 ± 2.8 (min 10.0, max 14.0, 2 trainings)",
        "cpu_s per training, lightgbm: 2.0 ± 0.0 (min 2.0, max 2.0, 1 training)"]


def test_ensemble_curve_finds_a_run_and_averages_the_first_k(tmp_path) -> None:  # noqa: ANN001
    """A bench run's ELWC globs (convert's layout); ensemble_curve's k-th point is the mean of
    the first k members' scores (the served score of ``model.ensemble: k``)."""
    from benchmarks import ensemble_curve

    with pytest.raises(FileNotFoundError, match="run_<fold>"):
        bench.run_files(str(tmp_path))
    for split in ("train", "test"):
        d = tmp_path / f"elwc_{split}" / "dataset"
        d.mkdir(parents=True)
        (d / "feature_spec.json").write_text("{}")
    files = bench.run_files(str(tmp_path))
    assert "valid" not in files
    assert files["spec"] == str(tmp_path / "elwc_train" / "dataset" / "feature_spec.json")
    assert files["test"] == str(tmp_path / "elwc_test" / "dataset" / "*.tfrecord*")
    scores = [np.array([[1.0, 4.0]]), np.array([[3.0, 0.0]]), np.array([[5.0, 2.0]])]
    np.testing.assert_allclose(ensemble_curve.mean_of_first(scores, 1), [[1.0, 4.0]])
    np.testing.assert_allclose(ensemble_curve.mean_of_first(scores, 2), [[2.0, 2.0]])
    np.testing.assert_allclose(ensemble_curve.mean_of_first(scores, 3), [[3.0, 2.0]])
