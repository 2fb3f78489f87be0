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
    ("{name: c, kind: string, top_k: 10, topk: 3}",
     "Feature 'c': `topk` must be one of the known keys ['name', 'column', 'kind', 'top_k', "
     "'min_count', 'num_oov_indices', 'mask_token', 'output_mode', 'default_value'] "
     "(did you mean `top_k`?). Received: topk=3"),
    ("{name: c, kind: strin}", "`kind` must be one of 'string'"),
    ("{name: t, kind: text, output_mode: tfidf}",
     "Feature 't': `output_mode` must be one of 'int', 'multi_hot', 'count', 'tf_idf'. "
     "Received: output_mode='tfidf'"),
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
