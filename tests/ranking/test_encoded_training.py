"""Training on ``make-elwc --artifacts`` output; the export still takes raw features.

* the launcher's model inputs from encoded ELWC equal those from raw ELWC through the real
  layers (the raw path is the oracle), embedding tables sized from the artifacts;
* the SavedModel, reloaded in a fresh process with the artifacts deleted, scores the *raw*
  ELWC exactly as the trained model scores the encoded ELWC;
* ``data.artifacts`` other than the encoding's (or none) is refused, naming the fingerprints.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from beam_prep.pipelines import make_elwc  # noqa: E402
from tensorflow_serving.apis import input_pb2  # noqa: E402

from beam_prep.errors import SpecError  # noqa: E402
from beam_prep.ranking.train.encoded_input import serving_inputs  # noqa: E402
from beam_prep.ranking.train.hparams import RankingHparams  # noqa: E402
from beam_prep.ranking.train.launcher import RankingLauncher  # noqa: E402
from tests.ranking import encoded_fixtures as fx  # noqa: E402
from tests.ranking.train_fixtures import served_like  # noqa: E402

EXAMPLE_COLUMNS = "city,store_id,price,brand,tags,other"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("enc_train")
    art = fx.artifacts(str(d / "art"))
    inp = fx.write_jsonl(str(d / "in" / "a.jsonl"), fx.rows(120))
    extra = ("--example_columns", EXAMPLE_COLUMNS)
    make_elwc.main(fx.make_elwc_args(inp, str(d / "raw"), *extra))
    make_elwc.main(fx.make_elwc_args(inp, str(d / "enc"), *extra, "--artifacts", art))
    return {"dir": d, "art": art, "raw": str(d / "raw"), "enc": str(d / "enc")}


def _config(out: str, artifacts: str | None, model_dir: str, export_dir: str = "") -> str:
    return f"""
data:
  feature_spec: {out}/feature_spec.json
  train_pattern: "{out}/train-*.tfrecord"
  valid_pattern: "{out}/validation-*.tfrecord"
  list_size: 8
  train_batch_size: 4
  valid_batch_size: 2
  sequence_length: 3
  shuffle_buffer: 0
  artifacts: {artifacts or 'null'}
model:
  hidden_sizes: [8]
  embedding_dim: 4
training:
  model_dir: {model_dir}
  export_dir: {export_dir or 'null'}
  loss: softmax
  learning_rate: 0.05
  epochs: 1
  steps_per_epoch: 4
  metrics_k: [2]
  loop: fit
distribution:
  strategy: default
"""


def _records(out: str, split: str = "validation") -> list[bytes]:
    files = sorted(tf.io.gfile.glob(os.path.join(out, f"{split}-*.tfrecord")))
    return [r.numpy() for r in tf.data.TFRecordDataset(files)]


def test_encoded_inputs_equal_raw_inputs_through_the_layers(data, tmp_path):
    enc = RankingLauncher(RankingHparams.from_yaml_text(
        _config(data["enc"], data["art"], str(tmp_path / "e"))))
    raw = RankingLauncher(RankingHparams.from_yaml_text(
        _config(data["raw"], data["art"], str(tmp_path / "r"))))
    assert enc.preprocessor.id_rows == raw.preprocessor.id_rows  # tables from the artifacts
    assert {"city", "store_id", "brand", "tags", "country", "user_id"} <= set(
        enc.preprocessor.id_rows)
    enc_features, enc_labels = enc.datasets.parse_fn(tf.constant(_records(data["enc"])))
    raw_features, raw_labels = raw.datasets.parse_fn(tf.constant(_records(data["raw"])))
    np.testing.assert_array_equal(enc_labels, raw_labels)
    got = enc.preprocessor(enc_features)
    want = raw.preprocessor(raw_features)
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)
    # The export's preprocessor is the raw one: same inputs from the raw records.
    # Serving parses the lists whole: padded to the longest list (6 documents), not to 8.
    pre, parse = serving_inputs(enc)
    served = pre.with_list_size(None)(parse(tf.constant(_records(data["raw"])))[0])
    assert served["city"].shape[1] == 6
    for k in want:
        w = np.asarray(want[k])[:, :6] if k in pre.example_names else np.asarray(want[k])
        np.testing.assert_array_equal(np.asarray(served[k]), w, err_msg=k)


_SERVE = """
import sys
sys.modules["jax"] = None  # TensorFlow only: `import jax` fails in this process
import numpy as np, tensorflow as tf
from tensorflow_serving.apis import input_pb2
export, records, out = sys.argv[1:4]
data = [r.numpy() for r in tf.data.TFRecordDataset(records)]
fns = tf.saved_model.load(export).signatures
lists = fns["serving_default"](serialized=tf.constant(data))["scores"].numpy()
elwc = input_pb2.ExampleListWithContext.FromString(data[0])
examples, singles = [], []
for ex in elwc.examples:  # the first list's documents, each a tf.Example with the context
    e = tf.train.Example()
    e.CopyFrom(ex)
    for key, value in elwc.context.features.feature.items():
        e.features.feature[key].CopyFrom(value)
    examples.append(e.SerializeToString())
    singles.append(input_pb2.ExampleListWithContext(
        context=elwc.context, examples=[ex]).SerializeToString())
