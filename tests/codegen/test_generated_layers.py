"""Import-and-run tests of the generated module and the runtime twin (TensorFlow).

Expected values come from the Keras preprocessing guide (seed 000) or from Keras layers
adapted on the same data; never from the code under test.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import beam_prep  # noqa: E402
from beam_prep.codegen.render import generate  # noqa: E402
from beam_prep.io.contract.artifacts import canonical_json, manifest_fingerprint  # noqa: E402
from tests.codegen.artifact_fixtures import write_artifacts  # noqa: E402
from tests.codegen.conftest import ALL_KINDS_DATA, import_module_from  # noqa: E402

_COUNTER = [0]


def make_module(tmp_path, features, data, **kw):
    art = write_artifacts(str(tmp_path / "art"), {"features": features}, data, **kw)
    out = str(tmp_path / "pp.py")
    generate(art, out)
    _COUNTER[0] += 1
    return import_module_from(out, f"bp_generated_{_COUNTER[0]}"), art


def batch():
    """Raw inputs (data columns) of the all-kinds module: seen, unseen, missing, NaN."""
    return {
        "country": tf.constant([["US"], ["JP"], ["XX"], [""]]),
        "device_type": tf.constant([["phone"], ["tv"], ["watch"], [""]]),
        "rare": tf.constant([["x"], ["y"], ["new"], [""]]),
        "store_id": tf.constant([[10], [5], [99], [-1]], tf.int64),
        "title": tf.constant([["Red shoes"], ["blue hat, size 9!"], ["zzz"], [""]]),
        "review": tf.constant([["great fit"], ["price ok"], ["unseen words"], [""]]),
        "price": tf.constant([[9.5], [100.0], [np.nan], [-3.0]], tf.float64),
        "age": tf.constant([[30.0], [np.nan], [51.0], [0.0]], tf.float64),
        "user_id": tf.constant([["u1"], ["u2"], ["u999"], [""]]),
        "session": tf.constant([[1], [2], [3], [4]], tf.int64),
    }


def assert_same(a, b):
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)


def test_seed_string_lookup_example(tmp_path) -> None:
    # Counts make the vocabulary file a, b, c, d (count descending).
    pp, _ = make_module(tmp_path, [{"name": "letter", "kind": "string"}],
                        {"letter": list("aaaabbbccd")})
    (layer,) = pp.build_letter_layers()["letter"]
    out = layer(tf.constant([["a", "c", "d"], ["d", "z", "b"]]))
    assert out.numpy().tolist() == [[1, 3, 4], [4, 0, 2]]


def test_seed_one_hot_string_example(tmp_path) -> None:
    pp, _ = make_module(tmp_path, [{"name": "s", "kind": "string", "output_mode": "one_hot"}],
                        {"s": ["a", "b", "c", "b", "c", "a"]})
    out = pp.build_preprocessor()({"s": tf.constant([["a"], ["b"], ["c"], ["d"], ["e"], [""]])})
    assert out["s"].numpy().tolist() == [[0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0],
                                         [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]


def test_seed_one_hot_integer_example(tmp_path) -> None:
    pp, _ = make_module(tmp_path, [{"name": "i", "kind": "integer", "output_mode": "one_hot"}],
                        {"i": [10, 20, 20, 10, 30, 0]})
    out = pp.build_preprocessor()({"i": tf.constant([[10], [10], [20], [50], [60], [0]],
                                                    tf.int64)})
    assert out["i"].numpy().tolist() == [[0, 0, 1, 0, 0], [0, 0, 1, 0, 0], [0, 1, 0, 0, 0],
                                         [1, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 1]]


def test_seed_hashing_multi_hot_example(tmp_path) -> None:
    pp, _ = make_module(tmp_path, [{"name": "h", "kind": "hashed", "num_bins": 64,
                                    "salt": 1337, "dtype": "integer",
                                    "output_mode": "multi_hot"}], {})
    data = np.random.default_rng(0).integers(0, 100000, size=(10000, 1))
    out = pp.build_preprocessor()({"h": tf.constant(data, tf.int64)})["h"]
    assert out.shape == (10000, 64)
    ref = keras.layers.CategoryEncoding(num_tokens=64, output_mode="multi_hot")(
        keras.layers.Hashing(num_bins=64, salt=1337)(data))
    np.testing.assert_array_equal(out.numpy(), np.asarray(ref))


def test_agrees_with_adapted_keras_layers(generated) -> None:
    layers = generated.build_layers()
    d = ALL_KINDS_DATA
    x = batch()

    def adapted(layer, values):
        layer.adapt(values)
        return layer

    strings = lambda col: np.array([[v] for v in d[col] if v is not None])  # noqa: E731
    refs = {
        "country": adapted(keras.layers.StringLookup(num_oov_indices=2), strings("country")),
        "device": adapted(keras.layers.StringLookup(output_mode="one_hot"),
                          strings("device_type")),
        # adapt() breaks count ties between integers by value (30 before 5); the artifact
        # contract breaks them like TFT, by decimal string descending ("5" > "30" > "0").
        "store_id": keras.layers.IntegerLookup(vocabulary=[20, 10, 5, 30, 0],
                                               output_mode="multi_hot"),
        "title": adapted(keras.layers.TextVectorization(ngrams=2, output_sequence_length=6),
                         strings("title")),
        "review": adapted(keras.layers.TextVectorization(output_mode="tf_idf"),
                          strings("review")),
        "age": adapted(keras.layers.Normalization(),
                       np.array([[v] for v in d["age"] if v is not None], np.float32)),
    }
    for key, ref in refs.items():
        (ours, *rest) = layers[key]
        value = x[generated.INPUT_COLUMNS.get(key, "device_type")]
        got = ours(value)
        for extra in rest:
            got = extra(got)
        want = np.asarray(ref(value))
        if key == "age":
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(np.asarray(got), want.astype(np.asarray(got).dtype),
                                          err_msg=key)
    tie_by_value = adapted(keras.layers.IntegerLookup(),
                           np.array([[v] for v in d["store_id"]], np.int64))
    assert tie_by_value.get_vocabulary()[1:] == [20, 10, 30, 5, 0]
    # Same vocabularies (order included) as the adapted layers.
    assert layers["country"][0].get_vocabulary() == refs["country"].get_vocabulary()
    assert layers["title"][0].get_vocabulary() == refs["title"].get_vocabulary()
    # Discretization: the fixture's boundaries, bucket i when b[i-1] <= x < b[i], NaN last.
    got = layers["price_bucket"][0](x["price"]).numpy().ravel().tolist()
    assert got == [1, 3, 3, 0]


def test_runtime_twin_and_stage_split_agree(generated) -> None:
    x = batch()
    ours = generated.build_preprocessor()(x)
    twin = beam_prep.layers_from_artifacts(generated.ARTIFACTS_DIR)
    assert_same(ours, twin.build_preprocessor()(x))
    split = generated.build_preprocessor(stage="model")(
        generated.build_preprocessor(stage="data")(x))
    assert_same(ours, split)
    assert_same(ours, twin.build_preprocessor(stage="model")(
        twin.build_preprocessor(stage="data")(x)))
    # Declared output specs are what the layers really return.
    assert twin.output_specs == generated.OUTPUT_SPECS
    for key, (dtype, shape) in generated.OUTPUT_SPECS.items():
        assert ours[key].dtype.name == dtype, key
        assert shape[1] is None or ours[key].shape[1] == shape[1], key
    # Missing and NaN: "" is OOV (0 with one OOV slot); NaN z-scores to NaN.
    assert ours["rare"].numpy().ravel().tolist() == [0, 0, 0, 0]  # empty vocabulary
    assert ours["device"].numpy()[3].tolist() == [1, 0, 0, 0, 0]
    assert np.isnan(ours["age"].numpy()[1, 0])
    assert ours["title"].numpy()[3].tolist() == [0] * 6


def test_dataset_map_equals_direct_call(generated) -> None:
    x = batch()
    columns = {k: tf.reshape(v, [-1]) for k, v in x.items()}
    columns["label"] = tf.constant([1.0, 0.0, 1.0, 0.0])
    ds = tf.data.Dataset.from_tensor_slices(columns).batch(4)
    ds = ds.map(lambda f: (f, f["label"])).map(generated.make_dataset_fn())
    encoded, label = next(iter(ds.prefetch(tf.data.AUTOTUNE)))
    assert_same(encoded, generated.build_preprocessor()(x))
    assert label.numpy().tolist() == [1.0, 0.0, 1.0, 0.0]
    twin = beam_prep.layers_from_artifacts(generated.ARTIFACTS_DIR)
    twin_ds = tf.data.Dataset.from_tensor_slices(columns).batch(4).map(twin.make_dataset_fn())
    assert_same(next(iter(twin_ds)), encoded)
    tpu = tf.data.Dataset.from_tensor_slices(columns).batch(2, drop_remainder=True).map(
        generated.make_dataset_fn(stage="data"))
    assert all(s.shape.is_fully_defined() for s in tpu.element_spec.values())


def test_copied_directory_works_and_mismatch_fails(generated, tmp_path) -> None:
    copy = str(tmp_path / "copy")
    shutil.copytree(generated.ARTIFACTS_DIR, copy)
    x = batch()
    assert_same(generated.build_preprocessor(copy)(x), generated.build_preprocessor()(x))

    # Another analysis (a changed statistic, correctly re-fingerprinted) is refused.
    manifest = json.loads(open(os.path.join(copy, "manifest.json"), encoding="utf-8").read())
    manifest["features"]["age"]["stats"]["mean"] = 0.0
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(os.path.join(copy, "manifest.json"), "wb") as f:
        f.write(canonical_json(manifest))
    with pytest.raises(generated.ArtifactMismatchError, match="was generated from"):
        generated.build_preprocessor(copy)
    with pytest.raises(generated.ArtifactMismatchError, match="generated from"):
        generated.build_age_layers(copy)

    # A hand-edited manifest, or a vocabulary file changed after the analysis.
    shutil.rmtree(copy)
    shutil.copytree(generated.ARTIFACTS_DIR, copy)
    path = os.path.join(copy, "manifest.json")
    text = open(path, encoding="utf-8").read()
    open(path, "w", encoding="utf-8").write(text.replace('"mean": 35.', '"mean": 36.'))
    with pytest.raises(generated.ArtifactMismatchError, match="modified"):
        generated.check_artifacts(copy)
    shutil.rmtree(copy)
    shutil.copytree(generated.ARTIFACTS_DIR, copy)
    with open(os.path.join(copy, "vocab", "country.txt"), "a", encoding="utf-8") as f:
        f.write("EXTRA\n")
    with pytest.raises(generated.ArtifactMismatchError, match="checksum"):
        generated.build_preprocessor(copy)
    with pytest.raises(generated.ArtifactMismatchError, match="No manifest.json"):
        generated.build_preprocessor(str(tmp_path / "nowhere"))


def test_empty_vocabularies_map_everything_to_oov(tmp_path) -> None:
    features = [
        {"name": "i", "kind": "integer", "min_count": 10},
        {"name": "t", "kind": "text"},
        {"name": "w", "kind": "text", "output_mode": "tf_idf"},
        {"name": "m", "kind": "text", "output_mode": "multi_hot"},
    ]
    pp, art = make_module(tmp_path, features, {"i": [1, 2], "t": [None, None],
                                               "w": [None, None], "m": [None, None]})
    x = {"i": tf.constant([[1], [7]], tf.int64), "t": tf.constant([["a b"], [""]]),
         "w": tf.constant([["a b"], [""]]), "m": tf.constant([["a"], [""]])}
    out = pp.build_preprocessor()(x)
    assert out["i"].numpy().tolist() == [[0], [0]]
    assert out["t"].numpy().tolist() == [[1, 1], [0, 0]]
    assert out["m"].numpy().tolist() == [[1, 0], [0, 0]]
    # No document: idf = ln(1 + 0/1) = 0, so tf-idf is all zeros.
    assert out["w"].numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert_same(out, beam_prep.layers_from_artifacts(art).build_preprocessor()(x))
