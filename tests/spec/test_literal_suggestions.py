"""A misspelt option value gets "did you mean" as a misspelt key does (hostile review).

``kind: strin`` or ``output_mode: onehot`` listed the options only; keys already got a
suggestion (``top_kk`` -> ``top_k``). A value far from every option gets no suggestion.
"""

from __future__ import annotations

import pytest

from beam_prep.errors import SpecError
from beam_prep.spec import Spec


@pytest.mark.parametrize("field,value,suggested", [
    ("kind", "strin", "string"), ("kind", "Numeric", "numeric"),
    ("output_mode", "onehot", "one_hot"), ("output_mode", "multihot", "multi_hot"),
])
def test_a_near_miss_suggests_the_option(field, value, suggested):
    entry = {"name": "a", "kind": "string", field: value}
    text = "features:\n  - {" + ", ".join(f"{k}: {v}" for k, v in entry.items()) + "}\n"
    with pytest.raises(SpecError, match=rf"\(did you mean '{suggested}'\?\)\. Received: "
                                        rf"{field}='{value}'"):
        Spec.from_yaml_text(text)


def test_a_value_far_from_every_option_gets_no_suggestion():
    with pytest.raises(SpecError) as e:
        Spec.from_yaml_text("features:\n  - {name: a, kind: string, output_mode: zzz}\n")
    assert "did you mean" not in str(e.value)


def test_the_training_config_suggests_too():
    from beam_prep.config import from_mapping
    from beam_prep.ranking.train.hparams import ModelHparams

    with pytest.raises(SpecError, match=r"did you mean 'dasalc'"):
        from_mapping(ModelHparams, {"scorer": "dasalk"}, where="`model`")
