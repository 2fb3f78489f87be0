"""Launcher bookkeeping: early stopping (fit and custom loops), TensorBoard event files, and
the ``drop_remainder`` guard on validation data.

The data is synthetic and written here as ELWC text protos: one float feature ``x`` per
document. Training lists are labelled by increasing ``x``, validation lists by *decreasing*
``x``, so whatever the model learns on the training lists makes the validation NDCG worse:
the watched metric stops improving and early stopping must fire before ``training.epochs``.
"""

from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.util import event_pb2
from tensorflow_serving.apis import input_pb2

from beam_prep.ranking.data.tfrecord import write_tfrecords
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.losses import get_loss
from beam_prep.ranking.train.metrics import ranking_metrics
from beam_prep.ranking.train.validation import Validation, list_weights, model_scorer

SPEC = ElwcFeatureSpec(context=(), example=(FeatureInfo("x", "float", (), 0.0),),
                       label=LabelInfo("relevance", "int64", -1.0))
LIST_SIZE = 4
EPOCHS = 12
PATIENCE = 2
STEPS = 2


def _elwc(xs, labels) -> bytes:
    docs = "".join(
        f'examples {{ features {{ feature {{ key: "x" value {{ float_list {{ value: [{x}] }} }} }}'
        f' feature {{ key: "relevance" value {{ int64_list {{ value: [{y}] }} }} }} }} }}\n'
        for x, y in zip(xs, labels))
    return text_format.Parse(docs, input_pb2.ExampleListWithContext()).SerializeToString()


def _write_data(root: str, *, n_train: int = 8, n_valid: int = 8) -> dict[str, str]:
    rng = np.random.default_rng(7)
    os.makedirs(root, exist_ok=True)

    def lists(n, reverse):
        out = []
        for _ in range(n):
            xs = np.round(rng.uniform(-1, 1, size=LIST_SIZE), 3)
            ranks = np.argsort(np.argsort(-xs if reverse else xs))  # 0 = smallest
            out.append(_elwc(xs.tolist(), ranks.tolist()))
        return out

    write_tfrecords(os.path.join(root, "train-00000.tfrecord"), lists(n_train, False))
    write_tfrecords(os.path.join(root, "valid-00000.tfrecord"), lists(n_valid, True))
    SPEC.save(os.path.join(root, "feature_spec.json"))
    return {"spec": os.path.join(root, "feature_spec.json"),
            "train": os.path.join(root, "train-*.tfrecord"),
            "valid": os.path.join(root, "valid-*.tfrecord")}


def _hparams(paths, model_dir, **training) -> RankingHparams:
    """A small config over ``_write_data``'s lists; no export unless ``export_dir`` is given
    (writing the SavedModel costs seconds a run; the export has its own tests)."""
    training = {"export_dir": None, **training}
    return RankingHparams.from_dict({
        "data": {"feature_spec": paths["spec"], "train_pattern": paths["train"],
                 "valid_pattern": paths["valid"], "list_size": LIST_SIZE,
                 "train_batch_size": 4, "shuffle_buffer": 0},
        "model": {"hidden_sizes": [4]},
        "training": {"model_dir": model_dir, "learning_rate": 0.05, "epochs": EPOCHS,
                     "steps_per_epoch": STEPS, "metrics_k": [2],
                     "early_stopping_metric": "val_ndcg_2",
                     "early_stopping_patience": PATIENCE, **training},
    })


def _numpy_ndcg(labels: np.ndarray, scores: np.ndarray, k: int) -> float:
    """Mean NDCG@k, gain 2^l - 1, padding (label < 0) removed, ties in list order."""
    vals = []
    for y, s in zip(labels, scores):
        keep = y >= 0
        y, s = y[keep], s[keep]
        gains = 2.0 ** y[np.argsort(-s, kind="stable")][:k] - 1
        ideal = np.sort(2.0 ** y - 1)[::-1][:k]
        disc = 1 / np.log2(np.arange(2, k + 2))
        idcg = float((ideal * disc[:len(ideal)]).sum())
        vals.append(0.0 if idcg == 0 else float((gains * disc[:len(gains)]).sum()) / idcg)
    return float(np.mean(vals))


def _expected_stop(values: list[float]) -> tuple[int, int]:
    """(epochs run, best epoch index) under "stop after PATIENCE non-improving epochs"."""
    best, bad = 0, 0
    for i in range(1, len(values)):
        if values[i] > values[best]:
            best, bad = i, 0
        else:
            bad += 1
            if bad >= PATIENCE:
                return i + 1, best
    return len(values), best


