"""SavedModel export of a model trained on the JAX backend (same signatures as :mod:`.export`).

Under ``KERAS_BACKEND=jax`` Keras' ``ExportArchive`` turns an endpoint into TensorFlow with
``jax2tf``, which accepts numeric tensors only: the string parsing and the lookups of the
serving functions cannot go through it. So the export has two layers:

1. the model alone (preprocessed features -> ``[batch, L]`` scores) becomes a TensorFlow
   function through ``jax2tf`` (``model.stateless_call`` converted with native
   serialization; the weights are stored as TF variables; the batch axis ``b`` and the list
   axis ``l`` of the example features and the mask are polymorphic, so lists of any length
   are scored, as on TensorFlow);
2. ``serving_default`` (serialized ELWC) and ``score_examples`` (serialized tf.Example) are
   plain TensorFlow functions: the ELWC reader / ``tf.io.parse_example``, the preprocessing
   layers (which run on TensorFlow in any Keras backend, as they do in ``tf.data``), then the
   converted model.

The preprocessing layers are tracked, so their vocabulary files are copied into ``assets/``;
the SavedModel loads with ``tf.saved_model.load`` in a process that has no JAX at all (the
converted model is an ``XlaCallModule`` op, part of TensorFlow).

Example:
    >>> path = export_jax_ranker(model, preprocessor, "/tmp/ranker", parse_fn=parse,
    ...                          feature_spec=ds.element_spec[0])         # doctest: +SKIP
    >>> tf.saved_model.load(path).signatures["serving_default"]           # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import keras
import tensorflow as tf

from beam_prep.ranking.train.export import (
    ELWC_SIGNATURE,
    EXAMPLE_SIGNATURE,
    example_inputs,
    example_parse_spec,
    serving_outputs,
)
from beam_prep.ranking.train.preprocessor import Preprocessor


def feature_signature(element_spec: Mapping[str, Any], list_features: Collection[str] = ()
                      ) -> dict[str, tf.TensorSpec]:
    """The preprocessed features' specs with a free batch axis (the converted model's input);
    the list axis (axis 1) of ``list_features`` is free too."""
    out = {}
    for name, spec in element_spec.items():
        rest = list(spec.shape[1:])
        if name in list_features and rest:
            rest[0] = None
        out[name] = tf.TensorSpec([None, *rest], spec.dtype, name=name)
    return out


def tf_resources(layer: keras.layers.Layer) -> list[Any]:
    """TensorFlow trackables (lookup tables) held by ``layer`` and its sublayers.

    Under the TensorFlow backend a Keras layer is itself a TF trackable and its tables are
    saved with it; under JAX it is not, so each table is tracked on its own (else the
    SavedModel refuses the functions that use it, and the vocabulary is not an asset).
    """
    trackable = tf.__internal__.tracking.Trackable
    found: list[Any] = []
    for sub in layer._flatten_layers(include_self=True):  # noqa: SLF001 (Keras' own walk)
        for value in vars(sub).values():
            if isinstance(value, trackable) and not isinstance(value, keras.layers.Layer):
                if all(value is not f for f in found):
                    found.append(value)
    return found


def _tf_variable(v: Any, prefix: str) -> tf.Variable:
    import numpy as np

    return tf.Variable(np.asarray(v.value), trainable=False, name=f"{prefix}/{v.path}".replace(
        ":", "_"))


def convert_model(model: keras.Model, signature: Mapping[str, tf.TensorSpec]) -> Any:
    """The model as a TF function of TF variables (``jax2tf``), free axes polymorphic.

    The batch axis is ``b``; a free axis 1 (``None`` in ``signature``: the list axis) is
    ``l``, shared by all features (they come from the same lists).

    Returns:
        ``(fn, variables)``: ``fn(features) -> scores`` and the ``tf.Variable`` list it reads
        (keep them on the saved object).
    """
    from jax.experimental import jax2tf

    trainable = [_tf_variable(v, "trainable") for v in model.trainable_variables]
    frozen = [_tf_variable(v, "non_trainable") for v in model.non_trainable_variables]

    def stateless(tv: Any, ntv: Any, features: Any) -> Any:
        scores, _ = model.stateless_call(tv, ntv, features, training=False)
        return scores

    def poly(v: Any) -> str:
        return "(" + ", ".join(str(d) for d in v.shape) + ")"

    def poly_input(spec: tf.TensorSpec) -> str:
        dims = ["b", *("l" if d is None else str(d) for d in spec.shape[1:])]
        return "(" + ", ".join(dims) + ")"

    shapes = [[poly(v) for v in trainable], [poly(v) for v in frozen],
              {k: poly_input(s) for k, s in signature.items()}]
    converted = jax2tf.convert(stateless, polymorphic_shapes=shapes, with_gradient=False)

    def fn(features: Mapping[str, Any]) -> Any:
        return converted(list(trainable), list(frozen), dict(features))

    return fn, trainable + frozen


def export_jax_ranker(model: keras.Model, preprocessor: Preprocessor, path: str, *,
                      parse_fn: Callable[[Any], tuple[dict[str, Any], Any]],
                      feature_spec: Mapping[str, Any]) -> str:
    """Writes the SavedModel at ``path`` (signatures of :mod:`.export`); returns ``path``.

    Args:
        model: Trained model on the JAX backend (preprocessed features -> ``[B, L]``).
        preprocessor: The training preprocessor (its tables are tracked: vocabularies become
            assets).
        path: Output directory.
        parse_fn: Batch ELWC parser, serialized ``[B]`` -> (features, labels), keeping every
            document (``ElwcParser.full_lists``).
        feature_spec: Element spec of the preprocessed features (the dataset's
            ``element_spec[0]``): the converted model's input signature.
    """
    spec = preprocessor.spec
    pre = preprocessor.with_list_size(None)  # lists of any length
    parse_spec = example_parse_spec(spec)
    signature = feature_signature(feature_spec, pre.list_features)
    score, variables = convert_model(model, signature)
    root = tf.Module()
    root.model_variables = variables
    root.tables = [r for layer in preprocessor.layers.values()
                   if isinstance(layer, keras.layers.Layer) for r in tf_resources(layer)]
    serialized = [tf.TensorSpec([None], tf.string, name="serialized")]

    def model_inputs(features: Mapping[str, Any]) -> dict[str, Any]:
        out = pre(features)
        return {k: tf.cast(out[k], signature[k].dtype) for k in signature}

    @tf.function(input_signature=serialized, autograph=False)
    def score_elwc(serialized: Any) -> dict[str, Any]:
        features, _ = parse_fn(serialized)
        return serving_outputs(score(model_inputs(features)), features)

    @tf.function(input_signature=serialized, autograph=False)
    def score_examples(serialized: Any) -> dict[str, Any]:
        lists = example_inputs(serialized, spec, parse_spec, include_mask=pre.include_mask)
        return {"scores": score(model_inputs(lists))[:, 0]}

    root.score_elwc, root.score_examples = score_elwc, score_examples
    tf.saved_model.save(root, path, signatures={ELWC_SIGNATURE: score_elwc,
                                                EXAMPLE_SIGNATURE: score_examples})
    return path
