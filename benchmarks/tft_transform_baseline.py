"""TF Transform baseline of the transform job: ``TransformDataset`` + tf.Example TFRecords.

The preprocessing_fn is the TFT equivalent of the benchmark spec (``gen_criteo.py``): for each
``kind: string`` feature ``tft.compute_and_apply_vocabulary(top_k=K, num_oov_buckets=1)``,
for each ``kind: numeric`` feature ``tft.scale_to_z_score`` and ``tft.bucketize``. First an
``AnalyzeDataset`` pipeline (not timed) makes the transform_fn; then the timed pipeline
reads the Parquet files through tfx-bsl's ``ParquetTFXIO`` (TFT's best Parquet path), applies
``TransformDataset`` and writes the result with ``ExampleProtoCoder`` + ``WriteToTFRecord``:
TFT's standard way to materialize a dataset. CPU time is this process's (``process_time``,
every thread), wall time ``perf_counter``.

This module imports tensorflow_transform (Keras 2 for the whole process): run it as its own
process only (``bench_transform.py`` does).

Example:
    $ python benchmarks/tft_transform_baseline.py --data benchmarks/data/criteo_200k \
        --output /tmp/tft_out --json /tmp/tft.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._common import load_spec_features  # noqa: E402
from benchmarks.tft_baseline import _tfxio, _to_list_columns  # noqa: E402

RUNNER = "--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"


def _cpu() -> float:
    """User + system CPU seconds of this process (every thread) and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def make_preprocessing_fn(cats: list, nums: list):
    """Vocabulary ids, z-scores and buckets: the outputs of the beam_prep spec's layers."""
    import tensorflow_transform as tft

    def preprocessing_fn(inputs):
        outputs = {}
        for name, column, top_k in cats:
            outputs[name] = tft.compute_and_apply_vocabulary(
                inputs[column], top_k=top_k, num_oov_buckets=1, vocab_filename=name)
        for name, column, num_buckets, _ in nums:
            outputs[name] = tft.scale_to_z_score(inputs[column])
            if num_buckets:
                outputs[f"{name}_bucket"] = tft.bucketize(inputs[column], num_buckets)
        return outputs

    return preprocessing_fn


def run(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="Directory written by gen_criteo.py.")
    p.add_argument("--output", required=True, help="Folder for the TFRecord output.")
    p.add_argument("--json", required=True, help="Where to write the timings.")
    p.add_argument("--analyze_data", default=None,
                   help="Directory whose data the (untimed) analysis reads; default --data.")
    p.add_argument("--transform_fn", default=None,
                   help="Keep the transform_fn here and reuse it when present.")
    args, beam_args = p.parse_known_args(argv)
    if not any(a.startswith("--runner") for a in beam_args):
        beam_args.append(RUNNER)

    import apache_beam as beam
    import tensorflow_transform.beam as tft_beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from tensorflow_transform.coders import ExampleProtoCoder

    cats, nums = load_spec_features(os.path.join(args.data, "spec.yaml"))
    columns = sorted({c for _, c, _ in cats} | {c for _, c, _, _ in nums})
    source = _tfxio(args.data, "parquet", columns)
    temp_dir = tempfile.mkdtemp(prefix="tft_transform_")
    fn_dir = args.transform_fn or os.path.join(temp_dir, "transform_fn")
    fn = make_preprocessing_fn(cats, nums)

    def read(pipeline, src=source):
        raw = pipeline | "Read" >> src.BeamSource()
        return raw | "ToListColumns" >> beam.Map(_to_list_columns, schema=src.ArrowSchema())

    if not os.path.exists(os.path.join(fn_dir, "transform_fn")):
        analyzed = _tfxio(args.analyze_data or args.data, "parquet", columns)
        with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
            with tft_beam.Context(temp_dir=os.path.join(temp_dir, "tmp_analyze")):
                transform_fn = ((read(pipeline, analyzed), analyzed.TensorAdapterConfig())
                                | "Analyze" >> tft_beam.AnalyzeDataset(fn))
                _ = transform_fn | "Write" >> tft_beam.WriteTransformFn(fn_dir)

    shutil.rmtree(args.output, ignore_errors=True)
    cpu0, wall0 = _cpu(), time.perf_counter()
    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        with tft_beam.Context(temp_dir=os.path.join(temp_dir, "tmp_transform")):
            transform_fn = pipeline | "ReadTransformFn" >> tft_beam.ReadTransformFn(fn_dir)
            (data, metadata) = (((read(pipeline), source.TensorAdapterConfig()), transform_fn)
                                | "Transform" >> tft_beam.TransformDataset())
            coder = ExampleProtoCoder(metadata.schema)
            _ = (data
                 | "Encode" >> beam.Map(coder.encode)
                 | "WriteExamples" >> beam.io.WriteToTFRecord(
                     os.path.join(args.output, "part")))
    timing = {"cpu_seconds": _cpu() - cpu0,
              "wall_seconds": time.perf_counter() - wall0, "beam_args": beam_args}
    shutil.rmtree(temp_dir, ignore_errors=True)
    with open(args.json, "w") as f:
        json.dump(timing, f)
    return timing


if __name__ == "__main__":
    print(run())
