"""`expr:` in the spec: parsing, inferred input types, kinds, errors, required columns."""

from __future__ import annotations

import pytest

from beam_prep.analyzers.split_fn import column_owners, required_columns
from beam_prep.errors import SpecError
from beam_prep.spec import NumericFeature, Spec, StringFeature


def _spec(*lines: str) -> Spec:
    return Spec.from_yaml_text("features:\n" + "".join(f"  - {line}\n" for line in lines))


def test_required_columns_are_the_expression_inputs_with_inferred_types():
    spec = _spec('{name: ratio, kind: numeric, expr: "price / (qty + 1)"}',
                 '{name: cc, kind: string, expr: "cross(country, str(year))"}',
                 '{name: city, kind: string, expr: "lower(strip(town))"}',
                 '{name: tags, kind: string, expr: "split(tag_text, \'|\')"}',
                 '{name: h, kind: hashed, num_bins: 8, expr: "lower(user)"}')
    # a hashed feature's columns are read too (checked up front, rows counted): issue 21
    assert required_columns(spec) == {"price": "float64", "qty": "float64",
                                      "country": "string", "year": "int64",
                                      "town": "string", "tag_text": "string", "user": "string"}
    assert column_owners(spec)["qty"] == "ratio"
    assert spec.source_columns() == ("price", "qty", "country", "year", "town", "tag_text")


def test_plain_and_derived_features_share_a_column_of_one_type():
    spec = _spec("{name: price, kind: numeric}", '{name: lp, kind: numeric, expr: "log1p(price)"}')
    assert required_columns(spec) == {"price": "float64"}
    with pytest.raises(SpecError, match="'country' is read as string by feature 'country' and "
                                        "as float64 by feature 'x'"):
        required_columns(_spec("{name: country, kind: string}",
                               '{name: x, kind: numeric, expr: "log1p(country)"}'))


def test_coalesce_takes_the_type_of_its_default():
    spec = _spec("{name: c, kind: string, expr: \"coalesce(city, 'none')\"}",
                 '{name: n, kind: numeric, expr: "coalesce(qty, 0)"}',
                 '{name: i, kind: integer, expr: "coalesce(item, 0)"}')
    assert required_columns(spec) == {"city": "string", "qty": "float64", "item": "int64"}


def test_expr_and_column_are_mutually_exclusive():
    with pytest.raises(SpecError, match="Feature 'r'.*expr.*null when `column` is set"):
        NumericFeature("r", column="a", expr="log1p(a)").validate()


@pytest.mark.parametrize("kind, expr, message", [
    ("numeric", "lower(city)", "'r'.*'lower\\(city\\)' gives a string value, but a numeric "
                               "feature needs float or int"),
    ("string", "log1p(price)", "gives a float value, but a string feature"),
    ("integer", "qty + 1", "gives a float value, but a integer feature needs int"),
    ("text", "split(t, ' ')", "gives a list_string value"),
    ("numeric", "city.lower()", "'r'.*calls `city.lower`, not a function name"),
    ("numeric", "foo(x)", "`foo` is not a known function"),
    ("numeric", "log1p(", "not a Python expression"),
    ("string", "concat(a, str(a))", "'r'.*str\\(\\) needs an integer, but `a` is string"),
])
def test_bad_expressions_name_feature_expression_and_fix(kind, expr, message):
    with pytest.raises(SpecError, match=message):
        Spec.from_dict({"features": [{"name": "r", "kind": kind, "expr": expr}]})


def test_to_dict_has_no_expr_key_for_plain_features():
    assert "expr" not in StringFeature("a").to_dict()
    assert StringFeature("a", expr="lower(b)").to_dict()["expr"] == "lower(b)"
    assert Spec.from_dict(Spec((StringFeature("a", expr="lower(b)"),)).to_dict()).features[0] \
        .expr == "lower(b)"


def test_example_spec_uses_each_new_field():
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    spec = Spec.load(str(root / "examples" / "derived_spec.yaml"))
    assert {f.name for f in spec.features if f.expr} >= {"unit_price", "city", "country_year"}
    assert spec.feature("country_x_device").cross == ("country", "device")
    assert {f.scaling for f in spec.of_kind("numeric")} == {"z_score", "min_max", "none"}
    assert spec.feature("tags").is_list() and spec.feature("tags").max_values == 3
    assert spec.feature("tags_hashed").is_list()
