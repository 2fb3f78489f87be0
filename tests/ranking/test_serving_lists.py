"""Every document is scored: ``serving_default`` takes lists of any length (1 to 1,000 documents
after training on ``list_size`` 32) and returns one score per document, padding defined.

Each export is trained here, then served in a fresh TensorFlow-only process (no Keras, no JAX:
``long_lists.SERVE_SCRIPT``) as a serving client would. Oracles: the trained Keras model in
this process on the same documents cut into lists of at most ``list_size`` (``dnn`` scores
each document alone, so the served score of a document of a 1,000-document list is its score
in any shorter list); for ``dasalc`` the model on lists of at most ``list_size``, and the
properties permutation -> permuted scores, padding -> unchanged scores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from beam_prep.ranking.train.export import PADDING_SCORE
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from tests.ranking import long_lists as ll

TOL = {"rtol": 1e-5, "atol": 1e-5}


def _requests(seed: int = 7) -> dict:
    """Lists of every length in ``ll.LENGTHS`` and of 500, each with its own context."""
    rng = np.random.default_rng(seed)
    lists = {n: (ll.context(rng), ll.docs(rng, n)) for n in (*ll.LENGTHS, 500)}
    perm = rng.permutation(200)
    ctx, docs = lists[200]
    batches = [[ll.elwc(*lists[n]) for n in ll.LENGTHS],           # 0: one batch, padded
               *[[ll.elwc(*lists[n])] for n in ll.LENGTHS],        # 1..6: each list alone
               [ll.elwc(lists[500][0], lists[500][1][:5])],        # 7: first 5 docs of ...
               [ll.elwc(*lists[500])],                             # 8: ... a list of 500
               [ll.elwc(ctx, [docs[i] for i in perm])]]            # 9: the 200 list permuted
    return {"lists": lists, "perm": perm, "batches": batches}


def _model_scores(parse, pre, model, ctx, docs, *, chunk: int = ll.LIST_SIZE) -> np.ndarray:
    """The in-process model's scores of ``docs`` cut into lists of at most ``chunk``."""
    out = []
    for i in range(0, len(docs), chunk):
        part = docs[i:i + chunk]
        features, _ = parse(tf.constant([ll.elwc(ctx, part)]))
        out.append(np.asarray(model(pre(features), training=False))[0, :len(part)])
    return np.concatenate(out)


def check_served(served: list, req: dict, scorer: str) -> None:
    """The checks every export passes (shapes, padding, batching) + the scorer's property."""
    scores, num = served[0]
    assert scores.shape == (len(ll.LENGTHS), max(ll.LENGTHS))  # padded to the longest list
    assert num.dtype == np.int32 and num.tolist() == list(ll.LENGTHS)
    for i, n in enumerate(ll.LENGTHS):
        assert np.all(np.isfinite(scores[i, :n])), n
        assert np.all(scores[i, n:] == np.float32(PADDING_SCORE)), n
        alone, alone_num = served[1 + i]
        assert alone.shape == (1, n) and alone_num.tolist() == [n]
        # padding to a longer batch changes no score (dasalc masks attention and batch norm)
        np.testing.assert_allclose(alone[0], scores[i, :n], **TOL)
    assert np.ptp(scores[-1, :1000]) > 1e-4  # the scores depend on the documents
    five, five_hundred = served[7][0][0], served[8][0][0]
    assert five.shape == (5,) and five_hundred.shape == (500,)
    if scorer == "dnn":  # a document scores the same in a list of 5 and a list of 500
        np.testing.assert_allclose(five, five_hundred[:5], **TOL)
    else:  # permuting a list permutes its scores
        by_length = dict(zip(ll.LENGTHS, scores))
        np.testing.assert_allclose(served[9][0][0], by_length[200][:200][req["perm"]], **TOL)
        assert np.abs(five - five_hundred[:5]).max() > 1e-5  # attention sees the list


def check_against_model(served: list, req: dict, parse, pre, model, scorer: str) -> None:
    """Served scores == the in-process model's (dnn: all lengths; dasalc: <= list_size)."""
    scores = served[0][0]
    for i, n in enumerate(ll.LENGTHS):
        if scorer != "dnn" and n > ll.LIST_SIZE:
            continue
        want = _model_scores(parse, pre, model, *req["lists"][n])
        np.testing.assert_allclose(scores[i, :n], want, err_msg=str(n), **TOL)


