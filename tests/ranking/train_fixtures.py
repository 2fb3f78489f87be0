"""Fixtures for the training tests: the TF Ranking ELWC sample, its feature spec, configs.

``elwc_parse_fn`` is a *test-only stand-in* for the ELWC reader's batch parser
(``beam_prep.ranking.reader``) so these tests do not wait for it; the launcher uses the reader.
"""

from __future__ import annotations

import os
import shutil

import tensorflow as tf
from google.protobuf import text_format
from tensorflow_serving.apis import input_pb2

from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo

SAMPLE_DIR = "/work/shared/data/elwc/tfranking"
SAMPLE = os.path.join(SAMPLE_DIR, "train_elwc.tfrecord")
VOCAB = os.path.join(SAMPLE_DIR, "vocab.txt")

SPEC = ElwcFeatureSpec(
    context=(FeatureInfo("query_tokens", "string", (None,)),),
    example=(FeatureInfo("document_tokens", "string", (None,)),),
    label=LabelInfo("relevance", "int64", -1.0),
)


def _descriptor_source() -> str:
    from google.protobuf import descriptor_pb2

    fds = descriptor_pb2.FileDescriptorSet()
    seen = set()

    def add(fd):
        if fd.name in seen:
            return
        seen.add(fd.name)
        for dep in fd.dependencies:
            add(dep)
        fd.CopyToProto(fds.file.add())

    add(input_pb2.DESCRIPTOR)
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".desc")
    with os.fdopen(fd, "wb") as f:
        f.write(fds.SerializeToString())
    return path


def elwc_parse_fn(spec: ElwcFeatureSpec, list_size: int):
    """serialized ELWC [B] -> (features, labels [B, list_size]); test-only stand-in."""
    def parse(serialized):
        _, (examples, context) = tf.io.decode_proto(
            serialized, "tensorflow.serving.ExampleListWithContext",
            ["examples", "context"], [tf.string, tf.string],
            descriptor_source=_DESC)
        b = tf.shape(serialized)[0]
        ctx = tf.io.parse_example(tf.reshape(context, [-1]), {
            f.name: tf.io.RaggedFeature(tf.string) if f.is_var_len else
            tf.io.FixedLenFeature(f.shape, _dt(f), f.default) for f in spec.context})
        ex_spec = {f.name: tf.io.RaggedFeature(_dt(f)) if f.is_var_len else
                   tf.io.FixedLenFeature(f.shape, _dt(f), f.default) for f in spec.example}
        ex_spec[spec.label.name] = tf.io.FixedLenFeature(
            (), tf.float32 if spec.label.dtype == "float" else tf.int64,
            -1 if spec.label.dtype == "int64" else -1.0)
        # decode_proto pads repeated fields with "" up to the longest list in the batch.
        n = tf.shape(examples)[1]
        examples = examples[:, :list_size]
        examples = tf.pad(examples, [[0, 0], [0, tf.maximum(0, list_size - n)]])
        flat = tf.io.parse_example(tf.reshape(examples, [-1]), ex_spec)
        valid = tf.reshape(tf.strings.length(examples) > 0, [-1])
        out = dict(ctx)
        for f in spec.example:
            x = flat[f.name]
            if isinstance(x, tf.RaggedTensor):
                out[f.name] = tf.RaggedTensor.from_uniform_row_length(x, list_size)
            else:
                out[f.name] = tf.reshape(x, tf.concat([[b, list_size], tf.shape(x)[1:]], 0))
        labels = tf.where(valid, tf.cast(flat[spec.label.name], tf.float32), -1.0)
        return out, tf.reshape(labels, [b, list_size])
    return parse


_DESC = _descriptor_source()


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
    """A small training config over the copied sample."""
    strategy = over.pop("strategy", "default")
    text = f"""
data:
  feature_spec: {paths['spec']}
  train_pattern: "{paths['train']}"
  valid_pattern: "{paths['train']}"
  list_size: 4
  train_batch_size: {over.pop('batch', 4)}
  sequence_length: 6
  shuffle_buffer: 0
model:
  hidden_sizes: [8]
  embedding_dim: 4
training:
  model_dir: {model_dir}
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
