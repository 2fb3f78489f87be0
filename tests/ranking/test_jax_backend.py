"""The ranking launcher on the JAX backend, on CPU with 2 virtual devices.

Every JAX run is a subprocess (``tests/ranking/jax_worker.py``) with ``KERAS_BACKEND=jax`` and
``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (Keras fixes its backend at import, and
this pytest process runs on TensorFlow). Oracles: the single-device run (DataParallel and
ModelParallel steps), test_launcher's numpy NDCG and stopping rule (early stopping), the JAX
model's own scores (export, compared in a process where ``import jax`` fails).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml
from tensorflow_serving.apis import input_pb2

if importlib.util.find_spec("jax") is None:
    pytest.skip("jax is not installed (pip install beam-prep[jax])", allow_module_level=True)

from tests.ranking import test_launcher as tl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JAX_ENV = {"KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"}


def _run(args: list[str], env: dict | None = None, timeout: int = 600) -> dict:
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **JAX_ENV, **(env or {})}, timeout=timeout)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT "):])


def _worker(mode: str, tmp, env: dict | None = None) -> dict:
    return _run(["-m", "tests.ranking.jax_worker", mode, str(tmp)], env)


# The JAX checks of this module that need no launcher run: one subprocess (one JAX start-up).
SHARED = ("step", "device_feed", "device_loop", "stream_loop")


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return _worker(",".join(SHARED), tmp_path_factory.mktemp("jax_shared"))


@pytest.fixture(scope="module")
def step(shared):
    return shared["step"]


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("jax_launcher")
    return tmp, _worker("launcher", tmp)


def _max_diff(a: list, b: list) -> float:
    return max(float(np.abs(np.asarray(x) - np.asarray(y)).max()) for x, y in zip(a, b))


def test_data_parallel_step_equals_the_single_device_step(step):
    single, dp = step["default"], step["data_parallel"]
    assert single["mesh"] is None and dp["mesh"] == [2]   # the batch is split over 2 devices
    assert dp["loss"] == pytest.approx(single["loss"], abs=1e-6)
    assert _max_diff(dp["weights"], single["weights"]) < 1e-6


def test_model_parallel_shards_tables_by_rows_with_the_same_loss(step):
    single, mp = step["default"], step["model_parallel"]
    assert mp["mesh"] == [1, 2]
    tables = {k: v for k, v in mp["specs"].items() if k.endswith("_table/embeddings")}
    assert sorted(tables) == sorted(
        f"scorer/scorer_embeddings/distributed_embedding/{n}_table/embeddings"
        for n in single["rows"])
    assert set(tables.values()) == {"PartitionSpec('model', None)"} or set(
        tables.values()) == {"P('model', None)"}
    dense = [v for k, v in mp["specs"].items() if "dense" in k or "logit" in k]
    assert all("model" not in v for v in dense)            # everything else replicated
    # Rows padded to a multiple of the 2 shards; the extra rows are never looked up.
    assert mp["rows"] == {k: 2 * math.ceil(r / 2) for k, r in single["rows"].items()}
    assert mp["loss"] == pytest.approx(single["loss"], abs=1e-6)
    assert _max_diff(mp["weights"], single["weights"]) < 1e-6


def test_jax_only_settings_fail_with_the_field_and_the_fix(step):
    errors = step["errors"]
    assert "`data.train_batch_size` must be divisible by the 2 data" in errors["odd_batch"]
    assert "use a multiple of 2" in errors["odd_batch"]
    assert "`distribution.model_parallel_size` must divide the 2 devices" in errors["mesh"]
    assert "`training.loop: custom` is the TensorFlow loop" in errors["custom_loop"]
    # model_parallel with nothing to shard: one notice naming the strategy that helps.
    assert errors["notices"]["tables"] == []
    assert errors["notices"]["again"] == []          # once per process (ensemble members)
    [(kind, text)] = errors["notices"]["no_tables"]
    assert kind == "NoticeWarning"
    assert text.startswith("distribution.strategy: model_parallel shards the embedding tables")
    assert "Use distribution.strategy: data_parallel to split the batch over all 2 devices" \
        in text


def test_losses_and_metrics_on_jax_equal_the_tensorflow_values(step):
    """The TF values are the oracle (tests/ranking/test_losses.py checks them against numpy)."""
    from tests.ranking.jax_worker import losses_and_metrics

    expected = losses_and_metrics()
    got = step["losses"]
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.slow  # the launcher run on JAX; its TF twins stay (default suite time)
def test_validation_on_jax_is_exact_for_every_batch_size(launched):
    # data_parallel over 2 devices: 10 lists in batches of 4 (the last padded with 2 empty
    # lists), then the same model over batches of 10, 6 without drop_remainder (a partial
    # batch of 4) and 2: val_loss and NDCG equal the numpy oracle every time.
    got = launched[1]["validation"]
    assert set(got["rebatched"]) == {"10_True", "6_False", "2_True"}
    tl.check_exact(got)


@pytest.mark.slow  # the launcher run on JAX; its TF twins stay (default suite time)
def test_an_ensemble_trains_on_jax_and_its_export_serves_the_members_mean(launched):
    """The shipped configs average 3 members; on JAX each member trains with the JAX
    launcher, and the jax2tf export scores the validation lists as the run record says."""
    import tensorflow as tf

    got = launched[1]["ensemble"]
    assert (got["type"], got["members"]) == ("JaxRankingLauncher", 2)
    assert {"member_0", "member_1"} <= set(got["member_dirs"])
    assert got["members_differ"] > 1e-3          # two seeds, two models
    assert got["mean_vs_served"] < 1e-5          # the model is their mean
    records = [r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(got["valid"]))]
    labels = np.array([[ex.features.feature["relevance"].int64_list.value[0]
                        for ex in input_pb2.ExampleListWithContext.FromString(r).examples]
                       for r in records], dtype=np.float64)
    served = tf.saved_model.load(got["export"]).signatures["serving_default"](
        serialized=tf.constant(records))["scores"].numpy()
    assert tl._numpy_ndcg(labels, served, 2) == pytest.approx(
        got["export_metrics"]["val_ndcg_2"], abs=1e-5)


@pytest.mark.slow  # the launcher run on JAX; its TF twins stay (default suite time)
def test_checkpoints_are_written_and_a_run_resumes(launched):
    _, out = launched
    assert out["sample"]["ckpts"] == ["ckpt-0001.weights.h5", "ckpt-0002.weights.h5"]
    assert out["sample"]["steps"] == 6
    # epochs=4 over the same model_dir: BackupAndRestore resumes after epoch 2 (step 6).
    assert len(out["resumed"]["history"]["loss"]) == 2
    assert out["resumed"]["steps"] == 12


@pytest.mark.slow  # the launcher run on JAX; its TF twins stay (default suite time)
def test_early_stopping_keeps_the_best_epoch(launched):
    _, out = launched
    es = out["es"]
    assert es["type"] == "JaxRankingLauncher"
    values = es["history"]["val_ndcg_2"]
    epochs_run, best = tl._expected_stop(values)
    assert len(values) == epochs_run < tl.EPOCHS
    assert es["steps"] == epochs_run * tl.STEPS
    assert es["ndcg_of_returned_model"] == pytest.approx(values[best], abs=1e-6)
    assert values[best] > values[-1]


@pytest.mark.slow  # the launcher run on JAX; its TF twins stay (default suite time)
def test_tensorboard_logs_hold_the_history(launched):
    _, out = launched
    es = out["es"]
    np.testing.assert_allclose([v for _, v in es["train_scalars"]["epoch_loss"]],
                               es["history"]["loss"], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in es["valid_scalars"]["epoch_ndcg_2"]],
                               es["history"]["val_ndcg_2"], rtol=1e-6)


NO_JAX_LOAD = """
import sys
sys.modules["jax"] = None      # any `import jax` now fails
sys.modules["jaxlib"] = None
import json, os
import numpy as np
import tensorflow as tf
tmp = sys.argv[1]
model = tf.saved_model.load(os.path.join(tmp, "export"))
files = sorted(tf.io.gfile.glob(os.path.join(tmp, "records", "train-*.tfrecord")))
records = tf.constant([r.numpy() for r in tf.data.TFRecordDataset(files)])
elwc = model.signatures["serving_default"](serialized=records)["scores"].numpy()
from tensorflow.core.example import example_pb2
from tensorflow_serving.apis import input_pb2
elwc_proto = input_pb2.ExampleListWithContext.FromString(records.numpy()[0])
examples = []
for doc in elwc_proto.examples:            # each document + the context, as one tf.Example
    ex = example_pb2.Example()
    ex.CopyFrom(doc)
    for k, v in elwc_proto.context.features.feature.items():
        ex.features.feature[k].CopyFrom(v)
    examples.append(ex.SerializeToString())
