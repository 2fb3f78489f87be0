"""What `scaling: log1p | robust | piecewise_linear` costs (issue 23).

Writes ``--rows`` heavy-tailed floats (Student t, 2 d.o.f., 1% missing) to Parquet and times:

* the analysis of one numeric feature with each scaling (``robust`` without ``num_buckets``
  adds the quantile sketch ``z_score`` does not need; ``piecewise_linear`` needs
  ``num_buckets``, as ``z_score`` with buckets does);
* the quartiles' rank error against numpy over the same values (must be <= epsilon);
* the transform job's numpy encoders and the generated module's layers (TensorFlow, one
  batch of ``--batch`` rows) per scaling.

Run: ``python benchmarks/bench_scaling.py [--rows 500000] [--batch 100000]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

SCALINGS = {
    "z_score": {},
    "z_score_buckets": {"num_buckets": 16},
    "log1p": {"scaling": "log1p"},
    "robust": {"scaling": "robust"},
    "piecewise_linear": {"scaling": "piecewise_linear", "num_buckets": 16},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=100_000)
    args = parser.parse_args()
    from beam_prep.pipelines import analyze

    from beam_prep.codegen.render import generate
    from beam_prep.io.contract.artifacts import Artifacts
    from beam_prep.io.inputs.readers import Split, read_split
    from beam_prep.transform.layers import BatchEncoder

    work = tempfile.mkdtemp(prefix="bench_scaling_")
    rng = np.random.default_rng(0)
    x = np.round(rng.standard_t(2, args.rows) * 100.0, 4)
    cells = pa.array(x, pa.float64(), mask=rng.random(args.rows) < 0.01)
    data = os.path.join(work, "data.parquet")
    pq.write_table(pa.table({"x": cells}), data)
    finite = np.sort(np.asarray(cells.drop_null()))
    results = {}
    for name, fields in SCALINGS.items():
        spec = os.path.join(work, f"{name}.yaml")
        with open(spec, "w") as f:
            f.write(json.dumps({"features": [{"name": "x", "kind": "numeric", **fields}]}))
        out = os.path.join(work, name)
        start = time.perf_counter()
        analyze.run(["--spec", spec, "--input", data, "--output", out])
        row = {"analyze_s": round(time.perf_counter() - start, 2)}
        stats = Artifacts(out).stats("x")
        if stats.get("quartiles"):
            errors = []
            for level, v in zip((0.25, 0.5, 0.75), stats["quartiles"]):
                below = np.searchsorted(finite, v, "left") / finite.size
                at_most = np.searchsorted(finite, v, "right") / finite.size
                errors.append(float(max(below - level, level - at_most, 0.0)))
            row["quartile_rank_error"] = max(errors)
            row["epsilon"] = stats["epsilon"]
        enc = BatchEncoder(out)
        [split] = list(read_split(Split(data, "parquet"), enc.columns))
        batch = split.batch.slice(0, args.batch)
        start = time.perf_counter()
        enc.encode(batch)
        row["numpy_encode_ms"] = round((time.perf_counter() - start) * 1e3, 1)
        module_path = os.path.join(work, f"pp_{name}.py")
        generate(out, module_path, overwrite=True)  # a scratch folder
        spec_ = importlib.util.spec_from_file_location(f"pp_{name}", module_path)
        module = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(module)
        import tensorflow as tf

        fn = module.make_dataset_fn()
        raw = {"x": tf.constant(np.asarray(batch.column("x").to_numpy(zero_copy_only=False),
                                           np.float64)[:, None])}
        fn(raw)  # build
        start = time.perf_counter()
        fn(raw)
        row["keras_encode_ms"] = round((time.perf_counter() - start) * 1e3, 1)
        results[name] = row
        print(name, row, flush=True)
    print(json.dumps({"rows": args.rows, "batch": args.batch, "results": results}, indent=2))


if __name__ == "__main__":
    main()
