"""Reference analysis with tensorflow-transform, run as a separate process.

Importing ``tensorflow_transform`` switches ``tf.keras`` to Keras 2 for the whole process,
so the parity test runs this script with ``subprocess`` and reads back files only.

Usage::

    python tft_reference.py --data columns.json --config config.json --output DIR

``columns.json``: one JSON object ``{column: [values...]}`` (see ``datagen.py``).
``config.json``::

    {"vocabularies": [{"name": "s_all", "column": "s", "dtype": "string",
                       "top_k": null, "frequency_threshold": null}, ...],
     "numerics": [{"name": "x", "column": "x", "num_buckets": 10, "epsilon": 0.01}, ...]}

Writes ``DIR/transform_fn/`` (TFT's ``WriteTransformFn``: vocabulary files in
``transform_fn/assets/<name>``) and ``DIR/results.json`` with, per numeric feature,
``mean`` and ``var`` (``tft.mean``/``tft.var`` on the value cast to float64) and
``boundaries`` (``tft.quantiles`` on the float32 value, flattened).
``tf_rows.py`` builds the rows (and writes them as ``tf.Example`` for the parity test).
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

# Run as a script: this folder is on sys.path.
from tf_rows import feature_spec, instances  # noqa: E402


def _preprocessing_fn(config: dict):
    def fn(inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        out: dict[str, tf.Tensor] = {}
        for v in config["vocabularies"]:
            x = inputs[v["column"]]
            path = tft.vocabulary(x, top_k=v["top_k"],
                                  frequency_threshold=v["frequency_threshold"],
                                  vocab_filename=v["name"])
            out[v["name"] + "__index"] = tft.apply_vocabulary(x, path)
        for n in config["numerics"]:
            x = inputs[n["column"]]
            x64 = tf.cast(x, tf.float64)
            zeros = tf.zeros_like(x64)
            # Outputs cannot be float64: pass the float64 bits through as int64 (exact).
            out[n["name"] + "__mean"] = tf.bitcast(
                zeros + tft.mean(x64, output_dtype=tf.float64), tf.int64)
            out[n["name"] + "__var"] = tf.bitcast(
                zeros + tft.var(x64, output_dtype=tf.float64), tf.int64)
            b = tft.quantiles(x, num_buckets=n["num_buckets"], epsilon=n["epsilon"])
            out[n["name"] + "__boundaries"] = tf.tile(tf.reshape(b, [1, -1]),
                                                      [tf.shape(x)[0], 1])
        return out
    return fn


def _float64(bits: tf.Tensor) -> float:
    return float(tf.bitcast(bits[:1], tf.float64).numpy()[0])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--output", required=True)
    args = p.parse_args()
    with open(args.data, encoding="utf-8") as f:
        columns = json.load(f)
    with open(args.config, encoding="utf-8") as f:
        config = json.load(f)
    spec = feature_spec(config)
    metadata = dataset_metadata.DatasetMetadata.from_feature_spec(spec)
    rows = instances(columns, spec)
    transform_dir = os.path.join(args.output, "transform_fn_root")
    with tempfile.TemporaryDirectory() as tmp:
        with beam.Pipeline(runner=FnApiRunner()) as pipeline:
            with tft_beam.Context(temp_dir=tmp):
                data = pipeline | "Create" >> beam.Create(rows, reshuffle=False)
                transform_fn = (data, metadata) | tft_beam.AnalyzeDataset(
                    _preprocessing_fn(config))
                _ = transform_fn | tft_beam.WriteTransformFn(transform_dir)

    tft_output = tft.TFTransformOutput(transform_dir)
    first = {c: tf.constant([rows[0][c]], dtype=spec[c].dtype) for c in spec}
    transformed = tft_output.transform_raw_features(first)
    results: dict[str, dict] = {"numerics": {}, "transform_dir": transform_dir,
                                "assets_dir": os.path.join(transform_dir, "transform_fn",
                                                           "assets")}
    for n in config["numerics"]:
        name = n["name"]
        results["numerics"][name] = {
            "mean": _float64(transformed[name + "__mean"]),
            "var": _float64(transformed[name + "__var"]),
            "boundaries": [float(b) for b in transformed[name + "__boundaries"].numpy()[0]],
        }
    with open(os.path.join(args.output, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
