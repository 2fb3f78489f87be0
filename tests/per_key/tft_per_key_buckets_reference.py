"""TF Transform's ``bucketize_per_key`` on given rows, run as a separate process.

Importing ``tensorflow_transform`` switches ``tf.keras`` to Keras 2 for the whole process,
so the parity test runs this script with ``subprocess`` and reads back a JSON file.

Usage::

    python tft_per_key_buckets_reference.py --data rows.json --output out.json --buckets 4

``rows.json``: ``{"x": [floats], "key": [strings]}`` (no missing values). Writes
``{"bucket": [...]}``: ``tft.bucketize_per_key(x, key, num_buckets)`` of every row
(float32 input), in row order.
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


def make_preprocessing_fn(num_buckets: int):
    def preprocessing_fn(inputs):
        return {"bucket": tft.bucketize_per_key(inputs["x"], inputs["key"], num_buckets),
                "row": inputs["row"]}

    return preprocessing_fn


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--buckets", type=int, required=True)
    args = p.parse_args()
    with open(args.data, encoding="utf-8") as f:
        data = json.load(f)
    spec = {"x": tf.io.FixedLenFeature([], tf.float32),
            "key": tf.io.FixedLenFeature([], tf.string),
            "row": tf.io.FixedLenFeature([], tf.int64)}
    metadata = dataset_metadata.DatasetMetadata.from_feature_spec(spec)
    rows = [{"x": x, "key": k.encode("utf-8"), "row": i}
            for i, (x, k) in enumerate(zip(data["x"], data["key"]))]
    with tempfile.TemporaryDirectory() as tmp:
        with beam.Pipeline(runner=FnApiRunner()) as pipeline:
            with tft_beam.Context(temp_dir=tmp):
                raw = pipeline | "Create" >> beam.Create(rows, reshuffle=False)
                transformed, _ = ((raw, metadata) | tft_beam.AnalyzeAndTransformDataset(
                    make_preprocessing_fn(args.buckets)))
                out_path = os.path.join(tmp, "out")
                _ = (transformed[0]
                     | beam.Map(lambda r: json.dumps([int(r["row"]), int(r["bucket"])]))
                     | beam.io.WriteToText(out_path, shard_name_template=""))
        with open(out_path, encoding="utf-8") as f:
            got = sorted(json.loads(line) for line in f)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump({"bucket": [g[1] for g in got]}, f)


if __name__ == "__main__":
    main()
