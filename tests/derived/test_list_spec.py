"""List features in the spec: shape / max_values checks, and old specs' fingerprints kept."""

from __future__ import annotations

import pytest

from beam_prep.errors import SpecError
from beam_prep.spec import HashedFeature, IntegerFeature, Spec, StringFeature


def _load(entry: str) -> Spec:
    return Spec.from_yaml_text(f"features:\n  - {entry}\n")


@pytest.mark.parametrize("entry, is_list", [
    ("{name: t, kind: string}", False),
    ("{name: t, kind: string, shape: scalar}", False),
    ("{name: t, kind: string, shape: list}", True),
    ("{name: t, kind: string, shape: list, max_values: 4}", True),
    ("{name: t, kind: string, expr: \"split(x, '|')\"}", True),
    ("{name: t, kind: string, expr: \"split(x, '|')\", shape: list, max_values: 1}", True),
    ("{name: t, kind: integer, shape: list, output_mode: count}", True),
    ("{name: t, kind: hashed, num_bins: 4, shape: list}", True),
    ("{name: t, kind: hashed, num_bins: 4, expr: \"split(x, ',')\", output_mode: multi_hot}",
     True),
    ("{name: t, kind: text}", False),
])
def test_which_features_are_lists(entry, is_list):
    assert _load(entry).features[0].is_list() is is_list


@pytest.mark.parametrize("entry, message", [
    ("{name: t, kind: string, max_values: 3}",
     "Feature 't': `max_values` must be null unless the feature is a list (add shape: list"),
    ("{name: t, kind: string, shape: list, max_values: 0}",
     "`max_values` must be a positive integer or null. Received: max_values=0"),
    ("{name: t, kind: string, shape: list, max_values: true}",
     "`max_values` must be"),
    ("{name: t, kind: string, shape: lists}",
     "`shape` must be one of 'scalar', 'list' or null (did you mean 'list'?). "
     "Received: shape='lists'"),
    ("{name: t, kind: string, shape: scalar, expr: \"split(x, '|')\"}",
     "`shape` must be 'list' or null: `expr` \"split(x, '|')\" gives a list per row"),
    ("{name: t, kind: string, shape: list, expr: \"lower(x)\"}",
     "`shape` must be 'scalar' or null: `expr` 'lower(x)' gives one value per row"),
    ("{name: t, kind: string, shape: list, output_mode: one_hot}",
     "`output_mode` must be 'int', 'multi_hot' or 'count' for a list feature"),
    ("{name: t, kind: string, shape: list, max_values: 2, output_mode: multi_hot}",
     "`max_values` must be null when output_mode='multi_hot'"),
    ("{name: t, kind: string, shape: list, mask_token: PAD}",
     "`mask_token` must be null for a list feature (index 0 is the padding"),
    ("{name: t, kind: integer, shape: list, default_value: 0}",
     "`default_value` must be null for a list feature (a missing list is an empty row"),
    ("{name: t, kind: hashed, num_bins: 4, cross: [a, b], shape: list}",
     "`cross` must be null for a list feature"),
    ("{name: t, kind: text, shape: list}", "`shape` must be one of the known keys"),
    ("{name: t, kind: numeric, max_values: 2}", "`max_values` must be one of the known keys"),
    ("{name: t, kind: integer, expr: \"split(x, '|')\"}", "gives a list_string value"),
])
def test_invalid_list_fields_are_refused_with_the_fix(entry, message):
    with pytest.raises(SpecError) as e:
        _load(entry)
    assert message in str(e.value)


def test_old_specs_keep_their_canonical_dict():
    # Written before list features existed: the new fields stay out at their defaults.
    assert StringFeature("c", top_k=3).to_dict() == {
        "name": "c", "kind": "string", "column": None, "top_k": 3,
        "min_count": 1, "num_oov_indices": 1, "mask_token": None, "output_mode": "int",
        "default_value": None}
    assert "shape" not in IntegerFeature("i").to_dict()
    assert "max_values" not in HashedFeature("h", num_bins=3).to_dict()
    listed = StringFeature("t", shape="list", max_values=5).to_dict()
    assert (listed["shape"], listed["max_values"]) == ("list", 5)
