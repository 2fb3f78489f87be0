"""Per-feature preprocessing layers of an artifact directory, for the ranking Preprocessor.

The ranking reader gives one tensor per ELWC feature; the Preprocessor applies one layer (or
callable) per feature name. A feature of the artifacts may need several layers in a row
(``FillMissing`` then a lookup; a lookup then ``CategoryEncoding``): :class:`FeatureChain`
applies them in order and shows the attributes of its id-emitting layer (``output_mode``,
``vocabulary_size()``, ``num_bins``, ``output_sequence_length``) that the Preprocessor and
the embedding sizes read. A one-layer chain is passed as the layer itself.

ELWC float features are float32 on the wire: a numeric feature's layers take float32 (the
generated module's float64 raw *column* is cast to float32 before the same layers), so the
values are the same. Derived features (``expr``) have no single ELWC feature: not offered.
Nor are ``per_key`` features (their layer also reads the key column, which the ranking
reader does not pair with the value): they are read as plain floats, with a warning.

Example:
    >>> layers = artifact_layers("artifacts/", {"country", "price"})  # doctest: +SKIP
    >>> layers["country"](tf.constant([["DE"]]))                       # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import keras

_FORWARDED = ("output_mode", "vocabulary_size", "num_bins", "output_sequence_length")


class FeatureChain(keras.layers.Layer):
    """Applies a feature's layers in order; forwards its id-emitting layer's attributes.

    Args:
        layers: The layers of one encoded output, in order (``build_feature_layers``).
    """

    def __init__(self, layers: Iterable[Any], **kwargs: Any) -> None:
        super().__init__(trainable=False, autocast=False, **kwargs)
        self.chain = list(layers)
        head = [layer for layer in self.chain if hasattr(layer, "output_mode")]
        self._head = head[-1] if head else self.chain[-1]
        self.built = True  # its layers are built; ExportArchive.track needs built layers

    def __getattr__(self, name: str) -> Any:
        if name in _FORWARDED and "_head" in self.__dict__:
            return getattr(self.__dict__["_head"], name)
        raise AttributeError(name)

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        # Each layer does its own input handling (ragged tensors included).
        for layer in self.chain:
            x = layer(x)
        return x


def artifact_layers(path: str, names: Iterable[str]) -> dict[str, Any]:
    """Feature name -> its layer (or :class:`FeatureChain`), for plain features in ``names``."""
    from beam_prep.codegen.runtime import layers_from_artifacts

    pp = layers_from_artifacts(path)
    out: dict[str, Any] = {}
    for fp in pp.plan.features:
        if fp.name not in names or fp.derived is not None or fp.crossed:
            continue
        if fp.keyed is not None:
            warnings.warn(
                f"Feature {fp.name!r} of {path} uses per_key: its layer also needs the key "
                "column, which the ranking reader does not pair with the value, so it is "
                "read as a plain float (no scaling). Fix: give the ranking features a spec "
                "without per_key (e.g. scaling: z_score), or scale them in make-elwc's "
                "input.", stacklevel=2)
            continue
        chain = pp.build_feature_layers(fp.name)[fp.name]
        if chain:
            out[fp.name] = chain[0] if len(chain) == 1 else FeatureChain(
                chain, name=f"{fp.name}_chain")
    return out


def layers_and_rows(path: str | None, spec: Any) -> tuple[dict[str, Any], dict[str, int]]:
    """Layers and embedding-table rows of the ELWC spec's features found in the artifacts.

    Args:
        path: The artifact directory (``data.artifacts``), or None/"" for none.
        spec: The ELWC feature spec (``ElwcFeatureSpec``: ``context`` and ``example``).

    Returns:
        ``({feature: layer}, {feature: table rows})`` of the id features among them.

    Example:
        >>> layers, rows = layers_and_rows("artifacts/", spec)  # doctest: +SKIP
    """
    if not path:
        return {}, {}
    from beam_prep.io.contract.artifacts import Artifacts
    from beam_prep.ranking.train.embeddings import table_rows

    art = Artifacts(path)
    names = {f.name for f in (*spec.context, *spec.example)} & set(art.feature_names)
    layers = artifact_layers(path, names)
    rows = {n: table_rows(art, n) for n in names
            if art.feature(n).kind in ("string", "integer", "text", "hashed")}
    return layers, rows
