"""Training on ELWC written by ``make-elwc --artifacts`` (encoded ids and values).

Such a ``feature_spec.json`` has an ``encoded`` section: the features that hold what the
artifacts' layers output, the raw feature each was made from, and the artifacts'
fingerprint. The launcher then

* checks that ``data.artifacts`` is that artifact directory (same manifest fingerprint;
  anything else is a :class:`~beam_prep.errors.SpecError` naming both fingerprints), so ids
  of one vocabulary are never read with another;
* trains without lookups: each encoded feature gets a :class:`EncodedInput` (identity that
  shows the real layer's ``output_mode``, ``vocabulary_size()``, ``num_bins``,
  ``output_sequence_length``), so the Preprocessor pads, shifts and sizes the embedding tables
  exactly as it would behind the real layers (table rows from the artifacts);
* exports with the raw features (:func:`serving_inputs`): the serving functions parse the
  raw feature spec (:meth:`~beam_prep.ranking.feature_spec.ElwcFeatureSpec.raw`) and run the
  real preprocessing layers in front of the trained model, so serving is unchanged.

Example:
    >>> layers, rows = input_layers("artifacts/", spec, None, None)   # doctest: +SKIP
    >>> preprocessor, parse = serving_inputs(launcher)                # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beam_prep.errors import SpecError
from beam_prep.ranking.train.artifact_layers import layers_and_rows

_SHOWN = ("output_mode", "vocabulary_size", "num_bins", "output_sequence_length")


class EncodedInput:
    """Identity for a feature already encoded; shows the real layer's id attributes.

    Args:
        layer: The preprocessing layer (or ``FeatureChain``) that encoded the feature.
    """

    def __init__(self, layer: Any) -> None:
        self._shown = {k: getattr(layer, k) for k in _SHOWN if hasattr(layer, k)}

    def __getattr__(self, name: str) -> Any:
        shown = self.__dict__.get("_shown", {})
        if name in shown:
            return shown[name]
        raise AttributeError(name)

    def __call__(self, x: Any) -> Any:
        return x


def check_encoding(spec: Any, artifacts: str | None) -> None:
    """SpecError unless ``artifacts`` is the directory the encoded features come from.

    Args:
        spec: The ``ElwcFeatureSpec`` of the training data.
        artifacts: ``data.artifacts``.
    """
    if spec.encoded is None:
        return
    want = spec.encoded.artifacts_fingerprint
    names = sorted(spec.encoded.names)
    if not artifacts:
        raise SpecError(
            f"The ELWC features {names} were written encoded by `make-elwc --artifacts` "
            f"(artifacts fingerprint {want[:12]}), but `data.artifacts` is not set. Received: "
            "artifacts=None. Fix: set `data.artifacts` to that artifact directory (it sizes "
            "the embeddings and gives the export its raw-feature layers).")
    from beam_prep.io.contract.artifacts import Artifacts

    got = Artifacts(artifacts).fingerprint
    if got != want:
        raise SpecError(
            f"`data.artifacts` has fingerprint {got[:12]}, but the ELWC features {names} were "
            f"encoded with artifacts of fingerprint {want[:12]} (feature_spec.json `encoded`). "
            f"Received: artifacts={artifacts!r}. Fix: point `data.artifacts` at the directory "
            "make-elwc used, or re-run `make-elwc --artifacts` with this one.")


def input_layers(artifacts: str | None, spec: Any, layers: Mapping[str, Any] | None,
                 vocab_rows: Mapping[str, int] | None
                 ) -> tuple[Mapping[str, Any], Mapping[str, int]]:
    """The launcher's preprocessing layers and table rows (given ones win).

    For raw ELWC: the artifacts' layers (:func:`.artifact_layers.layers_and_rows`). For
    encoded ELWC: :class:`EncodedInput` for each encoded feature after :func:`check_encoding`.

    Raises:
        SpecError: Encoded ELWC with other artifacts (or none), or with ``layers`` given for
            an encoded feature (they would be applied to ids).
    """
    check_encoding(spec, artifacts)
    if spec.encoded is None:
        auto_layers, auto_rows = layers_and_rows(artifacts, spec) \
            if layers is None or vocab_rows is None else ({}, {})
    else:
        # EncodedInput identities are this function's own output (an ensemble's members
        # reuse the launcher's layers): not user layers that would be applied to ids.
        clash = sorted(n for n in set(layers or {}) & spec.encoded.names
                       if not isinstance(layers[n], EncodedInput))
        if clash:
            raise SpecError(f"Layers were passed for {clash}, which the ELWC files hold "
                            "encoded already (make-elwc --artifacts). Fix: pass no layer for "
                            "them, or train on ELWC written without --artifacts.")
        real, auto_rows = layers_and_rows(artifacts, spec.raw())
        missing = sorted(spec.encoded.names - set(real))
        if missing:
            raise SpecError(f"`data.artifacts` has no plain feature for the encoded ELWC "
                            f"feature(s) {missing}. Fix: re-run make-elwc --artifacts.")
        auto_layers = {n: EncodedInput(real[n]) for n in spec.encoded.names}
    if layers is not None:  # given layers win (kept beside the encoded inputs)
        auto_layers = {**auto_layers, **layers} if spec.encoded is not None else layers
    return auto_layers, (auto_rows if vocab_rows is None else vocab_rows)


def serving_parser(parse: Any) -> Any:
    """The parser the export puts in front of the model: the reader's keeps every document
    (``ElwcParser.full_lists``); a custom ``parse_fn`` is used as given."""
    from beam_prep.ranking.train.reader import ElwcParser

    return parse.full_lists() if isinstance(parse, ElwcParser) else parse


def serving_inputs(launcher: Any) -> tuple[Any, Any]:
    """``(preprocessor, parse_fn)`` the export puts in front of the model.

    The launcher's own for raw ELWC; for encoded ELWC a Preprocessor of the raw spec with the
    artifacts' real layers and the reader's parser for the raw spec (same model inputs). The
    parser keeps every document of a list (:func:`serving_parser`).
    """
    spec = launcher.spec
    if spec.encoded is None:
        return launcher.preprocessor, serving_parser(launcher.datasets.parse_fn)
    import tensorflow as tf

    from beam_prep.ranking.train.preprocessor import Preprocessor
    from beam_prep.ranking.train.reader import ElwcParser

    raw = spec.raw()
    data = launcher.hp.data
    layers, rows = layers_and_rows(data.artifacts, raw)
    trained = launcher.preprocessor
    extra = {k: v for k, v in trained.layers.items() if k not in spec.encoded.names}
    pre = Preprocessor(raw, {**extra, **layers}, list_size=trained.list_size,
                       sequence_length=trained.sequence_length, vocab_rows=rows,
                       include_mask=trained.include_mask)
    parse = ElwcParser(raw, None, mask_dtype=tf.int32)  # the launcher's for the raw spec, whole
    # Built on one-entry lists: a layer whose state takes the input's last axis (Normalization
    # with axis=-1 on a [B, L] float) then broadcasts over lists of any length L.
    build_layers(pre, ElwcParser(raw, 1, mask_dtype=tf.int32)(tf.constant([b""]))[0])
    return pre, parse


def build_layers(pre: Any, features: Mapping[str, Any]) -> None:
    """Builds ``pre``'s Keras layers on eager ``features`` (the export tracks built layers).

    Dense inputs first, eagerly, the layers running on TensorFlow whatever the Keras backend
    (the scope Keras' FeatureSpace uses), so state made by ``build`` (``Normalization``'s
    moments) is eager and readable from any later graph; each layer is built with its input's
    shape (on JAX a call in that scope does not build ``Normalization``). Then the whole
    preprocessor once in a graph, as in tf.data (ragged lists; lookups keep their tables).

    Raises:
        SpecError: Some feature's layers cannot run in a TensorFlow graph on this Keras
            backend (on JAX: plain Keras layers such as ``FillMissing``, ``ListEncoding``).
    """
    import keras
    import tensorflow as tf
    from keras.src.utils.backend_utils import TFGraphScope

    failed = []
    for name, layer in pre.layers.items():
        try:
            with TFGraphScope():
                x = features[name]
                for sub in getattr(layer, "chain", [layer]):
                    if isinstance(x, tf.RaggedTensor):
                        break
                    if not getattr(sub, "built", True):
                        sub.build(tuple(x.shape))
                    x = sub(x)
            tf.function(layer, autograph=False)(features[name])
        except (TypeError, ValueError, NotImplementedError, tf.errors.OpError):
            failed.append(name)
    if failed:
        raise SpecError(
            f"The export cannot run the preprocessing layers of feature(s) {failed} on the "
            f"{keras.backend.backend()!r} Keras backend (plain Keras layers such as "
            "FillMissing for default_value and ListEncoding for list features do not run in a "
            "TensorFlow graph under JAX). Fix: train with `distribution.backend: tensorflow`, "
            "or leave those features out of the ELWC (--example_columns/--context_columns).")
    tf.function(pre.__call__, autograph=False)(dict(features))
