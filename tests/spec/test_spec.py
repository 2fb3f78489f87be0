"""Spec validation: every message names the feature, the field, the value and what is allowed."""

from __future__ import annotations

import pytest

from beam_prep.errors import SpecError
from beam_prep.spec import NumericFeature, Spec, StringFeature, TextFeature


def _load(features: str) -> Spec:
    return Spec.from_yaml_text("features:\n" + features)


def test_issue_example_spec_loads_with_defaults():
    spec = _load("""
  - {name: country, kind: string, top_k: 10000, min_count: 2}
  - {name: item_id, kind: integer, top_k: 1000000, num_oov_indices: 1}
  - {name: title, kind: text, standardize: lower_and_strip_punctuation, ngrams: 2,
     max_tokens: 50000, output_mode: tf_idf}
  - {name: price, kind: numeric, num_buckets: 20}
  - {name: user_id, kind: hashed, num_bins: 1024}
""")
    assert spec.names() == ("country", "item_id", "title", "price", "user_id")
    assert spec.feature("title").max_vocabulary_tokens() == 49999  # tf_idf: no padding slot
    assert TextFeature("t", max_tokens=10).max_vocabulary_tokens() == 8  # int: pad + OOV
    assert spec.feature("title").ngram_widths() == (1, 2)
    assert spec.feature("price").resolved_epsilon() == 0.01
    assert NumericFeature("p", num_buckets=50).resolved_epsilon() == 0.01
    assert NumericFeature("p", num_buckets=4).resolved_epsilon() == 0.01
    assert NumericFeature("p", num_buckets=50, epsilon=0.5).resolved_epsilon() == 0.5
    assert Spec.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize("entry, message", [
    ("{name: c, kind: string, top_k: 0}",
     "Feature 'c': `top_k` must be a positive integer or null. Received: top_k=0"),
    # the known keys in declaration order (optional fields added later follow max_values)
    ("{name: c, kind: string, top_k: 10, topk: 3}",
     "Feature 'c': `topk` must be one of the known keys ['name', 'column', 'expr', 'weights', "
     "'weights_expr', 'kind', "
     "'top_k', 'min_count', 'num_oov_indices', 'mask_token', 'output_mode', 'default_value', "
     "'shape', 'max_values', "),
    ("{name: c, kind: string, top_k: 10, topk: 3}",
     "'min_mutual_info', 'target_encoding'] (did you mean `top_k`?). Received: topk=3"),
    ("{name: c, kind: strin}", "`kind` must be one of 'string'"),
    ("{name: t, kind: text, output_mode: tfidf}",
     "Feature 't': `output_mode` must be one of 'int', 'multi_hot', 'count', 'tf_idf' "
     "(did you mean 'tf_idf'?). Received: output_mode='tfidf'"),
    ("{name: t, kind: text, max_tokens: 2}", "`max_tokens` must be an integer >= 3"),
    ("{name: t, kind: text, split: none, ngrams: 2}", "n-grams need split tokens"),
    ("{name: p, kind: numeric, num_buckets: 1}", "`num_buckets` must be an integer >= 2"),
    ("{name: p, kind: numeric, epsilon: 0.1}", "null unless num_buckets is set"),
    ("{name: h, kind: hashed}", "`num_bins` must be a positive integer. Received: num_bins=0"),
    ("{name: 2bad, kind: string}", "must be a Python identifier"),
    ("{name: i, kind: integer, mask_token: x}", "`mask_token` must be an integer or null"),
])
def test_invalid_entries_are_rejected_with_a_precise_message(entry, message):
    with pytest.raises(SpecError) as e:
        _load(f"  - {entry}\n")
    assert message in str(e.value)


