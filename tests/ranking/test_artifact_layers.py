"""The ranking launcher's layers from an artifact directory (``data.artifacts``).

``layers_and_rows`` (then ``launcher._from_artifacts``) raised
``TypeError: argument of type 'PreprocessingLayers' is not iterable`` before;
the oracle for the values is the runtime twin's own layer chain.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from beam_prep.codegen.runtime import layers_from_artifacts  # noqa: E402
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo  # noqa: E402
from beam_prep.ranking.train.artifact_layers import FeatureChain, layers_and_rows  # noqa: E402
from beam_prep.ranking.train.preprocessor import Preprocessor  # noqa: E402
from tests.codegen.artifact_fixtures import write_artifacts  # noqa: E402
from tests.codegen.conftest import DEFAULTS_DATA, DEFAULTS_PRICE_BOUNDARIES, DEFAULTS_SPEC  # noqa: E402,E501


def test_layers_from_artifacts_feed_the_ranking_preprocessor(tmp_path):
    path = write_artifacts(str(tmp_path / "a"), DEFAULTS_SPEC, DEFAULTS_DATA,
                           boundaries={"price": DEFAULTS_PRICE_BOUNDARIES})
    spec = ElwcFeatureSpec(context=(FeatureInfo("country", "string", (), ""),),
                           example=(FeatureInfo("price", "float", (), 0.0),
                                    FeatureInfo("city", "string", (), "")))
    layers, rows = layers_and_rows(path, spec)
    assert set(layers) == {"country", "price", "city"}
    assert isinstance(layers["country"], FeatureChain)  # FillMissing, then the lookup
    assert layers["country"].output_mode == "int"
    assert rows["country"] == layers["country"].vocabulary_size()
    pre = Preprocessor(spec, layers, list_size=2, vocab_rows=rows)
    assert set(pre.id_rows) == {"country", "city"}
    features = {"country": tf.constant(["", "DE"]),
                "price": tf.constant([[np.nan, 12.0], [7.5, 30.0]], tf.float32),
                "city": tf.constant([["Paris", ""], ["Rome", "Lima"]])}
    out = pre(features)
    twin = layers_from_artifacts(path).build_feature_layers
    for name in ("country", "price", "city"):
        want = features[name]
        for layer in twin(name)[name]:
            want = layer(want)
        got = np.asarray(out[name])
        want = np.asarray(want, got.dtype).reshape(got.shape)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)


def test_a_per_key_feature_is_read_plain_with_a_warning(tmp_path):
    """Its layer also needs the key column; before, the trainer got the PerKeyScaling layer
    and failed on the first batch (ValueError: the layer called on the value alone)."""
    import json

    from beam_prep.pipelines import analyze

    from beam_prep.ranking.train.artifact_layers import artifact_layers

    rows = [{"price": float(i), "store": "ab"[i % 2], "city": "xy"[i % 2]} for i in range(20)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text("features:\n"
                                     "  - {name: price, kind: numeric, per_key: store}\n"
                                     "  - {name: city, kind: string}\n")
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                 "--output", str(tmp_path / "art"), "--quiet", "--no_report"])
    with pytest.warns(UserWarning, match="'price' .* uses per_key"):
        layers = artifact_layers(str(tmp_path / "art"), {"price", "city"})
    assert set(layers) == {"city"}
    ids = layers["city"](tf.constant([["x"], ["y"], ["zz"]])).numpy().ravel().tolist()
    assert sorted(ids[:2]) == [1, 2] and ids[2] == 0  # the plain feature keeps its lookup
