"""A variance beyond float64 is refused with a message that points to ``scaling: none``.

Values near 1e308 have a finite mean but a variance no float64 holds (exactly 0.75e616 for
``1e308, 1e308, -1e308, 1e308``: mean 5e307, deviations 5e307 (three times) and -1.5e308,
so (3 × 0.25e616 + 2.25e616) / 4, by hand). z_score scaling needs that variance, and
min_max cannot help (its ``(max - min)²`` is at least four times the variance), so the fix
the messages must name is ``scaling: none``.
The manifests here are written by hand (no analysis run), then checked by the generator.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from beam_prep.analyzers import manifest as manifest_mod
from beam_prep.analyzers import numeric as num
from beam_prep.codegen.plan import plan_from_artifacts
from beam_prep.codegen.scaling_plan import min_max_layer
from beam_prep.errors import ArtifactError
from beam_prep.io.contract.artifacts import Artifacts, canonical_json, manifest_fingerprint
from tests.codegen.artifact_fixtures import write_artifacts


def _artifacts_with_null_variance(path: str, scaling: str) -> Artifacts:
    """A manifest for feature ``wide`` whose variance is null (beyond float64)."""
    spec = {"features": [{"name": "wide", "kind": "numeric", "scaling": scaling}]}
    write_artifacts(path, spec, {"wide": [1.0, 2.0]})
    with open(f"{path}/manifest.json", encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["features"]["wide"]["stats"].update(
        count=4, mean=5e307, variance=None, min=-1e308, max=1e308,
        null_reasons={"variance": manifest_mod.VARIANCE_OVERFLOW})
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(f"{path}/manifest.json", "wb") as f:
        f.write(canonical_json(manifest))
    return Artifacts(path)


def test_manifest_reason_for_an_overflowing_variance_names_scaling_none():
    moments = num.Moments.of(np.array([1e308, 1e308, -1e308, 1e308]))
    reason = manifest_mod.null_reasons(moments)["variance"]
    assert "scaling: none" in reason
    assert "min_max" in reason  # says why min_max is no way out


def test_z_score_refusal_names_feature_value_and_scaling_none(tmp_path):
    art = _artifacts_with_null_variance(str(tmp_path), "z_score")
    with pytest.raises(ArtifactError) as err:
        plan_from_artifacts(art)
    message = str(err.value)
    assert "Feature 'wide'" in message
    assert "variance=None" in message and "min=-1e+308" in message and "max=1e+308" in message
    assert "scaling: none" in message


def test_scaling_none_is_the_working_fix(tmp_path):
    plan = plan_from_artifacts(_artifacts_with_null_variance(str(tmp_path), "none"))
    (feature,) = plan.features
    assert feature.outputs[0].layers == ()


def test_min_max_refusal_names_scaling_none():
    # (1e154 - -1e154)² = 4e308 > 1.797e308: beyond float64.
    with pytest.raises(ArtifactError) as err:
        min_max_layer("wide", {"count": 2, "min": -1e154, "max": 1e154})
    message = str(err.value)
    assert "Feature 'wide'" in message and "min=-1e+154" in message
    assert "scaling: none" in message
