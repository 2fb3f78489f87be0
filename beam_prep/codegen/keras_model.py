"""``keras.Model`` over a dict of raw inputs whose keys are not all their tensors' names.

The raw inputs are keyed by data column; a column that is no valid Keras / SavedModel name
gets another ``keras.Input`` name (:func:`beam_prep.input_names.input_name`). Keras 3 warns
in ``Model.__init__`` when a dict key differs from its tensor's name ("all keys in the dict
must match the names of the corresponding tensors"), though it matches a dict by its keys.
:func:`keras_model` drops exactly that warning while the model is built. ``beam-prep
generate`` copies this definition into a module with a renamed input
(:func:`beam_prep.codegen.layer_source.layer_source`); the ranking model imports it.
Imports Keras (import lazily).

Example:
    >>> x = keras.Input((1,), name="price_usd_82c96e70")               # doctest: +SKIP
    >>> keras_model({"price/usd": x}, x, "m").name                     # doctest: +SKIP
    'm'
"""

from __future__ import annotations

import warnings
from typing import Any

import keras


def keras_model(inputs: dict[str, Any], outputs: Any, name: str) -> keras.Model:
    """``keras.Model(inputs, outputs, name=name)`` without Keras' dict-key warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="When providing `inputs` as a dict",
                                category=UserWarning)
        return keras.Model(inputs, outputs, name=name)
