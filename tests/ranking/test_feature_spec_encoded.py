"""``feature_spec.json`` ``encoded`` section: round trip, ``raw()``, hostile files refused."""

from __future__ import annotations

import json

import pytest

from beam_prep.errors import SpecError
from beam_prep.ranking.feature_spec import (
    ElwcFeatureSpec,
    EncodedFeature,
    Encoding,
    FeatureInfo,
)

RAW = FeatureInfo("city", "string", (), "")
SPEC = ElwcFeatureSpec(
    context=(), example=(FeatureInfo("city", "int64", (), 1), FeatureInfo("x", "float", (), 0.0)),
    encoded=Encoding("ab" * 32, (EncodedFeature("city", "city", RAW),)))


def test_round_trip_and_raw():
    assert ElwcFeatureSpec.from_json(SPEC.to_json()) == SPEC
    raw = SPEC.raw()
    assert raw.example == (RAW, FeatureInfo("x", "float", (), 0.0)) and raw.encoded is None
    assert "encoded" not in raw.to_json()


@pytest.mark.parametrize("change, message", [
    (lambda e: e.update(artifacts_fingerprint=3), "`artifacts_fingerprint`"),
    (lambda e: e.update(extra=1), "`extra` must be one of the known keys"),
    (lambda e: e["features"][0].update(name="nope"), "names feature(s) ['nope']"),
    (lambda e: e["features"][0]["raw"].update(dtype="blob"), "`dtype` must be one of"),
    (lambda e: e.update(features={}), "`features`"),
])
def test_hostile_encoded_sections_are_refused(change, message):
    d = json.loads(SPEC.to_json())
    change(d["encoded"])
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        ElwcFeatureSpec.from_dict(d)
