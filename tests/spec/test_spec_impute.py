"""Spec of `impute` and `missing_indicator` (beam_prep.spec.imputation): synonyms, errors."""

from __future__ import annotations

import pytest

from beam_prep.errors import SpecError
from beam_prep.spec import IntegerFeature, NumericFeature, Spec, StringFeature, spec_json_schema


def _load(*entries: str) -> Spec:
    return Spec.from_yaml_text("features:\n" + "".join(f"  - {e}\n" for e in entries))


@pytest.mark.parametrize("kind, strategy", [("numeric", "mean"), ("numeric", "median"),
                                            ("integer", "most_frequent")])
def test_default_value_strategy_is_the_same_spec_as_impute(kind: str, strategy: str) -> None:
    a = _load(f"{{name: x, kind: {kind}, default_value: {strategy}}}")
    b = _load(f"{{name: x, kind: {kind}, impute: {strategy}}}")
    assert a == b and a.to_dict() == b.to_dict()
    assert a.feature("x").impute == strategy and a.feature("x").default_value is None
    assert a.to_dict()["features"][0]["impute"] == strategy
    # The Python constructor takes the same spelling.
    cls = NumericFeature if kind == "numeric" else IntegerFeature
    assert Spec((cls("x", default_value=strategy),)) == a


def test_string_default_value_stays_a_literal() -> None:
    spec = _load("{name: s, kind: string, default_value: most_frequent}",
                 "{name: t, kind: text, default_value: mean}")
    assert spec.feature("s").default_value == "most_frequent"
    assert spec.feature("s").impute is None
    assert spec.feature("t").default_value == "mean"
    assert StringFeature("s", impute="most_frequent").impute == "most_frequent"


def test_specs_without_the_fields_keep_their_canonical_dict() -> None:
    spec = _load("{name: x, kind: numeric, default_value: 2.0}",
                 "{name: s, kind: string}", "{name: i, kind: integer}", "{name: t, kind: text}")
    for f in spec.to_dict()["features"]:
        assert "impute" not in f and "missing_indicator" not in f
    with_fields = _load("{name: x, kind: numeric, impute: mean, missing_indicator: true}")
    assert with_fields.to_dict()["features"][0]["missing_indicator"] is True


@pytest.mark.parametrize("entry, message", [
    ("{name: x, kind: numeric, impute: mean, default_value: 1.5}",
     "Feature 'x': `impute` must be null when `default_value` is set (default_value=1.5)"),
    ("{name: x, kind: integer, impute: most_frequent, default_value: 7}",
     "`impute` must be null when `default_value` is set (default_value=7)"),
    ("{name: x, kind: string, impute: most_frequent, default_value: US}",
     "`impute` must be null when `default_value` is set (default_value='US')"),
    ("{name: x, kind: numeric, impute: mean, default_value: median}",
     "`default_value` and `impute` are both set. Received: default_value='median', "
     "impute='mean'"),
    ("{name: x, kind: numeric, impute: most_frequent}",
     "the exact mode of a float column needs a count of every distinct value"),
    ("{name: x, kind: numeric, default_value: most_frequent}",
     "Received: impute='most_frequent'"),
    ("{name: x, kind: integer, impute: mean}",
     "`impute` must be 'most_frequent' for integer features"),
    ("{name: x, kind: string, impute: median}",
     "`impute` must be 'most_frequent' for string features"),
    ("{name: x, kind: numeric, impute: mode}",
     "`impute` must be one of 'mean', 'median', 'most_frequent' or null"),
    ("{name: x, kind: numeric, default_value: avg}",
     "`default_value` must be a number, null, or one of 'mean', 'median', 'most_frequent'"),
    ("{name: x, kind: text, impute: most_frequent}", "`impute` must be one of the known keys"),
    ("{name: x, kind: hashed, num_bins: 4, missing_indicator: true}",
     "`missing_indicator` must be one of the known keys"),
    ("{name: x, kind: string, shape: list, impute: most_frequent}",
     "`impute` must be null for a list feature"),
    ("{name: x, kind: integer, shape: list, missing_indicator: true}",
     "`missing_indicator` must be null for a list feature"),
    ("{name: x, kind: string, labels: y, impute: most_frequent}",
     "`impute` must be null with labels='y' (a label-aware vocabulary is ranked by mutual "
     "information"),
    ("{name: x, kind: numeric, per_key: store, impute: mean}",
     "`impute` must be null with per_key (not supported together"),
    ("{name: x, kind: numeric, per_key: store, missing_indicator: true}",
     "`missing_indicator` must be null with per_key"),
    ("{name: x, kind: numeric, missing_indicator: 1}",
     "`missing_indicator` must be true or false"),
])
def test_bad_entries_name_the_field_value_and_fix(entry: str, message: str) -> None:
    with pytest.raises(SpecError) as e:
        _load(entry)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("first", [0, 1])
def test_indicator_output_collides_with_a_feature_name(first: int) -> None:
    entries = ["{name: x, kind: numeric, missing_indicator: true}",
               "{name: x_missing, kind: string}"]
    with pytest.raises(SpecError) as e:
        _load(*(entries if first == 0 else entries[::-1]))
    assert str(e.value) == (
        "Feature 'x': its missing indicator output 'x_missing' collides with feature "
        "'x_missing'. Received: missing_indicator=True. Fix: rename one of the features, or "
        "drop missing_indicator.")


def test_schema_accepts_the_synonym_on_numeric_and_integer_only() -> None:
    defs = spec_json_schema()["$defs"]
    for cls in ("NumericFeature", "IntegerFeature"):
        assert {"enum": ["mean", "median", "most_frequent"]} in \
            defs[cls]["properties"]["default_value"]["anyOf"]
    assert {"type": "string"} in defs["StringFeature"]["properties"]["default_value"]["anyOf"]
    assert defs["NumericFeature"]["properties"]["missing_indicator"]["type"] == "boolean"


@pytest.mark.parametrize(("entry", "key", "field"), [
    ("{name: x, kind: numeric, num_buckets: 3}", "x_bucket", "num_buckets=3"),
    ("{name: x, kind: string, target_encoding: {labels: y, fold_column: f}}",
     "x_target_encoding", "target_encoding"),
    ("{name: x, kind: numeric, per_key: k, per_key_count: true}", "x_key_count",
     "per_key_count=True"),
])
@pytest.mark.parametrize("first", [0, 1])
def test_extra_outputs_colliding_with_a_feature_are_refused_at_spec_load(
        entry: str, key: str, field: str, first: int) -> None:
    """Was refused only by generate / transform, after the whole analysis had run."""
    entries = [entry, f"{{name: {key}, kind: integer}}"]
    with pytest.raises(SpecError) as e:
        _load(*(entries if first == 0 else entries[::-1]))
    msg = str(e.value)
    assert f"Feature 'x': its output {key!r} collides with feature {key!r}" in msg
    assert field in msg and "\n" not in msg and "rename" in msg