per_doc = fns["score_examples"](serialized=tf.constant(examples))["scores"].numpy()
one_doc = fns["serving_default"](serialized=tf.constant(singles))["scores"].numpy()[:, 0]
np.savez(out, lists=lists, per_doc=per_doc, one_doc=one_doc)
"""


def serve_in_fresh_process(export_dir: str, records: str, tmp) -> dict:
    """Both signatures of the SavedModel, loaded in a new TensorFlow-only process.

    Returns ``lists`` (``serving_default`` on every record of ``records``) and, for the
    first list's documents, ``per_doc`` (``score_examples``) and ``one_doc``
    (``serving_default`` on one-document lists), which must agree.
    """
    out = os.path.join(str(tmp), "served.npz")
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    proc = subprocess.run([sys.executable, "-c", _SERVE, export_dir, records, out], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={**env, "CUDA_VISIBLE_DEVICES": "-1", "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    served = dict(np.load(out))
    assert np.isfinite(served["lists"]).all() and len(served["per_doc"]) >= 1
    np.testing.assert_allclose(served["per_doc"], served["one_doc"], rtol=1e-5, atol=1e-6)
    return served


def test_numeric_artifact_features_on_raw_elwc_validate_export_and_serve(data, tmp_path):
    """Raw ELWC + ``data.artifacts`` with numeric features (``price``: FillMissing then
    Normalization; bucketised): validation and the export once died on the Normalization
    state built inside the first tf.data graph (SymbolicTensor / "captures graph tensor")."""
    art = str(tmp_path / "art")
    shutil.copytree(data["art"], art)
    export_dir = str(tmp_path / "export")
    launcher = RankingLauncher(RankingHparams.from_yaml_text(
        _config(data["raw"], art, str(tmp_path / "m"), export_dir)))
    assert "price" in launcher.preprocessor.layers
    result = launcher.run()
    assert np.isfinite(result.history["val_loss"]).all()
    assert result.export_path == export_dir
    records = _records(data["raw"])
    features, _ = launcher.datasets.parse_fn(tf.constant(records))
    want = served_like(result.model(launcher.preprocessor(features), training=False).numpy(),
                       features["__mask__"])
    del result, launcher
    shutil.rmtree(art)
    # Served in this process (the artifacts are gone); a fresh TensorFlow-only process serves
    # the export of test_export_scores_raw_features_like_the_model_scores_encoded.
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    lists = serve(serialized=tf.constant(records))["scores"].numpy()
    assert np.ptp(want) > 1e-4
    np.testing.assert_allclose(lists, want, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # default suite time; covered by the TF / single-device twins
def test_ensemble_on_encoded_elwc_trains_every_member_and_serves_raw(data, tmp_path):
    """``ensemble: 2`` on ``make-elwc --artifacts`` output: member 1 once failed with
    "Layers were passed for [...]" (the members reuse the launcher's encoded inputs)."""
    art = str(tmp_path / "art")
    shutil.copytree(data["art"], art)
    export_dir = str(tmp_path / "export")
    hp = RankingHparams.from_yaml_text(
        _config(data["enc"], art, str(tmp_path / "m"), export_dir),
        overrides=["model.ensemble=2"])
    launcher = RankingLauncher(hp)
    result = launcher.run()
    assert {"member_0/val_loss", "member_1/val_loss"} <= set(result.history)
    features, _ = launcher.datasets.parse_fn(tf.constant(_records(data["enc"])))
    want = served_like(result.model(launcher.preprocessor(features), training=False).numpy(),
                       features["__mask__"])
    del result, launcher
    shutil.rmtree(art)
    raw_file = sorted(tf.io.gfile.glob(os.path.join(data["raw"], "validation-*.tfrecord")))[0]
    served = serve_in_fresh_process(export_dir, raw_file, tmp_path)
    assert np.ptp(want) > 1e-4
    np.testing.assert_allclose(served["lists"], want, rtol=1e-5, atol=1e-6)


_SCORE = """
import sys, numpy as np, tensorflow as tf
export, out, *files = sys.argv[1:]
serve = tf.saved_model.load(export).signatures["serving_default"]
scores = {}
for i, records in enumerate(files):
    data = [r.numpy() for r in tf.data.TFRecordDataset(records)]
    scores[str(i)] = serve(serialized=tf.constant(data))["scores"].numpy()
np.savez(out, **scores)
"""


def _long_list(records: list[bytes], n: int) -> bytes:
    """One ELWC: the first record's context and the documents of all records, repeated to
    ``n`` (the same documents in the same order for the raw and the encoded files)."""
    lists = [input_pb2.ExampleListWithContext.FromString(r) for r in records]
    out = input_pb2.ExampleListWithContext()
    out.context.CopyFrom(lists[0].context)
    docs = [d for e in lists for d in e.examples]
    for i in range(n):
        out.examples.add().CopyFrom(docs[i % len(docs)])
    return out.SerializeToString()


def test_export_scores_raw_features_like_the_model_scores_encoded(data, tmp_path):
    art = str(tmp_path / "art")
    shutil.copytree(data["art"], art)
    export_dir = str(tmp_path / "export")
    hp = RankingHparams.from_yaml_text(
        _config(data["enc"], art, str(tmp_path / "m"), export_dir))
    launcher = RankingLauncher(hp)
    result = launcher.run()
    assert result.export_path == export_dir
    features, _ = launcher.datasets.parse_fn(tf.constant(_records(data["enc"])))
    want = result.model(launcher.preprocessor(features), training=False).numpy()
    want = served_like(want, features["__mask__"])
    assert np.ptp(want) > 1e-4
    # A list of 200 documents (list_size 8): the in-process model on the encoded documents in
    # lists of 8 (dnn: each document scored alone) vs the export on the raw list.
    long_enc = input_pb2.ExampleListWithContext.FromString(
        _long_list(_records(data["enc"]), 200))
    parts = [input_pb2.ExampleListWithContext(
        context=long_enc.context, examples=long_enc.examples[i:i + 8]).SerializeToString()
        for i in range(0, 200, 8)]
    f, _ = launcher.datasets.parse_fn(tf.constant(parts))      # 25 lists of 8, one batch
    want_long = result.model(launcher.preprocessor(f), training=False).numpy().reshape(-1)
    del result, launcher
    shutil.rmtree(art)  # serving must not need the artifact directory
    raw_files = sorted(tf.io.gfile.glob(os.path.join(data["raw"], "validation-*.tfrecord")))
    assert len(raw_files) == 1
    long_raw = str(tmp_path / "long.tfrecord")
    with tf.io.TFRecordWriter(long_raw) as w:
        w.write(_long_list(_records(data["raw"]), 200))
    out = str(tmp_path / "scores.npz")
    subprocess.run([sys.executable, "-c", _SCORE, export_dir, out, raw_files[0], long_raw],
                   check=True, cwd=ROOT, env={**os.environ, "CUDA_VISIBLE_DEVICES": "-1"})
    scores = np.load(out)
    got, got_long = scores["0"], scores["1"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got_long.shape == (1, 200)
    np.testing.assert_allclose(got_long[0], want_long, rtol=1e-5, atol=1e-6)


def test_other_artifacts_are_refused_naming_both_fingerprints(data, tmp_path):
    from beam_prep.io.contract.artifacts import Artifacts
    from tests.codegen.artifact_fixtures import write_artifacts

    changed = dict(fx.DATA, city=["Paris"] * 8)

    other = write_artifacts(str(tmp_path / "other"), fx.SPEC, changed,
                            boundaries=fx.BOUNDARIES)
    got, want = Artifacts(other).fingerprint, Artifacts(data["art"]).fingerprint
    assert got != want
    with pytest.raises(SpecError, match=f"fingerprint {got[:12]}.*fingerprint {want[:12]}"):
        RankingLauncher(RankingHparams.from_yaml_text(
            _config(data["enc"], other, str(tmp_path / "m"))))
    with pytest.raises(SpecError, match="`data.artifacts` is not set"):
        RankingLauncher(RankingHparams.from_yaml_text(
            _config(data["enc"], None, str(tmp_path / "m"))))


_JAX_TRAIN = """
import os, sys, numpy as np, tensorflow as tf
from beam_prep.ranking.train.backend import make_launcher
from beam_prep.ranking.train.hparams import RankingHparams
from tests.ranking.train_fixtures import served_like
config, enc_records, out = sys.argv[1:4]
hp = RankingHparams.from_yaml_text(open(config).read(),
                                   overrides=["distribution.backend=jax", *sys.argv[4:]])
launcher = make_launcher(hp)
assert type(launcher).__name__ == "JaxRankingLauncher", type(launcher)
result = launcher.run()
data = [r.numpy() for r in tf.data.TFRecordDataset(enc_records)]
features, _ = launcher.datasets.parse_fn(tf.constant(data))
inputs = {k: np.asarray(v) for k, v in launcher.preprocessor(features).items()}
np.save(out, served_like(result.model(inputs, training=False), features["__mask__"]))
print("EXPORTED", result.export_path)
"""


@pytest.mark.slow  # default suite time; covered by the TF / single-device twins
def test_jax_backend_export_takes_raw_features(data, tmp_path):
    """JAX: no ``default_value`` or list feature (FillMissing / ListEncoding are plain Keras
    layers, which fail in a TF graph under JAX, in tf.data as in the export). The scorer is
    ``dasalc`` (its list mask once broke the export's ``score_examples``: KeyError
    '__mask__'); serving runs in a fresh process where jax cannot be imported."""
    import importlib.util

    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed (pip install beam-prep[jax])")
    art = str(tmp_path / "art")
    shutil.copytree(data["art"], art)
    inp = fx.write_jsonl(str(tmp_path / "in" / "a.jsonl"), fx.rows(120))
    extra = ("--example_columns", "city,brand,other")
    data = {"raw": str(tmp_path / "raw"), "enc": str(tmp_path / "enc")}
    make_elwc.main(fx.make_elwc_args(inp, data["raw"], *extra))
    make_elwc.main(fx.make_elwc_args(inp, data["enc"], *extra, "--artifacts", art))
    export_dir = str(tmp_path / "export")
    config = tmp_path / "train.yaml"
    config.write_text(_config(data["enc"], art, str(tmp_path / "m"), export_dir))
    files = {s: sorted(tf.io.gfile.glob(os.path.join(data[s], "validation-*.tfrecord")))[0]
             for s in ("enc", "raw")}
    want_path = str(tmp_path / "jax_scores.npy")
    proc = subprocess.run(
        [sys.executable, "-c", _JAX_TRAIN, str(config), files["enc"], want_path,
         "model.scorer=dasalc"], cwd=ROOT,
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": ROOT,
             "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0 and "EXPORTED" in proc.stdout, proc.stderr[-3000:]
    shutil.rmtree(art)
    served = serve_in_fresh_process(export_dir, files["raw"], tmp_path)
    want = np.load(want_path)
    assert served["lists"].shape == want.shape and np.ptp(want) > 1e-4
    np.testing.assert_allclose(served["lists"], want, rtol=1e-5, atol=1e-5)


_JAX_REFUSE = """
import sys
from beam_prep.errors import SpecError
from beam_prep.ranking.train.backend import make_launcher
from beam_prep.ranking.train.hparams import RankingHparams
hp = RankingHparams.from_yaml_text(open(sys.argv[1]).read(),
                                   overrides=["distribution.backend=jax"])
try:
    make_launcher(hp)
except SpecError as e:
    print("REFUSED", e)
"""


def test_jax_backend_refuses_layers_its_export_cannot_run_before_training(data, tmp_path):
    import importlib.util

    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed (pip install beam-prep[jax])")
    config = tmp_path / "train.yaml"
    config.write_text(_config(data["enc"], data["art"], str(tmp_path / "m"),
                              str(tmp_path / "export")))
    proc = subprocess.run(
        [sys.executable, "-c", _JAX_REFUSE, str(config)], cwd=ROOT, capture_output=True,
        text=True, timeout=600, env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": ROOT,
                                     "TF_CPP_MIN_LOG_LEVEL": "2"})
    line = [x for x in proc.stdout.splitlines() if x.startswith("REFUSED")]
    assert line, proc.stderr[-3000:]
    assert "['store_id', 'price', 'tags']" in line[0], line[0]
    assert "distribution.backend: tensorflow" in line[0]
    assert not os.path.exists(tmp_path / "m")  # nothing trained
