"""Fixtures for the training tests: the TF Ranking ELWC sample, its feature spec, configs.

``elwc_parse_fn`` is the ELWC reader's batch parser (``beam_prep.ranking.train.reader``).
"""

from __future__ import annotations

import os
import shutil

import tensorflow as tf
from google.protobuf import text_format
from tensorflow_serving.apis import input_pb2

from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo
from tests.sample_data import TFRANKING

SAMPLE_DIR = TFRANKING
SAMPLE = os.path.join(SAMPLE_DIR, "train_elwc.tfrecord")
VOCAB = os.path.join(SAMPLE_DIR, "vocab.txt")

SPEC = ElwcFeatureSpec(
    context=(FeatureInfo("query_tokens", "string", (None,)),),
    example=(FeatureInfo("document_tokens", "string", (None,)),),
    label=LabelInfo("relevance", "int64", -1.0),
)


def elwc_parse_fn(spec: ElwcFeatureSpec, list_size: int):
    """The launcher's default parser (the ELWC reader), for tests that pass it explicitly."""
    from beam_prep.ranking.train.launcher import default_parse_fn

    return default_parse_fn(spec, list_size)


def _dt(f):
    return {"float": tf.float32, "int64": tf.int64, "string": tf.string}[f.dtype]


def sample_layers():
    """Preprocessing layers for the sample: token lookups over vocab.txt (file -> assets)."""
    import keras
    return {
        "query_tokens": keras.layers.StringLookup(vocabulary=VOCAB, name="query_tokens_lookup"),
        "document_tokens": keras.layers.StringLookup(vocabulary=VOCAB,
                                                     name="document_tokens_lookup"),
    }


def copy_sample(tmp) -> dict[str, str]:
    """Copies the sample + vocab + feature_spec.json into ``tmp``; returns the paths."""
    tmp = str(tmp)
    data = os.path.join(tmp, "data")
    os.makedirs(data, exist_ok=True)
    shutil.copy(SAMPLE, os.path.join(data, "train-00000.tfrecord"))
    shutil.copy(VOCAB, os.path.join(data, "vocab.txt"))
    SPEC.save(os.path.join(data, "feature_spec.json"))
    return {"dir": data, "train": os.path.join(data, "train-*.tfrecord"),
            "spec": os.path.join(data, "feature_spec.json"),
            "vocab": os.path.join(data, "vocab.txt")}


def config_yaml(paths, model_dir, **over) -> str:
    """A small training config over the copied sample.

    No export unless ``export`` names its folder (``"default"``: the launcher's default,
    ``<model_dir>/export``): writing the SavedModel costs seconds a run, and most tests here
    check training.
    """
    strategy = over.pop("strategy", "default")
    export = over.pop("export", None)
    export_line = "" if export == "default" else f"\n  export_dir: {export or 'null'}"
    text = f"""
data:
  feature_spec: {paths['spec']}
  train_pattern: "{paths['train']}"
  valid_pattern: "{paths['train']}"
  list_size: 4
  train_batch_size: {over.pop('batch', 4)}
  valid_batch_size: 2        # divides the sample's 10 lists: no validation list dropped
  sequence_length: 6
  shuffle_buffer: 0
model:
  hidden_sizes: [8]
  embedding_dim: 4
training:
  model_dir: {model_dir}{export_line}
  loss: softmax
  learning_rate: 0.05
  epochs: {over.pop('epochs', 2)}
  steps_per_epoch: {over.pop('steps', 3)}
  metrics_k: [2]
  loop: {over.pop('loop', 'auto')}
distribution:
  strategy: {strategy}
"""
    assert not over, over
    return text


def sample_examples():
    """The sample's ELWC records (parsed protos)."""
    out = []
    for r in tf.data.TFRecordDataset(SAMPLE):
        e = input_pb2.ExampleListWithContext()
        e.ParseFromString(r.numpy())
        out.append(e)
    return out


def hand_elwc() -> bytes:
    """A hand-written ELWC (text proto): 3 documents, one token unknown to vocab.txt."""
    e = text_format.Parse("""
      context { features { feature { key: "query_tokens"
        value { bytes_list { value: ["relevant", "question"] } } } } }
      examples { features {
        feature { key: "document_tokens" value { bytes_list { value: ["answer"] } } }
        feature { key: "relevance" value { int64_list { value: [1] } } } } }
      examples { features {
        feature { key: "document_tokens" value { bytes_list { value: ["data", "zzz"] } } }
        feature { key: "relevance" value { int64_list { value: [0] } } } } }
      examples { features {
        feature { key: "document_tokens" value { bytes_list { value: ["irrelevant"] } } } } }
    """, input_pb2.ExampleListWithContext())
    return e.SerializeToString()


def served_like(want, mask):
    """In-process ``[B, list_size]`` scores of lists no longer than ``list_size`` as
    ``serving_default`` returns them: cut to the longest list, padding ``PADDING_SCORE``.

    Args:
        want: The model's scores of the parsed lists.
        mask: The parsed features' ``"__mask__"`` (True / 1 for real documents).
    """
    import numpy as np

    from beam_prep.ranking.train.export import PADDING_SCORE

    mask = np.asarray(mask).astype(bool)
    longest = int(mask.sum(axis=1).max())
    return np.where(mask, np.asarray(want), np.float32(PADDING_SCORE))[:, :longest]
