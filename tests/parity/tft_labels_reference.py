"""Reference label-aware vocabularies with tensorflow-transform, run as a separate process.

Importing ``tensorflow_transform`` switches ``tf.keras`` to Keras 2 for the whole process,
so ``test_tft_labels.py`` runs this script with ``subprocess`` and reads back files only.

Usage::

    python tft_labels_reference.py --data columns.json --config config.json --output DIR

``columns.json``: ``{column: [values...]}``; ``config.json``: ``{"batch_size": int,
"vocabularies": [{"name", "column", "dtype" ("string" | "integer"), "labels",
"top_k", "frequency_threshold", "use_adjusted_mutual_info", "min_diff_from_avg"}, ...]}``.
For each entry ``tft.vocabulary(x, labels=...)`` writes ``assets/<name>`` (the tokens) and
``assets/<name>_scores`` (``store_frequency=True``: "score token" per line). Prints the
assets folder as the last line of stdout.
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

_DTYPES = {"string": tf.string, "integer": tf.int64}


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
    spec = {}
    for v in config["vocabularies"]:
        spec[v["column"]] = tf.io.FixedLenFeature([], _DTYPES[v["dtype"]])
        spec[v["labels"]] = tf.io.FixedLenFeature([], tf.int64)
    names = list(spec)
    instances = [
        {c: (value.encode("utf-8") if spec[c].dtype == tf.string else value)
         for c, value in zip(names, row)}
        for row in zip(*(columns[c] for c in names))]

    def preprocessing_fn(inputs):
        out = {}
        for v in config["vocabularies"]:
            x, y = inputs[v["column"]], inputs[v["labels"]]
            kwargs = dict(top_k=v["top_k"], frequency_threshold=v["frequency_threshold"],
                          labels=y, use_adjusted_mutual_info=v["use_adjusted_mutual_info"],
                          min_diff_from_avg=v["min_diff_from_avg"])
            path = tft.vocabulary(x, vocab_filename=v["name"], **kwargs)
            scored = tft.vocabulary(x, vocab_filename=v["name"] + "_scores",
                                    store_frequency=True, **kwargs)
            out[v["name"]] = tft.apply_vocabulary(x, path)
            # The scored file must feed an output to be written: its path's length, per row.
            out[v["name"] + "_s"] = tf.fill(tf.shape(y), tf.cast(tf.strings.length(scored),
                                                                   tf.int64))
        return out

    metadata = dataset_metadata.DatasetMetadata.from_feature_spec(spec)
    transform_dir = os.path.join(args.output, "transform_fn_root")
    with tempfile.TemporaryDirectory() as tmp:
        with beam.Pipeline(runner=FnApiRunner()) as pipeline:
            with tft_beam.Context(temp_dir=tmp, desired_batch_size=config["batch_size"]):
                data = pipeline | "Create" >> beam.Create(instances, reshuffle=False)
                transform_fn = (data, metadata) | tft_beam.AnalyzeDataset(preprocessing_fn)
                _ = transform_fn | tft_beam.WriteTransformFn(transform_dir)
    print(os.path.join(transform_dir, "transform_fn", "assets"))


if __name__ == "__main__":
    main()