# custom: slow (default suite time); the custom loop's steps, history and resume are checked
# against numpy in test_loop.py, and both loops stop by the same EpochTracker
@pytest.fixture(scope="module", params=["fit", pytest.param("custom", marks=pytest.mark.slow)])
def trained(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"es_{request.param}")
    paths = _write_data(str(tmp / "data"))
    launcher = RankingLauncher(_hparams(paths, str(tmp / "model"), loop=request.param))
    result = launcher.run()
    return request.param, tmp, launcher, result


def test_early_stopping_stops_and_keeps_the_best_epoch(trained):
    loop, _, launcher, result = trained
    values = result.history["val_ndcg_2"]
    epochs_run, best = _expected_stop(values)
    # Stopped before training.epochs, exactly when patience ran out.
    assert len(values) == epochs_run < EPOCHS
    assert len(result.history["loss"]) == epochs_run
    assert result.steps == epochs_run * STEPS
    # The returned model holds the best epoch's weights: recompute its validation NDCG@2 in
    # numpy from its scores and compare with the best value of the history.
    labels, scores = [], []
    for features, y in launcher.datasets.valid_dataset():
        labels.append(y.numpy())
        scores.append(result.model(features, training=False).numpy())
    got = _numpy_ndcg(np.concatenate(labels), np.concatenate(scores), 2)
    assert got == pytest.approx(values[best], abs=1e-6)
    assert values[best] > values[-1]  # the last epoch was worse: weights were restored


def _scalars(directory: str) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for raw in tf.data.TFRecordDataset(path):
            event = event_pb2.Event.FromString(raw.numpy())
            for v in event.summary.value:
                value = (float(tf.make_ndarray(v.tensor)) if v.HasField("tensor")
                         else v.simple_value)
                out.setdefault(v.tag, []).append((event.step, value))
    return out


def test_tensorboard_event_files_hold_the_history(trained):
    loop, tmp, _, result = trained
    logs = tmp / "model" / "logs"
    if loop == "fit":
        # Keras TensorBoard: one value per epoch, train/ and validation/ sub-directories.
        train = _scalars(str(logs / "train"))
        valid = _scalars(str(logs / "validation"))
        np.testing.assert_allclose([v for _, v in train["epoch_loss"]],
                                   result.history["loss"], rtol=1e-6)
        np.testing.assert_allclose([v for _, v in valid["epoch_ndcg_2"]],
                                   result.history["val_ndcg_2"], rtol=1e-6)
    else:
        # Custom loop: the loss of every execution (one step each), val metrics per epoch.
        scalars = _scalars(str(logs))
        steps = [s for s, _ in scalars["loss"]]
        assert steps == list(range(1, result.steps + 1))
        per_epoch = np.array([v for _, v in scalars["loss"]]).reshape(-1, STEPS).mean(1)
        np.testing.assert_allclose(per_epoch, result.history["loss"], rtol=1e-6)
        assert [s for s, _ in scalars["val_ndcg_2"]] == list(
            range(STEPS, result.steps + 1, STEPS))
        np.testing.assert_allclose([v for _, v in scalars["val_ndcg_2"]],
                                   result.history["val_ndcg_2"], rtol=1e-6)


VALID_LENGTHS = [1, 2, 3, 4, 4, 3, 2, 4, 4, 1]   # 10 lists, none longer than LIST_SIZE


def _write_validation_lists(root: str) -> None:
    """Replaces the validation file with lists of several lengths, one with labels all 0."""
    rng = np.random.default_rng(11)
    lists = []
    for i, n in enumerate(VALID_LENGTHS):
        xs = np.round(rng.uniform(-1, 1, size=n), 3)
        labels = [0] * n if i == 2 else rng.integers(0, 3, size=n).tolist()
        lists.append(_elwc(xs.tolist(), labels))
    write_tfrecords(os.path.join(root, "valid-00000.tfrecord"), lists)


