"""The TensorFlow launcher's feed: the training set cached in host memory
(``data.device_cache``, :mod:`beam_prep.ranking.train.tf_feed`) and several train steps per
``fit`` call (``training.steps_per_execution``, :mod:`beam_prep.ranking.train.feed`).

Data: 12 lists of 4 documents, one float feature ``x``, labels the rank of ``x`` in the list;
batch 3, so an epoch (one pass) is 4 steps.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
import tensorflow as tf

from beam_prep.ranking.data.encode import DenseFloatEncoder, encode_elwc
from beam_prep.ranking.data.tfrecord import write_tfrecords
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo
from beam_prep.ranking.train import launcher as launcher_module
from beam_prep.ranking.train.feed import (
    pass_order,
    pass_orders,
    resolve_steps_per_execution,
    use_cache,
)
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.tf_feed import MemoryDataset

LISTS, LIST_SIZE, BATCH = 12, 4, 3


@pytest.mark.parametrize("setting,epoch,auto,divide,expected", [
    ("auto", 100, 32, True, 25),   # the largest divisor of the epoch up to 32
    ("auto", 7, 32, True, 7),      # a whole short epoch per call
    ("auto", 97, 32, True, 1),     # a prime epoch: one step per call
    (4, 10, 32, True, 2),          # Keras fit on TensorFlow runs whole executions
    (4, 10, 32, False, 4),         # loops that stop at the epoch end (JAX DeviceLoop)
    ("auto", 10, 1, False, 1),
    (50, 10, 1, False, 10),        # never more than an epoch
])
def test_steps_per_execution_is_bounded_by_the_epoch(setting, epoch, auto, divide, expected):
    assert resolve_steps_per_execution(setting, epoch, auto=auto, divide=divide) == expected


def test_memory_dataset_gathers_each_pass_in_its_seeded_order():
    rng = np.random.default_rng(0)
    data = ({"x": rng.normal(size=(10, 4, 1)).astype("float32"),
             "__mask__": rng.integers(0, 2, size=(10, 4)).astype("int32")},
            rng.normal(size=(10, 4)).astype("float32"))
    cache = MemoryDataset(data, batch_size=4, seed=3)
    ds = cache.dataset()
    assert cache.steps_per_pass == 2
    assert ds.element_spec[0]["x"].shape == (4, 4, 1)  # static: fit/TPU need the batch size
    rows = np.concatenate([pass_order(10, 4, 3, p) for p in range(3)])  # 2 steps per pass
    for step, (features, labels) in enumerate(ds.take(6)):
        idx = rows[step]
        np.testing.assert_array_equal(features["x"].numpy(), data[0]["x"][idx])
        np.testing.assert_array_equal(features["__mask__"].numpy(), data[0]["__mask__"][idx])
        assert features["__mask__"].dtype == tf.int32
        np.testing.assert_array_equal(labels.numpy(), data[1][idx])
    # every list at most once per pass, 2 left out of each pass (10 = 2 x 4 + 2)
    assert all(len(set(rows[2 * p:2 * p + 2].ravel())) == 8 for p in range(3))


def test_a_resumed_order_goes_on_where_the_recorded_steps_ended():
    rows = np.concatenate([pass_order(10, 4, 3, p) for p in range(4)])
    for start in (0, 1, 2, 5):
        got = list(itertools.islice(pass_orders(10, 4, 3, start=start), 3))
        np.testing.assert_array_equal(np.stack(got), rows[start:start + 3])
    first = next(iter(MemoryDataset((np.arange(10.0),), batch_size=4, seed=3,
                                    first_step=5).dataset()))
    np.testing.assert_array_equal(first[0].numpy(), rows[5])


def test_memory_dataset_refuses_fewer_lists_than_a_batch():
    with pytest.raises(ValueError, match="fewer than batch_size=8"):
        MemoryDataset((np.zeros((5, 2)),), batch_size=8)


def _write(root: str) -> dict[str, str]:
    rng = np.random.default_rng(11)
    encoder = DenseFloatEncoder(["x"], label_name="relevance", label_dtype="float")
    records = []
    for _ in range(LISTS):
        x = rng.uniform(-1, 1, size=(LIST_SIZE, 1)).astype("float32")
        labels = np.argsort(np.argsort(x[:, 0])).astype("float32")
        records.append(encode_elwc(encoder.encode(x, labels), b""))
    os.makedirs(root, exist_ok=True)
    write_tfrecords(os.path.join(root, "train-00000.tfrecord"), records)
    spec = ElwcFeatureSpec(context=(), example=(FeatureInfo("x", "float", (), 0.0),),
                           label=LabelInfo("relevance", "float", -1.0))
    spec.save(os.path.join(root, "feature_spec.json"))
    return {"spec": os.path.join(root, "feature_spec.json"),
            "train": os.path.join(root, "train-*.tfrecord")}


def _run(paths, model_dir: str, model=None, **over):  # device_cache auto: the set is cached
    hp = RankingHparams.from_dict({
        "data": {"feature_spec": paths["spec"], "train_pattern": paths["train"],
                 "list_size": LIST_SIZE, "train_batch_size": BATCH, "shuffle_buffer": 0,
                 "device_cache": "auto"},
        "model": model or {"hidden_sizes": [4], "input_transform": "none"},
        "training": {"model_dir": model_dir, "learning_rate": 0.05, "epochs": 2,
                     "metrics_k": [2], "export_dir": None, **over},
    })
    lau = RankingLauncher(hp)
    res = lau.run()
    return lau, res, [v.numpy() for v in res.model.trainable_variables]


def test_several_steps_per_fit_call_train_exactly_as_single_steps(tmp_path, monkeypatch):
    traces: list[str] = []
    compile_ranker = launcher_module.compile_ranker

    def counting(model, *args, **kwargs):  # counts the traces of the train step
        out = compile_ranker(model, *args, **kwargs)
        step = model.train_step

        def train_step(data):
            traces.append("train")
            return step(data)

        model.train_step = train_step
        return out

    monkeypatch.setattr(launcher_module, "compile_ranker", counting)
    paths = _write(str(tmp_path / "data"))
    single, single_res, single_w = _run(paths, str(tmp_path / "one"), steps_per_execution=1)
    assert traces == ["train"]  # one compile of the train step per run
    fused, fused_res, fused_w = _run(paths, str(tmp_path / "auto"))
    assert traces == ["train", "train"]
    # auto: the whole 4-step epoch in one call, on the cached set (tiny: it fits)
    assert (single.steps_per_execution_used, fused.steps_per_execution_used) == (1, 4)
    assert single.device_cache_used is fused.device_cache_used is True
    assert single_res.steps == fused_res.steps == 8
    for a, b in zip(single_w, fused_w):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused_res.history["loss"], single_res.history["loss"], rtol=1e-5)


@pytest.mark.parametrize("setting,nbytes,limit,expected", [
    (True, 10**15, 1, True), (False, 1, 10**12, False),
    ("auto", 25, 100, True), ("auto", 26, 100, False),   # at most 25% of the memory
    ("auto", 1, None, False),                            # memory unknown (JAX on CPU)
])
def test_the_cache_follows_the_setting_and_the_memory_budget(setting, nbytes, limit, expected):
    assert use_cache(setting, nbytes, limit) is expected


# default suite time; the joint embedding's scores are checked against per-feature embeddings
# here, and trained and exported with an ensemble in test_quality_scorers.py (dnn-extra0)
@pytest.mark.slow
def test_the_joint_embedding_trains_and_is_exported_with_the_model(tmp_path):
    """The piecewise-linear embedding of the list features (one JointEmbedding) and its
    feature dropout through the launcher: the SavedModel scores as the trained model."""
    paths = _write(str(tmp_path / "data"))
    export = str(tmp_path / "export")
    lau, res, _ = _run(paths, str(tmp_path / "m"), export_dir=export,
                       model={"hidden_sizes": [4], "input_transform": "piecewise_linear",
                              "piecewise_bins": 4, "feature_embedding_dim": 3,
                              "feature_dropout": 0.1})
    assert res.model.get_layer("feature_embedding").kernel.shape == (1, 4, 3)
    records = [r.numpy() for r in tf.data.TFRecordDataset(paths["train"].replace("*", "00000"))]
    served = tf.saved_model.load(export).signatures["serving_default"](
        serialized=tf.constant(records))["scores"].numpy()
    features, _ = lau.datasets.parse_fn(tf.constant(records))
    want = np.asarray(res.model(lau.preprocessor(features), training=False))
    np.testing.assert_allclose(served, want, rtol=1e-5, atol=1e-5)