def _train(tmp_path, scorer: str, ensemble: int = 1):
    paths = ll.write_training_set(str(tmp_path / "data"))
    export_dir = str(tmp_path / "export")
    hp = RankingHparams.from_yaml_text(ll.config_yaml(paths, str(tmp_path / "m"), export_dir,
                                                      scorer=scorer, ensemble=ensemble))
    launcher = RankingLauncher(hp, layers=ll.layers(), vocab_rows={})
    result = launcher.run()
    assert result.export_path == export_dir
    return launcher, result.model, export_dir


@pytest.mark.parametrize("scorer,ensemble", [
    # the default run: a 2-member ensemble (its export is the mean of the members); one model
    # alone is served in test_encoded_training.py and test_export.py
    ("dnn", 2),
    # slow: default suite time (dasalc's padding and permutation rules: test_quality_scorers.py)
    pytest.param("dnn", 1, marks=pytest.mark.slow),
    pytest.param("dasalc", 1, marks=pytest.mark.slow),
    pytest.param("dasalc", 2, marks=pytest.mark.slow)])
def test_tensorflow_export_scores_every_document(tmp_path, scorer, ensemble):
    launcher, model, export_dir = _train(tmp_path, scorer, ensemble)
    req = _requests()
    served = ll.serve(export_dir, req["batches"], str(tmp_path))
    check_served(served, req, scorer)
    check_against_model(served, req, launcher.datasets.parse_fn, launcher.preprocessor, model,
                        scorer)


JAX_WORKER = """
import json, pickle, sys
import numpy as np
import tensorflow as tf
from beam_prep.ranking.train.backend import make_launcher
from beam_prep.ranking.train.hparams import RankingHparams
from tests.ranking import long_lists as ll
from tests.ranking.test_serving_lists import _model_scores
paths, tmp, requests = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
lists = pickle.load(open(requests, "rb"))
want = {}
for scorer in ("dnn", "dasalc"):
    hp = RankingHparams.from_yaml_text(ll.config_yaml(
        paths, f"{tmp}/m_{scorer}", f"{tmp}/export_{scorer}", scorer=scorer, backend="jax"))
    launcher = make_launcher(hp, layers=ll.layers(), vocab_rows={})
    assert type(launcher).__name__ == "JaxRankingLauncher"
    model = launcher.run().model
    pre = launcher.preprocessor
    def np_pre(f):
        return {k: np.asarray(v) for k, v in pre(f).items()}
    want[scorer] = {n: _model_scores(launcher.datasets.parse_fn, np_pre, model, *lists[n])
                    for n in lists}
pickle.dump(want, open(f"{tmp}/want.pkl", "wb"))
print("EXPORTED")
"""


@pytest.mark.slow
def test_jax_export_scores_every_document(tmp_path):
    """jax2tf with a polymorphic list axis: the same checks as on TensorFlow, both scorers
    (two JAX trainings in a subprocess: about 6 minutes on 2 loaded cores)."""
    import importlib.util
    import pickle

    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed (pip install beam-prep[jax])")
    paths = ll.write_training_set(str(tmp_path / "data"))
    req = _requests()
    small = {n: req["lists"][n] for n in ll.LENGTHS if n <= ll.LIST_SIZE} | {
        1000: req["lists"][1000]}
    with open(tmp_path / "lists.pkl", "wb") as f:
        pickle.dump(small, f)
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": ll.ROOT,
           "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "-1"}
    proc = subprocess.run([sys.executable, "-c", JAX_WORKER, json.dumps(paths), str(tmp_path),
                           str(tmp_path / "lists.pkl")], capture_output=True, text=True,
                          timeout=900, cwd=ll.ROOT, env=env)
    assert proc.returncode == 0 and "EXPORTED" in proc.stdout, proc.stderr[-3000:]
    with open(tmp_path / "want.pkl", "rb") as f:
        want = pickle.load(f)
    for scorer in ("dnn", "dasalc"):
        served = ll.serve(str(tmp_path / f"export_{scorer}"), req["batches"], str(tmp_path))
        check_served(served, req, scorer)
        scores = dict(zip(ll.LENGTHS, served[0][0]))
        for n, w in want[scorer].items():
            if scorer == "dnn" or n <= ll.LIST_SIZE:
                np.testing.assert_allclose(scores[n][:n], w, err_msg=f"{scorer} {n}", **TOL)
