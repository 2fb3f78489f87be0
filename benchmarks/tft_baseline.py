"""TF Transform baseline: ``AnalyzeDataset`` with the preprocessing_fn equivalent to a spec.

For each ``kind: string`` feature: ``tft.compute_and_apply_vocabulary(top_k=K,
vocab_filename=<name>)``; for each ``kind: numeric`` feature with ``num_buckets``: the two
analyzers behind ``tft.scale_to_z_score`` and ``tft.bucketize`` — ``analyzers._mean_and_var`` and
``tft.quantiles(num_buckets, epsilon)`` (epsilon default ``min(1/num_buckets, 0.01)`` as in
``bucketize``) — applied the same way those mappers apply them. Calling the analyzers directly
(instead of the mappers) computes exactly the same thing and lets us read the values back.

Input is read through TFT's best path: ``TFExampleRecord`` TFXIO for TFRecord and
tfx-bsl's ``ParquetTFXIO`` for Parquet, with the TFMD schema written by ``gen_criteo.py``
(all features variable-length, so missing cells contribute no value).

After the (timed) analysis, the vocabularies and mean/variance/boundaries are dumped in the
format of ``benchmarks/_common.py`` for the harness to compare.

This module imports tensorflow_transform: run it as its own process only.

Example:
    $ python benchmarks/tft_baseline.py --data benchmarks/data/criteo_100k --format tfrecord \
        --dump /tmp/tft_dump --runner=DirectRunner
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

# Keep TF quiet; must be set before TensorFlow is imported.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import load_spec_features, write_dump  # noqa: E402


def _stat_key(name: str, what: str) -> str:
    return f"__{what}__{name}"


def make_preprocessing_fn(cats: list, nums: list):
    """The preprocessing_fn: vocabularies, z-score and bucketize, plus readable analyzer outputs."""
    import tensorflow as tf
    import tensorflow_transform as tft
    from tensorflow_transform import analyzers as tft_analyzers

    def preprocessing_fn(inputs):
        outputs = {}
        batch = None
        for name, column, top_k in cats:
            x = inputs[column]
            outputs[name] = tft.compute_and_apply_vocabulary(
                x, top_k=top_k, vocab_filename=name)
        for name, column, num_buckets, epsilon in nums:
            x = inputs[column]
            batch = tf.cast(x.dense_shape[0], tf.int32)
            values = x.values
            # The very call tft.scale_to_z_score makes (there is no public mean_and_var).
            mean, var = tft_analyzers._mean_and_var(x)
            # scale_to_z_score: (x - mean) / sqrt(var), identity shift when var == 0.
            scaled = tf.where(var > 0, (values - mean) * tf.math.rsqrt(var), values - mean)
            outputs[f"{name}_z"] = tf.SparseTensor(x.indices, scaled, x.dense_shape)
            if num_buckets:
                boundaries = tft.quantiles(values, num_buckets, epsilon)
                outputs[f"{name}_bucket"] = tft.apply_buckets(x, boundaries)
                outputs[_stat_key(name, "boundaries")] = tf.tile(boundaries, [batch, 1])
            outputs[_stat_key(name, "mean")] = tf.fill([batch], mean)
            outputs[_stat_key(name, "variance")] = tf.fill([batch], var)
        return outputs

    return preprocessing_fn


def _tfxio(data_dir: str, fmt: str, columns: list[str]):
    from google.protobuf import text_format
    from tensorflow_metadata.proto.v0 import schema_pb2

    with open(os.path.join(data_dir, "schema.pbtxt")) as f:
        full = text_format.Parse(f.read(), schema_pb2.Schema())
    schema = schema_pb2.Schema()
    for feature in full.feature:
        if feature.name in columns:
            schema.feature.add().CopyFrom(feature)
    if fmt == "tfrecord":
        from tfx_bsl.public import tfxio

        return tfxio.TFExampleRecord(
            file_pattern=os.path.join(data_dir, "tfrecord", "*.tfrecord"), schema=schema)
    from tfx_bsl.tfxio.parquet_tfxio import ParquetTFXIO

    return ParquetTFXIO(file_pattern=os.path.join(data_dir, "parquet", "*.parquet"),
                        column_names=columns, schema=schema)


def _to_list_columns(batch, schema):
    """Scalar Parquet columns -> the large_list columns ParquetTFXIO's TensorAdapter expects.

    ParquetTFXIO declares every feature as ``large_list<...>`` (its schema comes from the CSV
    decoder) but passes the file's scalar columns through unchanged, and the adapter then
    refuses them ("Expected same schema"). This vectorised step is the smallest glue that makes
    TFT read plain Parquet; a null cell becomes a null list (no value).
    """
    import numpy as np
    import pyarrow as pa

    arrays = []
    for field in schema:
        col = batch.column(batch.schema.get_field_index(field.name))
        if pa.types.is_large_list(col.type) or pa.types.is_list(col.type):
            arrays.append(col.cast(field.type))
            continue
        valid = np.asarray(col.is_valid())
        offsets = np.zeros(len(col) + 1, dtype=np.int64)
        np.cumsum(valid, out=offsets[1:])
        values = (col.drop_null() if col.null_count else col).cast(field.type.value_type)
        mask = pa.array(~valid) if col.null_count else None
        arrays.append(pa.LargeListArray.from_arrays(pa.array(offsets), values, mask=mask))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _read_back(transform_dir: str, cats: list, nums: list) -> tuple[dict, dict]:
    """Vocabulary files and analyzer values of the analysed transform_fn."""
    import tensorflow as tf
    import tensorflow_transform as tft

    out = tft.TFTransformOutput(transform_dir)
    vocabs = {}
    for name, _, _ in cats:
        with open(out.vocabulary_file_by_name(name), "rb") as f:
            vocabs[name] = f.read().decode("utf-8").split("\n")
        if vocabs[name] and vocabs[name][-1] == "":
            vocabs[name].pop()
    # Transform one dummy row to read the analyzer constants back.
    raw = {}
    for _, column, _ in cats:
        raw[column] = tf.SparseTensor([[0, 0]], tf.constant([b"x"]), [1, 1])
    for _, column, _, _ in nums:
        raw[column] = tf.SparseTensor([[0, 0]], tf.constant([1.0]), [1, 1])
    transformed = out.transform_raw_features(raw)
    stats = {}
    for name, _, num_buckets, _ in nums:
        s = {"mean": float(transformed[_stat_key(name, "mean")].numpy()[0]),
             "variance": float(transformed[_stat_key(name, "variance")].numpy()[0])}
        if num_buckets:
            s["boundaries"] = [float(v) for v in
                               transformed[_stat_key(name, "boundaries")].numpy()[0]]
        stats[name] = s
    return vocabs, stats


def run(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description="TF Transform AnalyzeDataset baseline.")
    p.add_argument("--data", required=True, help="Directory written by gen_criteo.py.")
    p.add_argument("--format", choices=("tfrecord", "parquet"), default="tfrecord")
    p.add_argument("--spec", default=None, help="Spec YAML; default DATA/spec.yaml.")
    p.add_argument("--dump", required=True, help="Where to write vocabularies and stats.")
    p.add_argument("--temp_dir", default=None)
    args, beam_args = p.parse_known_args(argv)
    if not any(a.startswith("--runner") for a in beam_args):
        beam_args.append("--runner=DirectRunner")

    t_start = time.perf_counter()
    import apache_beam as beam
    import tensorflow_transform.beam as tft_beam
    from apache_beam.options.pipeline_options import PipelineOptions

    cats, nums = load_spec_features(args.spec or os.path.join(args.data, "spec.yaml"))
    columns = sorted({c for _, c, _ in cats} | {c for _, c, _, _ in nums})
    source = _tfxio(args.data, args.format, columns)
    temp_dir = args.temp_dir or tempfile.mkdtemp(prefix="tft_bench_")
    transform_dir = os.path.join(temp_dir, "transform_fn_out")
    t_imported = time.perf_counter()
    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        with tft_beam.Context(temp_dir=os.path.join(temp_dir, "tft_tmp")):
            raw = pipeline | "Read" >> source.BeamSource()
            if args.format == "parquet":
                raw = raw | "ToListColumns" >> beam.Map(_to_list_columns,
                                                        schema=source.ArrowSchema())
            transform_fn = ((raw, source.TensorAdapterConfig())
                            | "Analyze" >> tft_beam.AnalyzeDataset(
                                make_preprocessing_fn(cats, nums)))
            _ = transform_fn | "WriteTransformFn" >> tft_beam.WriteTransformFn(transform_dir)
    t_analyzed = time.perf_counter()
    vocabs, stats = _read_back(transform_dir, cats, nums)
    timing = {"import_seconds": t_imported - t_start, "analyze_seconds": t_analyzed - t_imported,
              "readback_seconds": time.perf_counter() - t_analyzed, "format": args.format,
              "beam_args": beam_args}
    write_dump(args.dump, vocabs, stats, timing)
    if args.temp_dir is None:
        shutil.rmtree(temp_dir, ignore_errors=True)
    return timing


if __name__ == "__main__":
    print(run())
