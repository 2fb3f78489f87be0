"""The config mechanism: mappings to frozen dataclasses, YAML without repeated keys, JSON Schema.

Expected values are written by hand from the rules in ``beam_prep/config/build.py``'s docstring.
The schema tests check the bundled examples with a small draft 2020-12 validator written here
(``jsonschema`` is not installed in the project's environment); it covers the keywords
``json_schema`` emits and fails on any other, so a schema it cannot judge is not passed.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import Any, Literal

import pytest
import yaml

from beam_prep.config import (
    check_fields,
    describe,
    from_mapping,
    json_schema,
    load_yaml,
)
from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.spec import Spec, spec_json_schema

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@dataclasses.dataclass(frozen=True)
class Inner:
    """A nested section."""

    mode: Literal["fast", "slow"] = "fast"
    rate: float = 0.5


@dataclasses.dataclass(frozen=True)
class Outer:
    """A config with every supported annotation."""

    name: str
    sizes: tuple[int, ...] = ()
    pair: tuple[str, float] | None = None
    value: float | int | str | None = None
    flag: bool = False
    inner: Inner = Inner()
    kind: str = dataclasses.field(default="outer", init=False)


def test_builds_nested_sections_and_converts_lists_and_ints():
    got = from_mapping(Outer, {"name": "n", "sizes": [1, 2], "pair": ["a", 1],
                               "inner": {"mode": "slow", "rate": 2}, "kind": "outer"})
    assert got == Outer("n", (1, 2), ("a", 1.0), None, False, Inner("slow", 2.0))
    assert isinstance(got.inner.rate, float) and isinstance(got.pair[1], float)


def test_union_keeps_the_type_received():
    assert from_mapping(Outer, {"name": "n", "value": 3}).value == 3
    assert isinstance(from_mapping(Outer, {"name": "n", "value": 3}).value, int)
    assert from_mapping(Outer, {"name": "n", "value": 2.5}).value == 2.5
    assert from_mapping(Outer, {"name": "n", "value": "x"}).value == "x"


@pytest.mark.parametrize("raw, message", [
    ({"name": "n", "sizez": [1]},
     "`sizez` must be one of the known keys ['name', 'sizes', 'pair', 'value', 'flag', "
     "'inner', 'kind'] (did you mean `sizes`?). Received: sizez=[1]"),
    ({"name": "n", "zzz": 1, "qqq": 2},
     "`zzz` must be one of the known keys ['name', 'sizes', 'pair', 'value', 'flag', "
     "'inner', 'kind']; other unknown keys: ['qqq']. Received: zzz=1"),
    ({"name": "n", "inner": {"mode": "medium"}},
     "`inner`: `mode` must be one of 'fast', 'slow'. Received: mode='medium'"),
    ({"name": "n", "inner": {"mdoe": "fast"}},
     "`inner`: `mdoe` must be one of the known keys ['mode', 'rate'] (did you mean `mode`?). "
     "Received: mdoe='fast'"),
    ({"name": "n", "inner": {"rate": True}},
     "`inner`: `rate` must be a number. Received: rate=True"),
    ({"name": "n", "sizes": 3}, "`sizes` must be a list of integers. Received: sizes=3"),
    ({"name": "n", "sizes": [1, "2"]},
     "`sizes` must be a list of integers. Received: sizes=[1, '2']"),
    ({"name": "n", "pair": ["a"]},
     "`pair` must be a list of 2 items (a string, a number) or null. Received: pair=['a']"),
    ({"name": "n", "flag": "yes"}, "`flag` must be true or false. Received: flag='yes'"),
    ({"name": "n", "value": [1]},
     "`value` must be a number, an integer or a string or null. Received: value=[1]"),
    ({"name": "n", "kind": "other"}, "`kind` must be 'outer'. Received: kind='other'"),
    ({}, "`name` must be given (a string). Received: no `name` key; add `name: <value>`."),
])
def test_errors_have_one_shape(raw, message):
    with pytest.raises(SpecError) as e:
        from_mapping(Outer, raw)
    assert str(e.value) == message


def test_not_a_mapping():
    with pytest.raises(SpecError, match=r"`inner` must be a mapping of \['mode', 'rate'\]"):
        from_mapping(Inner, [1], where="`inner`")


def test_check_fields_on_objects_built_in_python():
    check_fields(Outer("n", sizes=[1, 2]))  # lists pass for tuples: nothing converted
    with pytest.raises(SpecError, match=r"^here: `mode` must be one of 'fast', 'slow'. "
                                        r"Received: mode='x'$"):
        check_fields(Inner(mode="x"), where="here")


def test_describe():
    assert describe(int | None) == "an integer or null"
    assert describe(tuple[bool, ...]) == "a list of booleans"
    assert describe(Inner) == "a mapping (Inner)"


# --- YAML -------------------------------------------------------------------------------------


def test_yaml_duplicate_keys_anywhere():
    with pytest.raises(SpecError, match=r"^X: key `b` appears twice in one mapping \(line 3 and "
                                        r"line 4\). Received: b=1 and b=2; keep one of them.$"):
        load_yaml("a:\n  - x: 1\n    b: 1\n    b: 2\n", what="X")
    with pytest.raises(SpecError, match=r"key `1` appears twice"):
        load_yaml("{1: a, 1: b}", what="X")


def test_yaml_merge_keys_may_be_overridden_and_errors_are_spec_errors():
    assert load_yaml("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n", what="X")["d"] == {
        "x": 3, "y": 2}
    with pytest.raises(SpecError, match="^X is not valid YAML"):
        load_yaml("a: [", what="X")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_yaml("!!python/object:os.system {}", what="X")  # safe types only


# --- JSON Schema ------------------------------------------------------------------------------


def _errors(schema: dict[str, Any], value: Any, root: dict[str, Any], path: str = "$"
            ) -> list[str]:
    """Draft 2020-12 check of the keywords json_schema emits (others raise)."""
    known = {"$schema", "title", "description", "default", "type", "enum", "const", "anyOf",
             "oneOf", "$ref", "properties", "required", "additionalProperties", "items",
             "prefixItems", "minItems", "maxItems", "$defs"}
    assert set(schema) <= known, set(schema) - known
    if "$ref" in schema:
        name = re.fullmatch(r"#/\$defs/(\w+)", schema["$ref"]).group(1)
        return _errors(root["$defs"][name], value, root, path)
    out: list[str] = []
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    t = schema.get("type")
    if t == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif t == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = t is None or isinstance(value, types[t])
    if not ok:
        return [f"{path}: not {t}"]
    if "enum" in schema and not any(value == e and type(value) is type(e)
                                    for e in schema["enum"]):
        out.append(f"{path}: not in enum")
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: not const")
    for key, count in (("anyOf", None), ("oneOf", 1)):
        if key in schema:
            passed = sum(not _errors(s, value, root, path) for s in schema[key])
            if passed == 0 or (count is not None and passed != count):
                out.append(f"{path}: {key} matched {passed}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        out += [f"{path}: missing {k}" for k in schema.get("required", []) if k not in value]
        for k, v in value.items():
            if k in props:
                out += _errors(props[k], v, root, f"{path}.{k}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{path}: unknown key {k}")
    if isinstance(value, list):
        prefix = schema.get("prefixItems", [])
        for i, v in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                out += _errors(sub, v, root, f"{path}[{i}]")
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", 1e9):
            out.append(f"{path}: wrong length")
    return out


def _validate(schema: dict[str, Any], value: Any) -> list[str]:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    return _errors(schema, value, schema)


def test_schema_validator_itself():
    schema = json_schema(Outer)
    assert _validate(schema, {"name": "n", "pair": ["a", 1.5], "kind": "outer"}) == []
    assert _validate(schema, {"name": "n", "pair": ["a", "b"], "kind": "outer"}) != []
    assert _validate(schema, {"name": 3, "kind": "outer"}) == ["$.name: not string"]
    assert _validate(schema, {"kind": "outer"}) == ["$: missing name"]
    assert schema["properties"]["inner"] == {"$ref": "#/$defs/Inner",
                                             "default": {"mode": "fast", "rate": 0.5}}
    assert schema["$defs"]["Inner"]["properties"]["mode"] == {"enum": ["fast", "slow"],
                                                              "default": "fast"}


def test_schemas_accept_the_bundled_examples():
    spec_doc = yaml.safe_load((EXAMPLES / "spec.yaml").read_text())
    train_doc = yaml.safe_load((EXAMPLES / "train.yaml").read_text())
    assert _validate(spec_json_schema(), spec_doc) == []
    assert _validate(json_schema(RankingHparams), train_doc) == []
    # ...and so do the loaders.
    Spec.from_dict(spec_doc)
    RankingHparams.from_dict(train_doc)
    synthetic = yaml.safe_load((EXAMPLES / "train_synthetic.yaml").read_text())
    assert _validate(json_schema(RankingHparams), synthetic) == []
    assert RankingHparams.from_dict(synthetic).model.feature_embedding_dim > 0


def test_schemas_and_loaders_reject_a_misspelt_key():
    spec_doc = yaml.safe_load((EXAMPLES / "spec.yaml").read_text())
    spec_doc["features"][3]["num_bucket"] = spec_doc["features"][3].pop("num_buckets")
    assert _validate(spec_json_schema(), spec_doc) == ["$.features[3]: oneOf matched 0"]
    with pytest.raises(SpecError, match=r"Feature 'price': `num_bucket` .*did you mean "
                                        r"`num_buckets`"):
        Spec.from_dict(spec_doc)

    train_doc = yaml.safe_load((EXAMPLES / "train.yaml").read_text())
    train_doc["training"]["learning_rat"] = train_doc["training"].pop("learning_rate")
    assert _validate(json_schema(RankingHparams), train_doc) == [
        "$.training: unknown key learning_rat"]
    with pytest.raises(SpecError, match=r"`training`: `learning_rat` .*did you mean "
                                        r"`learning_rate`"):
        RankingHparams.from_dict(train_doc)


def test_a_yaml_syntax_error_names_the_file_line_and_column(tmp_path, capsys):
    """Spec and training config: ``path:line:col`` in one line, never "<unicode string>"."""
    from beam_prep import cli

    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: a, kind: string\n  - {name: b, kind: string}\n")
    config = tmp_path / "train.yaml"
    config.write_text("data:\n  train: [a.tfrecord\nmodel: {}\n")
    for load, path, where in ((Spec.load, spec, f"{spec}:3:5: expected ',' or '}}'"),
                              (RankingHparams.load, config, f"{config}:3:6: expected ',' or "
                                                            "']'")):
        with pytest.raises(SpecError) as e:
            load(str(path))
        message = str(e.value)
        assert where in message and "<unicode string>" not in message, message
        assert "\n" not in message and f"started at {path}:2:" in message, message
    (tmp_path / "d.csv").write_text("a,b\nx,y\n")
    assert cli.main(["analyze", "--spec", str(spec), "--input", str(tmp_path / "d.csv"),
                     "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("beam-prep analyze: error: The spec is not valid YAML: "
                          f"{spec}:3:5: ") and err.count("\n") == 1, err