def _numpy_softmax_loss(labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Per-list softmax cross-entropy, targets = labels / sum (0 for a list without one)."""
    out = []
    for y, s in zip(labels, scores):
        keep = y >= 0
        y, s = y[keep].astype(np.float64), s[keep].astype(np.float64)
        log_p = s - s.max() - np.log(np.exp(s - s.max()).sum())
        out.append(0.0 if y.sum() == 0 else float(-(y / y.sum() * log_p).sum()))
    return np.array(out)


def exact_validation_case(make_launcher, root: str, *, batch: int, drop: bool, loop: str,
                          steps: int | None = None, overrides: tuple[str, ...] = (),
                          other_batchings: tuple[tuple[int, bool], ...] = ()) -> dict:
    """Trains one step with a validation set, then recomputes val_loss / val_ndcg_2 in numpy.

    The oracle scores every validation list alone (batch 1, no padding list) with the
    returned model; ``steps`` batches of ``batch`` lists are the lists validation covers.
    Returns the history's values, the oracle's, the number of lists the oracle used and,
    under ``rebatched``, the returned model's validation values with ``other_batchings``
    (``(valid_batch_size, drop_remainder)`` pairs, whole set).
    """
    paths = _write_data(os.path.join(root, "data"))
    _write_validation_lists(os.path.join(root, "data"))
    hp = _hparams(paths, os.path.join(root, f"model_{loop}_{batch}_{drop}_{steps}"), loop=loop)
    hp = RankingHparams.from_dict(hp.to_dict(), overrides=[
        f"data.valid_batch_size={batch}", f"data.drop_remainder={str(drop).lower()}",
        "training.epochs=1", "training.early_stopping_metric=null",
        f"training.validation_steps={steps if steps else 'null'}", *overrides])
    launcher = make_launcher(hp)
    result = launcher.run()
    one = RankingHparams.from_dict(hp.to_dict(), overrides=[
        "data.valid_batch_size=1", "data.drop_remainder=false"])
    oracle = type(launcher.datasets)(one.data, launcher.preprocessor)
    labels, scores = [], []
    for features, y in oracle.valid_dataset().as_numpy_iterator():
        labels.append(y)
        scores.append(np.asarray(result.model(features, training=False)))
    n = len(labels) if steps is None else min(len(labels), steps * batch)
    y, s = np.concatenate(labels)[:n], np.concatenate(scores)[:n]
    # The same model validated again with other batchings (the shared evaluator alone).
    rebatched = {}
    for b, d in other_batchings:
        other = RankingHparams.from_dict(hp.to_dict(), overrides=[
            f"data.valid_batch_size={b}", f"data.drop_remainder={str(d).lower()}"])
        rebatched[f"{b}_{d}"] = Validation(
            get_loss("softmax", reduction=None), lambda: ranking_metrics([2])).evaluate(
            model_scorer(result.model),
            type(launcher.datasets)(other.data, launcher.preprocessor).valid_dataset())
    return {"val_loss": result.history["val_loss"][-1],
            "val_ndcg_2": result.history["val_ndcg_2"][-1],
            "numpy_loss": float(_numpy_softmax_loss(y, s).mean()),
            "numpy_ndcg_2": _numpy_ndcg(y, s, 2), "lists": n, "rebatched": rebatched}


REBATCHED = ((1, True), (4, False), (6, True))


def check_exact(got: dict, lists: int = 10) -> None:
    """The history and every rebatched evaluation equal the numpy oracle (1e-5)."""
    assert got["lists"] == lists
    for values in [got, *got["rebatched"].values()]:
        assert values["val_loss"] == pytest.approx(got["numpy_loss"], abs=1e-5)
        assert values["val_ndcg_2"] == pytest.approx(got["numpy_ndcg_2"], abs=1e-5)


@pytest.mark.parametrize("loop,batch,drop,steps", [
    ("fit", 3, True, None),     # 10 lists in batches of 3: the last one padded with 2 lists
    # one batch: the old "empty extra step" halved val_loss (slow: default suite time)
    pytest.param("fit", 10, True, None, marks=pytest.mark.slow),
    # the partial batch of 2 kept as it is (slow: default suite time; the custom loop runs
    # the same Validation as fit, and the fit case rechecks it with batches (4, False))
    pytest.param("custom", 4, False, None, marks=pytest.mark.slow),
])
def test_validation_is_exact_for_every_batch_size(tmp_path, loop, batch, drop, steps):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = exact_validation_case(RankingLauncher, str(tmp_path), batch=batch, drop=drop,
                                    loop=loop, steps=steps,
                                    other_batchings=REBATCHED if batch == 3 else ())
    check_exact(got)
    assert not [w for w in caught if "ran out of data" in str(w.message)]


def test_validation_steps_cap_the_lists_exactly(tmp_path):
    got = exact_validation_case(RankingLauncher, str(tmp_path), batch=3, drop=True,
                                loop="fit", steps=2)
    check_exact(got, lists=6)   # the first 2 batches of 3


def test_validation_dataset_takes_every_list_once_with_padding_lists(tmp_path):
    paths = _write_data(str(tmp_path / "data"), n_valid=10)
    hp = RankingHparams.from_dict(_hparams(paths, str(tmp_path / "model")).to_dict(),
                                  overrides=["data.valid_batch_size=4",
                                             "data.drop_remainder=true"])
    batches = [(f, y.numpy()) for f, y in RankingLauncher(hp).datasets.valid_dataset()]
    assert [y.shape for _, y in batches] == [(4, LIST_SIZE)] * 3   # static batch size
    assert [list_weights(y).tolist() for _, y in batches] == [[1.0] * 4, [1.0] * 4,
                                                              [1.0, 1.0, 0.0, 0.0]]
    assert (batches[-1][1][2:] == -1).all()    # the 2 padding lists are all padding
