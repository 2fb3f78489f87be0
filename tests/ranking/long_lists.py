"""Fixtures for lists of any length: ELWC built from Python values, a training set whose lists
are longer than ``list_size``, its config, and a TF-only serving client.

The feature spec has every kind of input the scorers flatten: a ragged context token list
(embedded, pooled), a float context feature (broadcast to the entries), a ragged document token
list and a fixed-length float document feature.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf
from tensorflow.core.example import feature_pb2
from tensorflow_serving.apis import input_pb2

from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo
from tests.ranking.train_fixtures import VOCAB

SPEC = ElwcFeatureSpec(
    context=(FeatureInfo("query_tokens", "string", (None,)), FeatureInfo("q", "float", ())),
    example=(FeatureInfo("document_tokens", "string", (None,)),
             FeatureInfo("f", "float", (2,), 0.0)),
    label=LabelInfo("relevance", "int64", -1.0),
)
LIST_SIZE = 32
LENGTHS = (1, 31, 32, 33, 200, 1000)  # served list lengths (list_size 32 at training)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

with open(VOCAB) as _f:
    TOKENS = [t.strip() for t in _f if t.strip()]


def _feature(values) -> feature_pb2.Feature:
    f = feature_pb2.Feature()
    if isinstance(values[0], str):
        f.bytes_list.value.extend(v.encode() for v in values)
    elif isinstance(values[0], int):
        f.int64_list.value.extend(values)
    else:
        f.float_list.value.extend(values)
    return f


def elwc(context: dict, docs: list[dict]) -> bytes:
    """Serialized ELWC: ``context`` and each doc map a feature name to a list of values (an
    empty list: the feature is absent)."""
    e = input_pb2.ExampleListWithContext()
    for k, v in context.items():
        if v:
            e.context.features.feature[k].CopyFrom(_feature(v))
    for doc in docs:
        ex = e.examples.add()
        for k, v in doc.items():
            if v:
                ex.features.feature[k].CopyFrom(_feature(v))
    return e.SerializeToString()


def context(rng: np.random.Generator) -> dict:
    """A random query: 1-3 tokens and a float."""
    return {"query_tokens": [str(t) for t in rng.choice(TOKENS, rng.integers(1, 4))],
            "q": [float(rng.normal())]}


def docs(rng: np.random.Generator, n: int) -> list[dict]:
    """``n`` random documents (tokens, two floats; the label follows the first float)."""
    out = []
    for _ in range(n):
        f = rng.normal(size=2)
        out.append({"document_tokens": [str(t) for t in rng.choice(TOKENS, rng.integers(0, 4))],
                    "f": [float(x) for x in f], "relevance": [int(f[0] > 0.5) + int(f[0] > 1.2)]})
    return out


def write_training_set(folder: str, *, lists: int = 24, seed: int = 0) -> dict[str, str]:
    """Training lists of 5-80 documents (many longer than :data:`LIST_SIZE`) + spec + vocab."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "train-00000.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for _ in range(lists):
            w.write(elwc(context(rng), docs(rng, int(rng.integers(5, 81)))))
    SPEC.save(os.path.join(folder, "feature_spec.json"))
    return {"train": os.path.join(folder, "train-*.tfrecord"),
            "spec": os.path.join(folder, "feature_spec.json")}


def config_yaml(paths: dict[str, str], model_dir: str, export_dir: str, *,
                scorer: str = "dnn", ensemble: int = 1, backend: str = "tensorflow") -> str:
    """A small training config (list_size 32, 2 steps) that exports to ``export_dir``."""
    return f"""
data:
  feature_spec: {paths['spec']}
  train_pattern: "{paths['train']}"
  valid_pattern: "{paths['train']}"
  list_size: {LIST_SIZE}
  train_batch_size: 4
  valid_batch_size: 8
  sequence_length: 3
  shuffle_buffer: 0
model:
  scorer: {scorer}
  hidden_sizes: [8]
  embedding_dim: 4
  attention_dim: 8
  attention_layers: 1
  batch_norm: true
  ensemble: {ensemble}
training:
  model_dir: {model_dir}
  export_dir: {export_dir}
  loss: softmax
  learning_rate: 0.05
  epochs: 1
  steps_per_epoch: 2
  metrics_k: [2]
  loop: fit
distribution:
  backend: {backend}
  strategy: default
"""


def layers() -> dict:
    """Token lookups over the sample vocabulary (one per token feature)."""
    import keras

    return {n: keras.layers.StringLookup(vocabulary=VOCAB, name=f"{n}_lookup")
            for n in ("query_tokens", "document_tokens")}


SERVE_SCRIPT = """
import pickle, sys
for name in ("keras", "jax", "jaxlib", "tf_keras", "beam_prep"):
    sys.modules[name] = None  # any import of them now fails: serving needs TensorFlow only
import numpy as np
import tensorflow as tf
export, requests, out = sys.argv[1:4]
serve = tf.saved_model.load(export).signatures["serving_default"]
results = []
for batch in pickle.load(open(requests, "rb")):
    got = serve(serialized=tf.constant(batch))
    results.append((got["scores"].numpy(), got["num_documents"].numpy()))
pickle.dump(results, open(out, "wb"))
"""


def serve(export_dir: str, batches: list[list[bytes]], tmp: str
          ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(scores, num_documents)`` per request batch, from a fresh TensorFlow-only process."""
    import pickle

    requests, out = os.path.join(tmp, "requests.pkl"), os.path.join(tmp, "served.pkl")
    with open(requests, "wb") as f:
        pickle.dump(batches, f)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "-1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("KERAS_BACKEND", None)
    proc = subprocess.run([sys.executable, "-c", SERVE_SCRIPT, export_dir, requests, out],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out, "rb") as f:
        return pickle.load(f)
