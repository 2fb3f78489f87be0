"""SavedModel export with two serving signatures; raw features in, preprocessing inside.

=====================  =======================================  ===========================
signature              input                                    output
=====================  =======================================  ===========================
``serving_default``    ``serialized``: string ``[batch]`` of    ``scores``: float32
                       serialized ``ExampleListWithContext``    ``[batch, list_size]``
``score_examples``     ``serialized``: string ``[batch]`` of    ``scores``: float32
                       serialized ``tf.Example`` (context       ``[batch]``
                       features included in each Example)
=====================  =======================================  ===========================

**Default = ELWC.** TF Ranking makes the tf.Example regression signature its default; we make
the listwise one the default because it is what the model was trained on (a list with its
context, scores comparable within the list) and what a ranking server sends; the per-document
signature stays available for callers that score documents one at a time. List entries past a
list's length are padding: their scores are meaningless and must be ignored by the caller.

Each tf.Example is scored as a one-document list (padded to ``list_size``; the scorer applies
the same network to every entry, so the score equals that document's score inside any list).
Vocabulary files of lookup layers are copied into the SavedModel's ``assets/``: the export
keeps working after the artifact directory is deleted.

Example:
    >>> path = export_ranker(model, preprocessor, "/tmp/ranker", parse_fn=parse)  # doctest: +SKIP
    >>> loaded = tf.saved_model.load(path)                                         # doctest: +SKIP
    >>> loaded.signatures["serving_default"](serialized=elwc_batch)["scores"]      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from beam_prep.ranking.train.mask import MASK_KEY
from beam_prep.ranking.train.preprocessor import Preprocessor

ELWC_SIGNATURE = "serving_default"
EXAMPLE_SIGNATURE = "score_examples"

_DTYPES = {"float": tf.float32, "int64": tf.int64, "string": tf.string}


def example_parse_spec(spec: Any) -> dict[str, Any]:
    """``tf.io.parse_example`` features for one tf.Example holding context + example features."""
    out: dict[str, Any] = {}
    for info in (*spec.context, *spec.example):
        dtype = _DTYPES[info.dtype]
        if info.is_var_len:
            out[info.name] = tf.io.RaggedFeature(dtype=dtype)
        else:
            default = info.default
            if default is None:
                default = "" if info.dtype == "string" else 0
            out[info.name] = tf.io.FixedLenFeature(tuple(info.shape), dtype,
                                                   default_value=default)
    return out


def examples_as_lists(features: dict[str, Any], spec: Any, list_size: int) -> dict[str, Any]:
    """Parsed tf.Examples ``[N, ...]`` -> one-document lists (example features ``[N, L, ...]``)."""
    out = dict(features)
    for info in spec.example:
        x = features[info.name]
        if isinstance(x, tf.RaggedTensor):
            n = x.nrows()
            lengths = tf.concat([x.row_lengths()[:, None],
                                 tf.zeros([n, list_size - 1], x.row_lengths().dtype)], axis=1)
            inner = tf.RaggedTensor.from_row_lengths(x.flat_values, tf.reshape(lengths, [-1]))
            out[info.name] = tf.RaggedTensor.from_uniform_row_length(inner, list_size)
        else:
            default = info.default
            if default is None:
                default = "" if info.dtype == "string" else 0
            pad_shape = tf.concat([tf.shape(x)[:1], [list_size - 1], tf.shape(x)[1:]], axis=0)
            pad = tf.fill(pad_shape, tf.cast(default, x.dtype))
            out[info.name] = tf.concat([x[:, None], pad], axis=1)
    return out


def export_ranker(model: keras.Model, preprocessor: Preprocessor, path: str, *,
                  parse_fn: Callable[[Any], tuple[dict[str, Any], Any]]) -> str:
    """Writes the SavedModel at ``path`` (signatures in the module docstring); returns ``path``.

    Args:
        model: Trained model (preprocessed features -> ``[B, L]`` scores).
        preprocessor: The preprocessor used in training (its layers are tracked, so their
            vocabularies become assets).
        path: Output directory.
        parse_fn: Batch ELWC parser (the reader's), serialized ``[B]`` -> (features, labels).
    """
    spec = preprocessor.spec
    list_size = preprocessor.list_size
    archive = keras.export.ExportArchive()
    archive.track(model)
    for layer in preprocessor.layers.values():
        if isinstance(layer, keras.layers.Layer):
            archive.track(layer)
    parse_spec = example_parse_spec(spec)

    def score_elwc(serialized: Any) -> dict[str, Any]:
        features, _ = parse_fn(serialized)
        return {"scores": model(preprocessor(features), training=False)}

    def score_examples(serialized: Any) -> dict[str, Any]:
        parsed = tf.io.parse_example(serialized, parse_spec)
        lists = examples_as_lists(parsed, spec, list_size)
        if preprocessor.include_mask:  # one real entry per list
            lists[MASK_KEY] = tf.one_hot(tf.zeros_like(serialized, tf.int32), list_size)
        return {"scores": model(preprocessor(lists), training=False)[:, 0]}

    signature = [tf.TensorSpec([None], tf.string, name="serialized")]
    archive.add_endpoint(ELWC_SIGNATURE, score_elwc, input_signature=signature)
    archive.add_endpoint(EXAMPLE_SIGNATURE, score_examples, input_signature=signature)
    archive.write_out(path, verbose=False)
    return path
