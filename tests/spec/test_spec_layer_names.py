"""Keras name collisions are refused when the spec is loaded, before any analysis.

Each class of collision (the raw inputs + layers namespace; the outputs + layers namespace;
derived outputs; columns alike after sanitising) in both spec orders; the oracle of "what
collides" is the literal name each feature gets, written out by hand from the naming table in
docs/generated_layers.md, not the code under test.
"""

from __future__ import annotations

import json
import warnings

import pytest

from beam_prep.codegen.derived_plan import check_names
from beam_prep.codegen.plan import plan_from_artifacts
from beam_prep.errors import SpecError
from beam_prep.input_names import input_name
from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.spec import Spec
from beam_prep.spec.layer_names import UnpredictedNameWarning
from tests.codegen.artifact_fixtures import write_artifacts

TAKEN = input_name("price/usd")

# (feature owning a derived name, the other feature, the colliding name, words of the message)
CASES = [
    # a layer vs the raw input of a feature named like it (the brief's example)
    ({"name": "a", "kind": "string"}, {"name": "a_lookup", "kind": "string"},
     "a_lookup", "collides with the model input of column 'a_lookup'"),
    # a layer vs a column another feature reads under another name
    ({"name": "a", "kind": "numeric"}, {"name": "b", "kind": "numeric",
                                        "column": "a_normalization"},
     "a_normalization", "(read by feature 'b')"),
    # a layer vs another feature's output (the model stage's input)
    ({"name": "t", "kind": "text", "output_mode": "multi_hot"},
     {"name": "t_flatten", "kind": "integer", "column": "z"}, "t_flatten",
     "collides with feature 't_flatten'"),
    ({"name": "h", "kind": "hashed", "num_bins": 8, "output_mode": "one_hot"},
     {"name": "h_encoding", "kind": "numeric", "column": "z"}, "h_encoding",
     "collides with feature 'h_encoding'"),
    # a layer vs another feature's layer
    ({"name": "a", "kind": "numeric", "per_key": {"expr": "str(k)"}},
     {"name": "a_key", "kind": "numeric", "expr": "x + 1.0"}, "a_key_expr",
     "collides with the layer of feature"),
    ({"name": "p", "kind": "numeric", "scaling": "robust"},
     {"name": "p_rob", "kind": "string", "column": "z", "default_value": "q"},
     None, None),  # no collision: p_robust vs p_rob_fill_missing / p_rob_lookup
    ({"name": "s", "kind": "string", "target_encoding": {"labels": "y", "fold_column": "f"}},
     {"name": "s_target", "kind": "numeric", "column": "z", "scaling": "piecewise_linear",
      "num_buckets": 4}, "s_target_flatten", "collides with the layer of feature"),
    ({"name": "s", "kind": "string", "target_encoding": {"labels": "y", "fold_column": "f"}},
     {"name": "s_target", "kind": "string", "column": "z", "output_mode": "count"},
     "s_target_lookup", "collides with the layer of feature"),
    ({"name": "s", "kind": "string", "target_encoding": {"labels": "y", "fold_column": "f"}},
     {"name": "s_target", "kind": "numeric", "column": "z"}, None, None),
    ({"name": "s", "kind": "string", "target_encoding": {"labels": "y", "fold_column": "f"}},
     {"name": "s_target", "kind": "text", "column": "z", "output_mode": "count"},
     "s_target_flatten", "collides with the layer of feature"),
    # derived outputs vs a feature
    ({"name": "x", "kind": "numeric", "missing_indicator": True},
     {"name": "x_missing", "kind": "string"}, "x_missing", "drop missing_indicator"),
    ({"name": "x", "kind": "numeric", "num_buckets": 3},
     {"name": "x_bucket", "kind": "integer"}, "x_bucket", "drop num_buckets"),
    ({"name": "x", "kind": "numeric", "per_key": "k", "per_key_count": True},
     {"name": "x_key_count", "kind": "integer"}, "x_key_count", "drop per_key_count"),
    ({"name": "x", "kind": "string", "missing_indicator": True, "column": "c"},
     {"name": "x_missing_indicator", "kind": "string", "column": "d"},
     "x_missing_indicator", "collides with feature 'x_missing_indicator'"),
    ({"name": "x", "kind": "integer", "default_value": 0},
     {"name": "y", "kind": "string", "column": "x_fill_missing"}, "x_fill_missing",
     "(or the column)"),
    # list features: a ListEncoding layer, and no CategoryEncoding
    ({"name": "tags", "kind": "string", "shape": "list"},
     {"name": "tags_list", "kind": "numeric", "column": "z"}, "tags_list",
     "collides with feature 'tags_list'"),
    ({"name": "tags", "kind": "string", "shape": "list", "output_mode": "multi_hot"},
     {"name": "tags_encoding", "kind": "numeric", "column": "z"}, None, None),
    # an int lookup has no CategoryEncoding: the name is free
    ({"name": "a", "kind": "string"}, {"name": "b", "kind": "numeric",
                                       "column": "a_encoding"}, None, None),
]


def _spec(*features: dict) -> Spec:
    return Spec.from_yaml_text(json.dumps({"features": list(features)}))


@pytest.mark.parametrize("first", [0, 1])
@pytest.mark.parametrize(("owner", "other", "name", "words"), CASES)
def test_collisions_are_refused_at_spec_load(owner, other, name, words, first) -> None:
    features = [owner, other] if first == 0 else [other, owner]
    if name is None:
        _spec(*features)  # no collision: accepted
        return
    with pytest.raises(SpecError) as e:
        _spec(*features)
    msg = str(e.value)
    assert f"'{name}'" in msg and words in msg and "\n" not in msg, msg
    assert f"'{owner['name']}'" in msg and f"'{other['name']}'" in msg, msg
    assert "Fix: rename one of the features" in msg, msg


@pytest.mark.parametrize("first", [0, 1])
def test_columns_alike_after_sanitising_are_refused_at_spec_load(first) -> None:
    features = [{"name": "p", "kind": "numeric", "column": "price/usd"},
                {"name": "q", "kind": "numeric", "column": TAKEN}]
    with pytest.raises(SpecError) as e:
        _spec(*(features if first == 0 else features[::-1]))
    msg = str(e.value)
    assert f"'{TAKEN}'" in msg and "'price/usd'" in msg and "\n" not in msg
    assert "'p'" in msg and "'q'" in msg and msg.endswith("Fix: rename one of the columns.")


def test_a_shared_column_is_no_collision() -> None:
    _spec({"name": "p", "kind": "numeric", "column": "price"},
          {"name": "r", "kind": "numeric", "expr": "log1p(price)"},
          {"name": "price", "kind": "numeric"})


def test_planned_names_not_predicted_by_the_spec_warn(tmp_path, monkeypatch) -> None:
    """The guard keeping spec_names the superset of what generate plans."""
    import beam_prep.codegen.derived_plan as derived_plan

    art = Artifacts(write_artifacts(str(tmp_path), {"features": [
        {"name": "a", "kind": "string"}]}, {"a": ["x"]}))
    monkeypatch.setattr(derived_plan, "spec_names", lambda f: [])
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        plan = plan_from_artifacts(art)
    assert [type(w.message) for w in got] == [UnpredictedNameWarning]
    assert "layer 'a_lookup'" in str(got[0].message)
    with pytest.raises(SpecError):  # the check itself runs on the planned names
        check_names(plan.features * 2)
