"""DASALC scorer (Qin et al., ICLR 2021, "Are Neural Rankers still Outperformed by GBDTs?").

Per list ``[B, L, F]`` (features of every entry, the input transform already applied by the
model builder, e.g. ``sign(x) log1p(|x|)``):

1. **Input**: batch normalisation over the real entries (the mask keeps padding out of the
   batch statistics), then Gaussian noise (``model.input_noise``, training only).
2. **DNN**: the per-entry feed-forward network of ``model.hidden_sizes`` (Dense, batch
   norm over real entries, activation, dropout): ``h`` ``[B, L, H]``.
3. **Listwise context**: the normalised inputs projected to ``attention_dim`` and
   ``attention_layers`` Transformer encoder blocks (multi-head self-attention over the list's
   entries with ``attention_heads`` heads, residual + layer norm, feed-forward, residual +
   layer norm); each entry attends to the **real entries only** (key mask): ``a``.
4. **Latent cross**: ``(1 + W a) * h``, then a Dense to one logit per entry.

There is no positional input, so the scorer is permutation-equivariant: permuting a list's
entries permutes its scores, and padding entries never change the scores of real entries (nor
does the padded length: the scorer takes lists of any length ``L``, e.g. 1,000 documents at
serving after training on ``list_size`` 32).
The mask comes from the preprocessor (``Preprocessor(include_mask=True)``, key
``"__mask__"``); the launcher turns it on for this scorer. Every layer uses ``keras.ops``.

Example:
    >>> scorer = DasalcScorer(context_names=(), example_names=("f",), id_rows={},
    ...     sequence_features=(), list_size=4, hparams=ModelHparams(scorer="dasalc"))
    >>> scorer({"f": np.ones((2, 4, 3)), "__mask__": np.ones((2, 4))}).shape
    (2, 4)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import numpy as np  # noqa: F401  (doctest)
from keras import ops

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import ModelHparams  # noqa: F401  (doctest)
from beam_prep.ranking.train.mask import MASK_KEY
from beam_prep.ranking.train.model import FeedForwardScorer


@keras.saving.register_keras_serializable(package="beam_prep")
class DasalcScorer(FeedForwardScorer):
    """DNN + listwise self-attention + latent cross (arguments: :class:`FeedForwardScorer`)."""

    def make_network(self, hparams: Any) -> None:
        """Creates this scorer's layers only (none of the feed-forward scorer's)."""
        hp = hparams
        self.input_bn = keras.layers.BatchNormalization(name="dasalc_input_bn")
        self.noise = (keras.layers.GaussianNoise(hp.input_noise, seed=0, name="dasalc_noise")
                      if hp.input_noise > 0 else None)
        self.dnn = []
        for i, units in enumerate(hp.hidden_sizes):
            self.dnn.append((keras.layers.Dense(units, name=f"dasalc_dense_{i}"),
                             keras.layers.BatchNormalization(name=f"dasalc_bn_{i}"),
                             keras.layers.Activation(hp.activation, name=f"dasalc_act_{i}"),
                             keras.layers.Dropout(hp.dropout, seed=i, name=f"dasalc_drop_{i}")
                             if hp.dropout > 0 else None))
        d = hp.attention_dim
        self.project = keras.layers.Dense(d, name="dasalc_project")
        self.blocks = []
        for i in range(hp.attention_layers):
            self.blocks.append((
                keras.layers.MultiHeadAttention(hp.attention_heads, d // hp.attention_heads,
                                                name=f"dasalc_mha_{i}"),
                keras.layers.LayerNormalization(name=f"dasalc_ln_a_{i}"),
                keras.layers.Dense(2 * d, activation=hp.activation, name=f"dasalc_ff1_{i}"),
                keras.layers.Dense(d, name=f"dasalc_ff2_{i}"),
                keras.layers.LayerNormalization(name=f"dasalc_ln_b_{i}")))
        self.cross = keras.layers.Dense(hp.hidden_sizes[-1], name="dasalc_cross")
        self.logit = keras.layers.Dense(1, name="dasalc_logit")

    def call(self, features: Mapping[str, Any], training: bool | None = None) -> Any:  # noqa: D102
        if MASK_KEY not in features:
            raise SpecError("The `dasalc` scorer needs the list mask (feature '__mask__'). "
                            "Build the Preprocessor with include_mask=True (the launcher "
                            "does so for `model.scorer: dasalc`).")
        x = ops.cast(self.entry_features(features), "float32")
        mask = ops.greater(ops.cast(features[MASK_KEY], x.dtype), 0.5)       # [B, L]
        x = self.input_bn(x, training=training, mask=mask)
        if self.noise is not None:
            x = self.noise(x, training=training)
        h = x
        for dense, bn, act, drop in self.dnn:
            h = act(bn(dense(h), training=training, mask=mask))
            if drop is not None:
                h = drop(h, training=training)
        a = self.project(x)
        # [B, L, L]: every query entry sees the real keys (L read from the input, not fixed).
        keys = ops.logical_and(ops.expand_dims(ops.ones_like(mask), 2), ops.expand_dims(mask, 1))
        for mha, ln_a, ff1, ff2, ln_b in self.blocks:
            a = ln_a(a + mha(a, a, attention_mask=keys, training=training))
            a = ln_b(a + ff2(ff1(a)))
        z = (1.0 + self.cross(a)) * h
        return ops.squeeze(self.logit(z), -1)
