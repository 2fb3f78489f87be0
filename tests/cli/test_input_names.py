"""beam_prep.input_names: any column name -> a valid Keras input / SavedModel argument name."""

from __future__ import annotations

import hashlib
import keyword
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beam_prep.errors import SpecError
from beam_prep.input_names import input_name, input_names

VALID = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text())
def test_every_name_is_a_valid_signature_argument(column):
    name = input_name(column)
    assert VALID.fullmatch(name) and not keyword.iskeyword(name), (column, name)
    assert input_name(column) == name  # deterministic
    if VALID.fullmatch(column) and not keyword.iskeyword(column):
        assert name == column  # valid columns keep their name
    else:
        digest = hashlib.sha256(column.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        assert name.endswith("_" + digest)


def test_examples_by_hand():
    assert input_name("price") == "price"
    assert input_name("price/usd") == "price_usd_" + hashlib.sha256(b"price/usd").hexdigest()[:8]
    assert input_name("class").startswith("class_")
    assert input_name("1st").startswith("c_1st_")
    assert input_name("").startswith("c__")
    assert len(input_name("x/" * 500)) == 40 + 1 + 8


def test_two_columns_alike_after_sanitising_stay_distinct():
    names = input_names(["a b", "a/b", "a_b"])
    assert len(set(names.values())) == 3 and names["a_b"] == "a_b"


def test_a_column_named_like_another_columns_input_is_refused():
    taken = input_name("price/usd")
    with pytest.raises(SpecError, match=r"Columns 'price/usd' and '.*' both get the model "
                                        r"input name .* Fix: rename one of the columns"):
        input_names(["price/usd", taken])
