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
from beam_prep.ranking.train.launcher import RankingLauncher, ValidationRemainderWarning

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


@pytest.fixture(scope="module", params=["fit", "custom"])
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


@pytest.mark.parametrize("n_valid,batch,drop,dropped", [
    (10, 4, True, 2),     # 10 lists, batches of 4: the last 2 would be ignored
    (12, 4, True, 0),
    (10, 4, False, 0),    # partial batch kept
])
def test_drop_remainder_on_validation_warns_with_the_count(tmp_path, n_valid, batch, drop,
                                                           dropped):
    paths = _write_data(str(tmp_path / "data"), n_valid=n_valid)
    hp = _hparams(paths, str(tmp_path / "model"))
    hp = RankingHparams.from_dict(hp.to_dict(), overrides=[
        f"data.valid_batch_size={batch}", f"data.drop_remainder={str(drop).lower()}"])
    launcher = RankingLauncher(hp)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert launcher.check_validation_remainder() == dropped
    ours = [w for w in caught if issubclass(w.category, ValidationRemainderWarning)]
    if dropped:
        assert len(ours) == 1
        msg = str(ours[0].message)
        assert f"`data.drop_remainder: true` drops {dropped} of the {n_valid}" in msg
        assert "`data.valid_batch_size`" in msg and "e.g. 2" in msg
    else:
        assert not ours
    # What the validation dataset really yields agrees with the count.
    seen = sum(int(y.shape[0]) for _, y in launcher.datasets.valid_dataset())
    assert seen == n_valid - dropped