first = min(len(examples), elwc.shape[1])
examples = examples[:first]
one = model.signatures["score_examples"](serialized=tf.constant(examples))["scores"].numpy()
print("RESULT " + json.dumps({
    "signatures": sorted(model.signatures), "elwc": elwc.tolist(), "one": one.tolist(),
    "first": first, "assets": sorted(os.listdir(os.path.join(tmp, "export", "assets"))),
    "jax_imported": [m for m in sys.modules if m.startswith("jax") and sys.modules[m]]}))
"""


@pytest.mark.slow  # the launcher run on JAX; its TF twins stay (default suite time)
def test_export_serves_the_jax_scores_without_jax(launched):
    tmp, out = launched
    sample = tmp / "sample"
    assert out["sample"]["export"] == str(sample / "export")
    assert not (sample / "data" / "data").exists()   # the vocabulary the layers read is gone
    got = _run(["-c", NO_JAX_LOAD, str(sample)], env={"KERAS_BACKEND": "tensorflow"})
    assert got["jax_imported"] == []
    assert got["signatures"] == ["score_examples", "serving_default"]
    assert got["assets"] == ["vocab.txt"]
    jax_scores = np.load(sample / "jax_scores.npy")
    np.testing.assert_allclose(got["elwc"], jax_scores, atol=1e-5)
    # Each document alone (tf.Example with its context) scores as inside its list.
    np.testing.assert_allclose(got["one"], jax_scores[0][:got["first"]], atol=1e-5)


@pytest.mark.slow  # the launcher run on JAX; its TF twins stay (default suite time)
def test_a_sharded_ensemble_trains_and_serves_the_members_mean_without_jax(launched):
    """``model_parallel`` + ``ensemble: 2``: every member's id tables are sharded by rows
    over the 2 devices, and the export (loaded where ``import jax`` fails) serves the
    members' mean."""
    tmp, out = launched
    got = out["sharded_ensemble"]
    assert (got["type"], got["members"]) == ("JaxRankingLauncher", 2)
    assert got["tables"] >= 2 and got["tables"] % 2 == 0     # each member has its tables
    assert got["table_specs"] in (["PartitionSpec('model', None)"], ["P('model', None)"])
    assert got["members_differ"] > 1e-3
    assert got["mean_vs_served"] < 1e-5
    sharded = tmp / "sharded_ensemble"
    assert got["export"] == str(sharded / "export")
    served = _run(["-c", NO_JAX_LOAD, str(sharded)], env={"KERAS_BACKEND": "tensorflow"})
    assert served["jax_imported"] == []
    np.testing.assert_allclose(served["elwc"], np.load(sharded / "jax_scores.npy"), atol=1e-5)


