"""End to end: train with preprocessing in tf.data, export with preprocessing inside.

Follows the Keras guide "Working with preprocessing layers": the layers built from the
beam_prep artifacts run in the ``tf.data`` pipeline during training (``dataset.map`` +
``prefetch``); the exported inference model wraps the same layers around the trained
model so it takes raw features. The script then reloads the export with
``tf.saved_model.load`` and ``keras.layers.TFSMLayer`` and checks that predictions are
identical to the tf.data path, also for unseen tokens, missing values and NaN.

Run after ``beam-prep analyze`` (and optionally ``beam-prep generate``)::

    python examples/make_sample_data.py          # examples/data/sample.csv (bundled)
    beam-prep analyze --spec examples/spec.yaml --input examples/data/sample.csv \\
        --output quickstart_out/artifacts
    beam-prep generate --artifacts quickstart_out/artifacts \\
        --output quickstart_out/preprocessing.py
    python examples/train_and_export.py --artifacts quickstart_out/artifacts \\
        --preprocessing quickstart_out/preprocessing.py --output quickstart_out/model

Without ``--preprocessing`` the runtime twin ``beam_prep.layers_from_artifacts`` is used.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

import numpy as np

from beam_prep.quiet_tf import import_tensorflow_quietly, native_stderr_filtered

# TensorFlow's start-up notices on a CPU machine (oneDNN, "Could not find cuda drivers", and
# later "failed call to cuInit") are not errors of this script: import TensorFlow with them
# filtered out, before Keras, and run main() under the same filter (tf_notices_filtered).
# Anything else TensorFlow writes still reaches stderr. BEAM_PREP_TF_LOGS=1 shows everything.
tf = import_tensorflow_quietly()

import keras  # noqa: E402

tf_notices_filtered = native_stderr_filtered

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "data", "sample.csv")
LABEL = "label"


def load_preprocessing(artifacts: str, preprocessing: str | None) -> Any:
    """The generated module (if given) or the runtime twin; both have the same API."""
    if preprocessing is None:
        import beam_prep

        return beam_prep.layers_from_artifacts(artifacts)
    spec = importlib.util.spec_from_file_location("generated_preprocessing", preprocessing)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module_build = module.build_preprocessor
    module_dataset_fn = module.make_dataset_fn
    module_inference = module.build_inference_model

    class _Bound:  # binds the artifact location, like the runtime twin does
        output_specs = module.OUTPUT_SPECS
        input_dtypes = module.INPUT_DTYPES
        input_columns = module.INPUT_COLUMNS

        @staticmethod
        def build_preprocessor(**kw: Any) -> Any:
            return module_build(artifacts, **kw)

        @staticmethod
        def make_dataset_fn(**kw: Any) -> Any:
            return module_dataset_fn(artifacts, **kw)

        @staticmethod
        def build_inference_model(trainer: Any) -> Any:
            return module_inference(trainer, artifacts)

        @staticmethod
        def encoded_inputs() -> Any:
            return module.encoded_inputs()

        export_saved_model = staticmethod(module.export_saved_model)

    return _Bound()


def read_csv(path: str, pp: Any, batch_size: int) -> tf.data.Dataset:
    """Batched ``(raw features dict, label)`` from the CSV; missing numbers become NaN."""
    with open(path, encoding="utf-8") as f:
        header = f.readline().strip().split(",")
        rows = sum(1 for line in f if line.strip())
    defaults: list[Any] = []
    for column in header:
        if column == LABEL:
            defaults.append(tf.constant(0, tf.int64))
            continue
        # Raw inputs are keyed by data column, with the dtype the analysis read it as.
        dtype = pp.input_dtypes.get(column, "string")
        defaults.append({"string": "", "int64": tf.constant(-1, tf.int64),
                         "float64": tf.constant(np.nan, tf.float64)}[dtype])
    ds = tf.data.experimental.CsvDataset(path, defaults, header=True)
    # A CSV dataset has no known length: Keras would warn "Your input ran out of data" at the
    # end of every epoch. The row count (the sample has no quoted newlines) tells it.
    ds = ds.apply(tf.data.experimental.assert_cardinality(rows))
    ds = ds.map(lambda *cols: dict(zip(header, cols)))
    return ds.batch(batch_size).map(lambda f: (f, tf.cast(f.pop(LABEL), tf.float32)))


def build_trainer(pp: Any, sizes: dict[str, int]) -> keras.Model:
    """A small model over the encoded features (the dict ``pp.encoded_inputs()``)."""
    inputs = pp.encoded_inputs()
    parts = []
    for key, x in inputs.items():
        dtype, shape = pp.output_specs[key]
        if dtype.startswith("int") and shape[1] == 1:
            emb = keras.layers.Embedding(sizes[key], 4, name=f"trainer_{key}_embedding")(x)
            parts.append(keras.layers.Flatten(name=f"trainer_{key}_flatten")(emb))
        else:
            # NaN (missing numbers) would poison training: the model imputes 0 = the mean.
            parts.append(keras.ops.nan_to_num(keras.ops.cast(x, "float32"), nan=0.0))
    h = keras.layers.Concatenate(name="trainer_concat")(parts)
    h = keras.layers.Dense(16, activation="relu", name="trainer_hidden")(h)
    out = keras.layers.Dense(1, activation="sigmoid", name="trainer_output")(h)
    return keras.Model(inputs, out, name="trainer")


def embedding_sizes(pp: Any) -> dict[str, int]:
    """Index range of every (batch, 1) integer output, read from the layers themselves."""
    sizes = {}
    by_name = {layer.name: layer for layer in pp.build_preprocessor().layers}
    for key in pp.output_specs:
        if f"{key}_lookup" in by_name:
            sizes[key] = int(by_name[f"{key}_lookup"].vocabulary_size())
        elif f"{key}_hashing" in by_name:
            sizes[key] = int(by_name[f"{key}_hashing"].num_bins)
        elif key.endswith("_bucket") and f"{key[:-7]}_discretization" in by_name:
            sizes[key] = len(by_name[f"{key[:-7]}_discretization"].bin_boundaries) + 1
    return sizes


def probe_batch(pp: Any, data: tf.data.Dataset) -> dict[str, tf.Tensor]:
    """First data rows plus rows of unseen tokens, missing values and NaN."""
    raw, _ = next(iter(data))
    rows = {k: v[:4] for k, v in raw.items()}
    odd = {"string": ["never-seen-token", ""], "int64": [123456789, -1],
           "float64": [np.nan, 1e6]}
    for column, dtype in pp.input_dtypes.items():
        rows[column] = tf.concat([rows[column], tf.constant(odd[dtype], rows[column].dtype)], 0)
    return rows


def run(artifacts: str, output: str, *, data: str = DEFAULT_DATA,
        preprocessing: str | None = None, epochs: int = 2, batch_size: int = 64) -> dict:
    """Trains, exports and checks; returns the export path and the measured differences."""
    keras.utils.set_random_seed(0)
    pp = load_preprocessing(artifacts, preprocessing)
    raw = read_csv(data, pp, batch_size)
    train = raw.map(pp.make_dataset_fn(), num_parallel_calls=tf.data.AUTOTUNE)
    train = train.prefetch(tf.data.AUTOTUNE)

    trainer = build_trainer(pp, embedding_sizes(pp))
    trainer.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    # The tf.data pipeline shuffles already; shuffle=False keeps Keras from warning it ignores it.
    history = trainer.fit(train, epochs=epochs, verbose=0, shuffle=False)

    inference = pp.build_inference_model(trainer)
    export_dir = os.path.join(output, "export")
    # Two signatures: `serve` (= serving_default, float64 tensors) and `serve_tf_examples`
    # (serialized tf.Examples); docs/generated_layers.md, "Serving: which signature".
    pp.export_saved_model(inference, export_dir)

    probe = probe_batch(pp, raw)
    via_tf_data = trainer.predict(
        tf.data.Dataset.from_tensors(probe).map(pp.make_dataset_fn()), verbose=0)
    reloaded = tf.saved_model.load(export_dir)
    raw_inputs = {column: tf.reshape(probe[column], [-1, 1]) for column in pp.input_dtypes}
    via_saved_model = reloaded.serve(raw_inputs).numpy()
    # dtype="float64": a Keras layer casts float inputs to its own float dtype (float32 by
    # default), and numeric columns are float64 raw inputs.
    via_tfsm = keras.layers.TFSMLayer(export_dir, call_endpoint="serve",
                                      dtype="float64")(raw_inputs)
    result = {
        "export_dir": export_dir,
        "loss": float(history.history["loss"][-1]),
        "predictions": via_tf_data,
        "raw_inputs": raw_inputs,
        "max_abs_diff_saved_model": float(np.max(np.abs(via_saved_model - via_tf_data))),
        "max_abs_diff_tfsm_layer": float(np.max(np.abs(np.asarray(via_tfsm) - via_tf_data))),
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", required=True, help="Artifact directory (analyze).")
    parser.add_argument("--output", required=True, help="Where to write the export.")
    parser.add_argument("--data", default=DEFAULT_DATA, help="CSV with the raw columns.")
    parser.add_argument("--preprocessing", default=None,
                        help="Module written by `beam-prep generate` (default: runtime twin).")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args(argv)
    with tf_notices_filtered():
        result = run(args.artifacts, args.output, data=args.data,
                     preprocessing=args.preprocessing, epochs=args.epochs)
    print(f"trained: final loss {result['loss']:.4f}")
    print(f"exported: {result['export_dir']}")
    print(f"tf.data vs tf.saved_model.load: max |diff| = {result['max_abs_diff_saved_model']}")
    print(f"tf.data vs keras.layers.TFSMLayer: max |diff| = {result['max_abs_diff_tfsm_layer']}")
    same = result["max_abs_diff_saved_model"] == 0 and result["max_abs_diff_tfsm_layer"] == 0
    print("identical predictions (incl. unseen tokens, missing values, NaN):", same)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
