"""Export -> reload -> both signatures score like the in-process model; self-contained assets."""

from __future__ import annotations

import os
import shutil

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.example import example_pb2
from tensorflow_serving.apis import input_pb2

from beam_prep.ranking.train.export import ELWC_SIGNATURE, EXAMPLE_SIGNATURE
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from tests.ranking.train_fixtures import (
    SAMPLE,
    SPEC,
    config_yaml,
    copy_sample,
    elwc_parse_fn,
    hand_elwc,
    sample_examples,
    served_like,
)


def _flatten_to_examples(elwc) -> list[bytes]:
    """Each document of an ELWC as one tf.Example holding the context features too."""
    out = []
    for doc in elwc.examples:
        ex = example_pb2.Example()
        ex.CopyFrom(doc)
        for k, v in elwc.context.features.feature.items():
            ex.features.feature[k].CopyFrom(v)
        out.append(ex.SerializeToString())
    return out


def test_export_reload_both_signatures_after_artifacts_deleted(tmp_path):
    paths = copy_sample(tmp_path)
    art = tmp_path / "artifacts"
    art.mkdir()
    vocab = str(art / "tokens.txt")
    shutil.copy(paths["vocab"], vocab)
    layers = {n: keras.layers.StringLookup(vocabulary=vocab, name=f"{n}_lookup")
              for n in ("query_tokens", "document_tokens")}
    export_dir = str(tmp_path / "export")
    hp = RankingHparams.from_yaml_text(config_yaml(paths, str(tmp_path / "m"), epochs=1),
                                       overrides=[f"training.export_dir={export_dir}",
                                                  "model.batch_norm=true"])
    launcher = RankingLauncher(hp, layers=layers, vocab_rows={}, parse_fn=elwc_parse_fn(SPEC, 4))
    result = launcher.run()
    assert result.export_path == export_dir
    assert os.listdir(os.path.join(export_dir, "assets")) == ["tokens.txt"]

    records = [r.numpy() for r in tf.data.TFRecordDataset(SAMPLE)] + [hand_elwc()]
    features, _ = launcher.datasets.parse_fn(tf.constant(records))
    want = result.model(launcher.preprocessor(features), training=False).numpy()
    mask = features["__mask__"].numpy()
    del result, launcher, layers
    shutil.rmtree(art)  # the export must not need the artifact directory any more

    loaded = tf.saved_model.load(export_dir)
    out = loaded.signatures[ELWC_SIGNATURE](serialized=tf.constant(records))
    got = out["scores"].numpy()
    # padded to the longest list of the request (3 documents), not to list_size (4)
    assert got.shape == (len(records), 3)
    np.testing.assert_array_equal(out["num_documents"].numpy(), mask.sum(axis=1))
    np.testing.assert_allclose(got, served_like(want, mask), rtol=1e-5, atol=1e-5)
    assert np.ptp(got[-1, :3]) > 1e-4  # scores depend on the documents

    # tf.Example signature: each document (with its list's context) scores as inside the list.
    hand = input_pb2.ExampleListWithContext()
    hand.ParseFromString(hand_elwc())
    for i, elwc in enumerate([*sample_examples(), hand]):
        exs = _flatten_to_examples(elwc)[:4]
        scores = loaded.signatures[EXAMPLE_SIGNATURE](serialized=tf.constant(exs))["scores"]
        assert scores.shape == (len(exs),)
        np.testing.assert_allclose(scores.numpy(), want[i, :len(exs)], rtol=1e-5, atol=1e-5)