@pytest.mark.slow  # default suite time; covered by the TF / single-device twins
def test_cli_trains_on_jax_from_the_config(tmp_path):
    """`beam-prep train` with `distribution.backend: jax` and no KERAS_BACKEND in the env."""
    paths = tl._write_data(str(tmp_path / "data"))
    hp = tl._hparams(paths, str(tmp_path / "model"), epochs=2, early_stopping_metric=None)
    cfg = tmp_path / "train.yaml"
    cfg.write_text(yaml.safe_dump({**hp.to_dict(), "distribution": {
        "backend": "jax", "strategy": "data_parallel"}}))
    env = {k: v for k, v in {**os.environ, **JAX_ENV}.items() if k != "KERAS_BACKEND"}
    proc = subprocess.run([sys.executable, "-m", "beam_prep.pipelines.train", "--config",
                           str(cfg), "--quiet", "--summary_json", str(tmp_path / "s.json")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["counts"]["steps"] == 2 * tl.STEPS
    assert os.path.isdir(tmp_path / "model" / "logs")


def test_a_tensorflow_strategy_on_jax_is_refused():
    from beam_prep.errors import SpecError
    from beam_prep.ranking.train.backend import resolve_backend, use_backend
    from beam_prep.ranking.train.hparams import RankingHparams

    base = {"data": {"feature_spec": "f", "train_pattern": "t", "list_size": 2,
                     "train_batch_size": 2}, "training": {"model_dir": "m"}}
    with pytest.raises(SpecError, match="strategy.*'data_parallel'.*on the jax backend"):
        RankingHparams.from_dict({**base, "distribution": {"backend": "jax",
                                                           "strategy": "mirrored"}})
    with pytest.raises(SpecError, match="on the tensorflow backend"):
        RankingHparams.from_dict({**base, "distribution": {"backend": "tensorflow",
                                                           "strategy": "model_parallel"}})
    assert resolve_backend("auto", env={"KERAS_BACKEND": "jax"}) == "jax"
    with pytest.raises(SpecError, match="KERAS_BACKEND='torch'"):
        resolve_backend("auto", env={"KERAS_BACKEND": "torch"})
    # This pytest process runs Keras on TensorFlow: asking for JAX now is an error, not a
    # silent TensorFlow run.
    hp = RankingHparams.from_dict({**base, "distribution": {"backend": "jax"}})
    with pytest.raises(SpecError, match="already imported with the 'tensorflow' backend"):
        use_backend(hp)


@pytest.mark.slow
def test_two_processes_train_together_over_jax_cpu_collectives(tmp_path):
    """Two processes on 127.0.0.1 (1 CPU device each, gloo collectives) = one process with 2."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=1",
           "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
           "KERAS_DISTRIBUTION_JOB_ADDRESSES": f"127.0.0.1:{port}",
           "KERAS_DISTRIBUTION_NUM_PROCESSES": "2"}
    procs = [subprocess.Popen(
        [sys.executable, "-m", "tests.ranking.jax_worker", "multi", str(tmp_path)], cwd=ROOT,
        env={**os.environ, **JAX_ENV, **env, "KERAS_DISTRIBUTION_PROCESS_ID": str(i)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        lines = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
        assert p.returncode == 0 and lines, stderr[-4000:]
        outs.append(json.loads(lines[-1][len("RESULT "):]))
    assert [o["process_index"] for o in outs] == [0, 1]
    assert all(o["process_count"] == 2 and o["devices"] == 2 for o in outs)
    assert [o["chief"] for o in outs] == [True, False]
    # Process 0 alone exports (replicated weights are readable on every process).
    assert [o["export"] for o in outs] == [str(tmp_path / "export"), None]
    assert (tmp_path / "export" / "saved_model.pb").is_file()
    assert outs[0]["history"] == outs[1]["history"]
    assert outs[0]["weights_sum"] == outs[1]["weights_sum"]
    # The same run in one process over 2 virtual devices.
    single = _worker("multi", tmp_path / "single", env={"KERAS_DISTRIBUTION_PROCESS_ID": "0"})
    np.testing.assert_allclose(single["history"]["loss"], outs[0]["history"]["loss"],
                               rtol=1e-5)


def test_device_dataset_sees_every_list_once_per_pass_in_a_seeded_order(shared):
    out = shared["device_feed"]
    steps = out["steps_per_pass"]
    assert steps == 23 // 4
    passes = [sum(out["seen"][p * steps:(p + 1) * steps], []) for p in range(3)]
    for rows in passes:  # 20 distinct lists of 23 per pass (3 left out, as drop_remainder)
        assert len(rows) == len(set(rows)) == 20 and set(rows) <= set(range(23))
    assert passes[0] != passes[1] != passes[2]  # a new order each pass
    assert out["same_seed_first"] == out["seen"][0]  # seeded: the same run, the same order
    assert out["other_seed_first"] != out["seen"][0]
    assert out["batch_devices"] == 2  # gathered straight into the data-parallel sharding
    assert (out["auto_on_cpu"], out["true"], out["false"]) == (False, True, False)


@pytest.mark.slow  # default suite time; covered by the TF / single-device twins
def test_device_cache_is_used_per_the_setting_and_trains_like_the_stream(tmp_path):
    out = _worker("device_cache", tmp_path)
    cached, streamed = out["true"], out["false"]
    assert cached["used"] is True and streamed["used"] is False
    assert cached["steps"] == streamed["steps"] == 24
    # Same lists, another order: every epoch's loss and the final metric within the spread
    # of an order change; and it learns.
    assert _max_diff([cached["history"]["loss"]], [streamed["history"]["loss"]]) < 0.02
    assert abs(cached["history"]["ndcg_2"][-1] - streamed["history"]["ndcg_2"][-1]) < 0.1
    assert cached["history"]["loss"][-1] < cached["history"]["loss"][0] - 0.1
    # 3 steps per jitted program (4-step epochs: 3 + 1): the same run, validation included.
    fused = out["true_x3"]
    assert (fused["per_call"], cached["per_call"], fused["steps"]) == (3, 1, 24)
    assert set(fused["history"]) == set(cached["history"])
    for name, values in cached["history"].items():
        np.testing.assert_allclose(fused["history"][name], values, rtol=1e-4, atol=1e-6)
    # The same over the stream (superbatches of 3 steps): the streamed run, per call.
    stacked = out["false_x3"]
    assert (stacked["used"], stacked["per_call"], stacked["steps"]) == (False, 3, 24)
    assert (stacked["loop"], fused["loop"], streamed["loop"]) == ("StreamLoop", "DeviceLoop",
                                                                  "NoneType")
    for name, values in streamed["history"].items():
        np.testing.assert_allclose(stacked["history"][name], values, rtol=1e-4, atol=1e-6)


@pytest.fixture(scope="module")
def device_loop(shared):
    return shared["device_loop"]


FEEDS = ["device_loop", "stream_loop"]  # the cached set / superbatches of the stream


@pytest.mark.parametrize("feed", FEEDS)
@pytest.mark.parametrize("strategy", ["default", "data_parallel"])
def test_several_steps_per_program_train_exactly_as_single_steps(request, feed, strategy):
    out = request.getfixturevalue(feed)[strategy]
    single, fused = out["1"], out["3"]
    # 3 epochs of 5 steps, 3 steps per execution: 2 executions per epoch (3 + 2 steps; the
    # streamed 2-step execution runs a padded stack).
    assert fused["executions"] == 6
    assert single["iterations"] == fused["iterations"] == 15
    for name in ("loss", "mae"):
        np.testing.assert_allclose(fused["history"][name], single["history"][name], rtol=1e-5)
    assert _max_diff(fused["weights"], single["weights"]) < 1e-5


@pytest.mark.parametrize("feed", FEEDS)
@pytest.mark.parametrize("strategy", ["default", "data_parallel"])
def test_the_train_step_compiles_once_per_run(request, feed, strategy):
    # Device-resident batches with the launcher's ConsistentShardings: the initial state,
    # the step's outputs and each epoch's reset metrics share one compiled step.
    out = request.getfixturevalue(feed)[strategy]
    assert out["1"]["train_compiles"] == 1
    assert out["3"]["train_compiles"] == 1  # partial (streamed: padded) executions included


@pytest.mark.parametrize("feed", FEEDS)
def test_the_guard_names_the_first_non_finite_step_inside_an_execution(request, feed):
    nan = request.getfixturevalue(feed)["nan"]
    want = {"name": "loss", "step": nan["first_step"], "epoch": 0}
    if feed == "device_loop":  # one step per call: the finite guard's own case, feed-blind
        assert nan["1"]["diverged"] == want
    assert nan["3"]["diverged"] == want
    # Stopped after the execution that held it (steps 1-3, then 4-5).
    assert nan["3"]["iterations"] == (3 if nan["first_step"] <= 3 else 5)


@pytest.fixture(scope="module")
def stream_loop(shared):
    return shared["stream_loop"]


def test_the_streamed_order_is_the_cached_order(stream_loop, device_loop):
    # The worker streams the cache's pass orders: one step per call, the same training.
    cached, streamed = device_loop["default"]["1"], stream_loop["default"]["1"]
    assert _max_diff(cached["weights"], streamed["weights"]) < 1e-5


def test_superbatches_hold_each_execution_in_the_stream_order(stream_loop):
    stream, stacks = stream_loop["stream"], stream_loop["stacks"]
    # 4 steps per execution over 5-step epochs: executions of 4, 1, 4, 1, 4, 1 steps.
    counts, at, seen = [4, 1] * 3, 0, []
    for stack, count in zip(stacks, counts):
        labels = np.asarray(stack["labels"])
        assert labels.shape == (4, 4)
        for i in range(count):
            np.testing.assert_array_equal(labels[i], stream[at + i])
            np.testing.assert_array_equal(np.asarray(stack["x"])[i][:, 0], stream[at + i])
        assert not labels[count:].any()  # padding, never run
        seen += labels[:count].astype(int).tolist()
        at += count
        # One transfer per stack, each batch split over the 2 data replicas, not the steps.
        assert stack["devices"] == 2 and stack["step_axis_split"] is False
    assert at == 15
    for p in range(3):  # every list once per pass (20 of 23, as drop_remainder)
        rows = sum(seen[p * 5:(p + 1) * 5], [])
        assert len(rows) == len(set(rows)) == 20
