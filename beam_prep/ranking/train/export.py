"""SavedModel export with two serving signatures; raw features in, preprocessing inside.

=====================  =======================================  ===============================
signature              input                                    outputs
=====================  =======================================  ===============================
``serving_default``    ``serialized``: string ``[batch]`` of    ``scores``: float32
                       serialized ``ExampleListWithContext``    ``[batch, L]``;
                       (lists of any length)                    ``num_documents``: int32
                                                                ``[batch]``
``score_examples``     ``serialized``: string ``[batch]`` of    ``scores``: float32
                       serialized ``tf.Example`` (context       ``[batch]``
                       features included in each Example)
=====================  =======================================  ===============================

**Every document is scored.** ``serving_default`` parses the lists whole, whatever their
length (1 document or 1,000, longer than the training ``data.list_size`` too): ``L`` is the
longest list of the request batch and ``scores[i, j]`` is the score of document ``j`` of list
``i`` (file order). ``num_documents[i]`` is the length of list ``i``; the entries
``scores[i, num_documents[i]:]`` are padding and hold :data:`PADDING_SCORE` (float32's lowest
finite value, so a descending sort puts them last and a softmax gives them 0): drop them with
``scores[i, :num_documents[i]]``. The model reads the list length from its inputs (the
scorers and attention mask padding), so a document's score does not depend on the padding or,
for ``dnn``, on the other documents; ``dasalc`` attends over the real documents of the list.

**Default = ELWC.** TF Ranking makes the tf.Example regression signature its default; we make
the listwise one the default because it is what the model was trained on (a list with its
context, scores comparable within the list) and what a ranking server sends; the per-document
signature stays available for callers that score documents one at a time.

Each tf.Example is scored as a one-document list (the ``dnn`` scorer applies the same network
to every entry, so the score equals that document's score inside any list; ``dasalc`` sees no
other document then: prefer ``serving_default``). Vocabulary files of lookup layers are copied
into the SavedModel's ``assets/``: the export keeps working after the artifact directory is
deleted.

Example:
    >>> path = export_ranker(model, preprocessor, "/tmp/ranker", parse_fn=parse)  # doctest: +SKIP
    >>> serve = tf.saved_model.load(path).signatures["serving_default"]      # doctest: +SKIP
    >>> out = serve(serialized=elwc_batch)                                     # doctest: +SKIP
    >>> n = out["num_documents"].numpy()                                       # doctest: +SKIP
    >>> [s[:k] for s, k in zip(out["scores"].numpy(), n)]  # no padding      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from beam_prep.ranking.train.mask import MASK_KEY
from beam_prep.ranking.train.preprocessor import Preprocessor
from beam_prep.ranking.train.reader import feature_parse_spec

ELWC_SIGNATURE = "serving_default"
EXAMPLE_SIGNATURE = "score_examples"

PADDING_SCORE = float(np.finfo(np.float32).min)
"""``serving_default``'s score at padding positions (past a list's ``num_documents``)."""


def example_parse_spec(spec: Any) -> dict[str, Any]:
    """``tf.io.parse_example`` features for one tf.Example holding context + example features."""
    return feature_parse_spec((*spec.context, *spec.example))


def examples_as_lists(features: dict[str, Any], spec: Any) -> dict[str, Any]:
    """Parsed tf.Examples ``[N, ...]`` -> one-document lists (example features ``[N, 1, ...]``)."""
    out = dict(features)
    for info in spec.example:
        x = features[info.name]
        if isinstance(x, tf.RaggedTensor):
            out[info.name] = tf.RaggedTensor.from_uniform_row_length(x, 1)
        else:
            out[info.name] = tf.expand_dims(x, 1)
    return out


def example_inputs(serialized: Any, spec: Any, parse_spec: dict[str, Any], *,
                   include_mask: bool) -> dict[str, Any]:
    """``score_examples``' parsing: serialized tf.Examples ``[N]`` -> one-document lists.

    Args:
        serialized: String ``[N]`` of serialized tf.Example.
        spec: The raw ``ElwcFeatureSpec``.
        parse_spec: :func:`example_parse_spec` of ``spec``.
        include_mask: Add the list mask (``"__mask__"``, one real entry per list).
    """
    lists = examples_as_lists(tf.io.parse_example(serialized, parse_spec), spec)
    if include_mask:
        lists[MASK_KEY] = tf.ones_like(serialized, tf.float32)[:, None]
    return lists


def serving_outputs(scores: Any, features: dict[str, Any]) -> dict[str, Any]:
    """``serving_default``'s outputs: ``scores`` (padding = :data:`PADDING_SCORE`) and
    ``num_documents``, from the model's ``[B, L]`` scores and the parsed features' mask."""
    scores = tf.convert_to_tensor(scores, tf.float32)
    mask = features.get(MASK_KEY)
    mask = tf.ones_like(scores, tf.bool) if mask is None else tf.cast(mask, tf.bool)
    return {"scores": tf.where(mask, scores, tf.constant(PADDING_SCORE, tf.float32)),
            "num_documents": tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)}


def export_ranker(model: keras.Model, preprocessor: Preprocessor, path: str, *,
                  parse_fn: Callable[[Any], tuple[dict[str, Any], Any]]) -> str:
    """Writes the SavedModel at ``path`` (signatures in the module docstring); returns ``path``.

    Args:
        model: Trained model (preprocessed features -> ``[B, L]`` scores).
        preprocessor: The preprocessor used in training (its layers are tracked, so their
            vocabularies become assets).
        path: Output directory.
        parse_fn: Batch ELWC parser, serialized ``[B]`` -> (features, labels); it must keep
            every document (the reader's with ``list_size=None``: ``ElwcParser.full_lists``).
    """
    spec = preprocessor.spec
    pre = preprocessor.with_list_size(None)  # lists of any length
    parse_spec = example_parse_spec(spec)
    archive = keras.export.ExportArchive()
    archive.track(model)
    for layer in preprocessor.layers.values():
        if isinstance(layer, keras.layers.Layer):
            archive.track(layer)

    def score_elwc(serialized: Any) -> dict[str, Any]:
        features, _ = parse_fn(serialized)
        return serving_outputs(model(pre(features), training=False), features)

    def score_examples(serialized: Any) -> dict[str, Any]:
        lists = example_inputs(serialized, spec, parse_spec, include_mask=pre.include_mask)
        return {"scores": model(pre(lists), training=False)[:, 0]}

    signature = [tf.TensorSpec([None], tf.string, name="serialized")]
    archive.add_endpoint(ELWC_SIGNATURE, score_elwc, input_signature=signature)
    archive.add_endpoint(EXAMPLE_SIGNATURE, score_examples, input_signature=signature)
    archive.write_out(path, verbose=False)
    return path
