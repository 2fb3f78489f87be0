"""The fused piecewise-linear embedding (bin index + one gather) equals the old formulation.

Oracle: ``PiecewiseLinear(edges)`` followed by the unfused ``FeatureEmbedding`` (the
``[N, D, T]`` encoding times a per-value kernel) with the same weights: values and the
gradients of the weights, over values below, inside and above the edges, on edges with
repeated values (step bins), a single bin, and NaN.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from beam_prep.codegen.numeric_layers import PiecewiseLinear
from beam_prep.ranking.train.hparams import ModelHparams
from beam_prep.ranking.train.scorers import input_transforms
from beam_prep.ranking.train.scorers.feature_embedding import FeatureEmbedding

RNG = np.random.default_rng(11)

EDGES = {
    "quantiles": [[0.0, 0.5, 1.0, 2.0, 4.0], [-3.0, -1.0, 0.0, 1.0, 3.0]],
    "repeated": [[0.0, 1.0, 1.0, 1.0, 2.0], [0.0, 0.0, 0.5, 2.0, 2.0]],
    "one_bin": [[0.0, 1.0], [-1.0, 1.0]],
}


def _pair(edges, dim=3):
    fused = FeatureEmbedding(dim, edges=edges)
    old = FeatureEmbedding(dim)
    x = np.concatenate([RNG.uniform(-5, 6, size=(40, 2)),
                        np.array([[e[0][0], e[1][0]] for e in [edges]] * 2),  # on edges
                        np.array([[r[i], r[i]] for r in [edges[0]]
                                  for i in range(len(edges[0]))])]).astype("float32")
    x = x.reshape(-1, 1, 2)                                       # [N, L=1, D=2]
    fused(x)
    old(PiecewiseLinear(edges)(x))
    kernel = RNG.normal(size=fused.kernel.shape).astype("float32")
    bias = RNG.normal(size=fused.bias.shape).astype("float32")
    for layer in (fused, old):
        layer.kernel.assign(kernel)
        layer.bias.assign(bias)
    return fused, old, x


@pytest.mark.parametrize("kind", sorted(EDGES))
def test_fused_values_equal_encoding_then_embedding(kind):
    fused, old, x = _pair(EDGES[kind])
    want = np.asarray(old(PiecewiseLinear(EDGES[kind])(x)))
    got = np.asarray(fused(x))
    assert got.shape == want.shape == (x.shape[0], 1, 2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert fused.compute_output_shape(x.shape) == want.shape


def test_fused_linear_part_and_nan_match():
    edges = EDGES["quantiles"]
    fused = FeatureEmbedding(2, edges=edges, activation="linear")
    old = FeatureEmbedding(2, activation="linear")
    x = np.array([[[-9.0, 0.25]], [[np.nan, 7.0]]], "float32")
    fused(x)
    old(PiecewiseLinear(edges)(x))
    for layer in (fused, old):  # same weights; linear: negative parts are compared too
        layer.kernel.assign(np.arange(16, dtype="float32").reshape(2, 4, 2) / 7.0 - 1.0)
        layer.bias.assign(np.full((2, 2), 0.5, "float32"))
    want = np.asarray(old(PiecewiseLinear(edges)(x)))
    got = np.asarray(fused(x))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.isnan(got[1, 0, 0]).all() and np.isnan(want[1, 0, 0]).all()


def test_fused_gradients_equal():
    if keras.backend.backend() != "tensorflow":
        pytest.skip("gradient check written with tf.GradientTape")
    import tensorflow as tf

    fused, old, x = _pair(EDGES["repeated"])
    enc = PiecewiseLinear(EDGES["repeated"])(x)
    grads = []
    for layer, inp in ((fused, x), (old, enc)):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(inp) ** 2)
        grads.append([np.asarray(g) for g in tape.gradient(loss, layer.trainable_weights)])
    for g_fused, g_old in zip(*grads):
        np.testing.assert_allclose(g_fused, g_old, rtol=1e-4, atol=1e-4)


def test_input_transforms_fuse_piecewise_linear_with_embedding():
    f = RNG.lognormal(size=(2, 4, 3)).astype("float32")
    edges = np.quantile(f.reshape(-1, 3), np.linspace(0, 1, 5), axis=0).T
    hp = ModelHparams(input_transform="piecewise_linear", piecewise_bins=4,
                      feature_embedding_dim=6)
    layer = input_transforms(hp, ["f"], {"f": {"edges": edges}})["f"]
    assert isinstance(layer, FeatureEmbedding) and layer.encoding is not None
    assert tuple(np.shape(layer(f))) == (2, 4, 3, 6)
    # its encoding is never called but counts as built: an unbuilt sublayer made Keras fit
    # rebuild the model on the first training batch (JAX DeviceLoop: on the index batch)
    assert layer.encoding.built
    again = FeatureEmbedding.from_config(layer.get_config())
    assert again.encoding.edges == layer.encoding.edges


def _ranker(names, stats, hp, *, joint):
    """The ranking model over example features ``names`` with per-feature or joint
    transforms (the builder as the launcher calls it)."""
    from beam_prep.ranking.train.model import ModelInputs, RankingModelBuilder

    inputs = ModelInputs(context_names=(), example_names=tuple(names), list_size=5)
    transforms = input_transforms(hp, names, stats, list_features=names if joint else ())
    spec = {n: np.zeros((2, 5, stats[n]["edges"].shape[0]), "float32") for n in names}
    keras.utils.set_random_seed(0)
    return RankingModelBuilder(inputs, hp, transforms=transforms).build(spec)


def test_joint_embedding_scores_as_one_embedding_per_feature():
    """Old computation: one FeatureEmbedding (and FeatureDropout) per feature; new: one
    JointEmbedding for all list features. Same per-value weights -> same scores; dropout
    keeps or drops each feature of each list whole."""
    from beam_prep.ranking.train.scorers.feature_embedding import JointEmbedding

    widths = {"a": 1, "b": 2, "c": 1}
    x = {n: RNG.lognormal(size=(3, 5, w)).astype("float32") for n, w in widths.items()}
    stats = {n: {"edges": np.quantile(v.reshape(-1, v.shape[-1]), np.linspace(0, 1, 5),
                                      axis=0).T} for n, v in x.items()}
    hp = ModelHparams(input_transform="piecewise_linear", piecewise_bins=4,
                      feature_embedding_dim=3, feature_dropout=0.5, hidden_sizes=(4,))
    old = _ranker(list(widths), stats, hp, joint=False)
    new = _ranker(list(widths), stats, hp, joint=True)
    assert any(isinstance(t, JointEmbedding)
               for t in input_transforms(hp, list(widths), stats,
                                         list_features=list(widths)).values())
    per_feature = [old.get_layer(f"{n}_feature_embedding") for n in widths]
    joint = new.get_layer("feature_embedding")
    kernel = RNG.normal(size=joint.kernel.shape).astype("float32")
    bias = RNG.normal(size=joint.bias.shape).astype("float32")
    joint.kernel.assign(kernel)
    joint.bias.assign(bias)
    start = 0
    for layer, w in zip(per_feature, widths.values()):  # value d of the joint = feature's
        layer.kernel.assign(kernel[start:start + w])
        layer.bias.assign(bias[start:start + w])
        start += w
    scorer = [v for v in old.weights if "scorer" in v.path]
    for a, b in zip(scorer, [v for v in new.weights if "scorer" in v.path]):
        b.assign(a.numpy())
    np.testing.assert_allclose(np.asarray(new(x)), np.asarray(old(x)), rtol=1e-5, atol=1e-5)
    # Dropout (training): every feature of every list kept x2 or zeroed, values together.
    emb = np.asarray(joint(np.concatenate(list(x.values()), -1)))           # [3, 5, 4, 3]
    dropped = np.asarray(new.get_layer("feature_dropout")(emb, training=True))
    kept = []
    for i in range(3):
        for lo, hi in ((0, 1), (1, 3), (3, 4)):
            part, ref = dropped[i, :, lo:hi], emb[i, :, lo:hi]
            assert np.allclose(part, 0.0) or np.allclose(part, 2.0 * ref, rtol=1e-5)
            kept.append(not np.allclose(part, 0.0))
    assert 0 < sum(kept) < len(kept)
