"""Weighted reference analysis with tensorflow-transform, run as a separate process.

Usage::

    python tft_weighted_reference.py --data rows.json --output DIR

``rows.json``: ``{"s": [str], "i": [int], "x": [float], "w": [float]}`` (valid weights only:
TFT has no rule for missing or negative ones). Writes the vocabularies of
``tft.vocabulary(x, weights=w)`` (``s_all``: no threshold; ``s_cut``: frequency_threshold 3.5,
top_k 7; ``i_all``: integers) under ``DIR/assets`` and ``DIR/results.json`` with the boundaries
of ``tft.quantiles(x, 5, 0.01, weights=w)``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import apache_beam as beam  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_transform as tft  # noqa: E402
import tensorflow_transform.beam as tft_beam  # noqa: E402
from apache_beam.runners.portability.fn_api_runner import FnApiRunner  # noqa: E402
from tensorflow_transform.tf_metadata import dataset_metadata  # noqa: E402

SPEC = {"s": tf.io.FixedLenFeature([], tf.string), "i": tf.io.FixedLenFeature([], tf.int64),
        "x": tf.io.FixedLenFeature([], tf.float32), "w": tf.io.FixedLenFeature([], tf.float32)}


def _fn(inputs):
    w = inputs["w"]
    out = {}
    for name, col, top_k, threshold in (("s_all", "s", None, None), ("s_cut", "s", 7, 3.5),
                                        ("i_all", "i", None, None)):
        path = tft.vocabulary(inputs[col], weights=w, top_k=top_k,
                              frequency_threshold=threshold, vocab_filename=name)
        out[name] = tft.apply_vocabulary(inputs[col], path)
    b = tft.quantiles(inputs["x"], num_buckets=5, epsilon=0.01, weights=w)
    out["b"] = tf.tile(tf.reshape(b, [1, -1]), [tf.shape(w)[0], 1])
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--output", required=True)
    args = p.parse_args()
    with open(args.data, encoding="utf-8") as f:
        cols = json.load(f)
    rows = [{"s": s.encode("utf-8"), "i": i, "x": x, "w": w}
            for s, i, x, w in zip(cols["s"], cols["i"], cols["x"], cols["w"])]
    metadata = dataset_metadata.DatasetMetadata.from_feature_spec(SPEC)
    root = os.path.join(args.output, "tft")
    with tempfile.TemporaryDirectory() as tmp:
        with beam.Pipeline(runner=FnApiRunner()) as pipeline:
            with tft_beam.Context(temp_dir=tmp):
                data = pipeline | "Create" >> beam.Create(rows, reshuffle=False)
                fn = (data, metadata) | tft_beam.AnalyzeDataset(_fn)
                _ = fn | tft_beam.WriteTransformFn(root)
    output = tft.TFTransformOutput(root)
    first = {c: tf.constant([rows[0][c]], dtype=SPEC[c].dtype) for c in SPEC}
    b = output.transform_raw_features(first)["b"].numpy()[0]
    with open(os.path.join(args.output, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"assets": os.path.join(root, "transform_fn", "assets"),
                   "boundaries": [float(v) for v in b]}, f)


if __name__ == "__main__":
    main()