def test_spec_level_errors():
    with pytest.raises(SpecError, match=r"The spec: `extra` must be one of the known keys "
                                        r"\['features', 'version'\]. Received: extra=1"):
        Spec.from_yaml_text("features: []\nextra: 1\n")
    with pytest.raises(SpecError, match="at least one feature"):
        Spec.from_yaml_text("features: []\n")
    with pytest.raises(SpecError, match="unique"):
        _load("  - {name: a, kind: string}\n  - {name: a, kind: numeric}\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        Spec.from_yaml_text("features: [\n")


def test_dataclasses_validate_like_yaml():
    with pytest.raises(SpecError, match="min_count"):
        Spec((StringFeature("a", min_count=0),))
    assert TextFeature("t").source_column == "t"
    assert StringFeature("a", column="A").source_column == "A"


# --- Issue 13 item 10: holes in spec validation -------------------------------------------


@pytest.mark.parametrize("name", ["price\n", "price\r\n", "pri ce", ""])
def test_feature_name_must_be_an_identifier_without_trailing_newline(name):
    # "price\n" matched the old `^...$` check (`$` matches before a final newline) and later
    # produced a generated module that is a SyntaxError.
    with pytest.raises(SpecError, match="must be a Python identifier"):
        Spec.from_dict({"features": [{"name": name, "kind": "numeric"}]})
    with pytest.raises(SpecError, match="must be a Python identifier"):
        NumericFeature(name).validate()


def test_feature_name_with_escaped_newline_in_yaml_is_rejected():
    with pytest.raises(SpecError, match=r"Received: name='price\\n'"):
        _load('  - {name: "price\\n", kind: numeric}\n')


@pytest.mark.parametrize("text, shown", [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf")])
def test_non_finite_numeric_default_is_rejected_at_load(text, shown):
    with pytest.raises(SpecError) as e:
        _load(f"  - {{name: price, kind: numeric, default_value: {text}}}\n")
    assert str(e.value) == (
        "Feature 'price': `default_value` must be a finite number or null (NaN and infinity "
        f"cannot stand in for a missing value). Received: default_value={shown}")
    with pytest.raises(SpecError, match="finite number"):
        Spec((NumericFeature("price", default_value=float(shown)),))


def test_finite_numeric_defaults_still_load():
    spec = _load("  - {name: a, kind: numeric, default_value: -2.5}\n"
                 "  - {name: b, kind: numeric, default_value: 3}\n")
    assert spec.feature("a").default_value == -2.5
    assert spec.feature("b").default_value == 3.0
    assert isinstance(spec.feature("b").default_value, float)


def test_duplicate_key_in_a_feature_names_key_and_lines():
    text = ("features:\n"
            "  - name: country\n"
            "    kind: string\n"
            "    top_k: 10\n"
            "    top_k: 20\n")
    with pytest.raises(SpecError) as e:
        Spec.from_yaml_text(text)
    assert str(e.value) == ("The spec: key `top_k` appears twice in one mapping (line 4 and "
                            "line 5). Received: top_k=10 and top_k=20; keep one of them.")


def test_duplicate_top_level_features_key_is_an_error():
    text = ("features:\n"
            "  - {name: a, kind: numeric}\n"
            "version: 1\n"
            "features:\n"
            "  - {name: b, kind: numeric}\n")
    with pytest.raises(SpecError, match=r"key `features` appears twice in one mapping "
                                        r"\(line 1 and line 4\)"):
        Spec.from_yaml_text(text)


def test_duplicate_key_in_flow_mapping_is_an_error():
    with pytest.raises(SpecError, match=r"key `kind` appears twice .*line 2 and line 2"):
        _load("  - {name: a, kind: numeric, kind: string}\n")


def test_unknown_key_suggests_the_closest_one():
    with pytest.raises(SpecError, match=r"`num_bucket` must be one of the known keys .*"
                                        r"\(did you mean `num_buckets`\?\)"):
        _load("  - {name: p, kind: numeric, num_bucket: 4}\n")


def test_spec_package_keeps_every_public_name():
    import beam_prep.spec as spec_pkg

    for name in ("Spec", "Feature", "VocabularyFeature", "StringFeature", "IntegerFeature",
                 "TextFeature", "NumericFeature", "HashedFeature", "feature_from_dict",
                 "KINDS", "LOOKUP_OUTPUT_MODES", "TEXT_OUTPUT_MODES", "STANDARDIZE_OPTIONS",
                 "SPLIT_OPTIONS", "HASHED_DTYPES", "SPEC_VERSION", "Kind", "LookupOutputMode",
                 "TextOutputMode", "Standardize", "Split", "HashedDtype"):
        assert hasattr(spec_pkg, name), name
    assert spec_pkg.KINDS == ("string", "integer", "text", "numeric", "hashed")
