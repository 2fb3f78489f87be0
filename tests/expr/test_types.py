"""Type checking: result types and the SpecErrors of wrong arguments (feature, expr, fix)."""

from __future__ import annotations

import pytest

from beam_prep.errors import SpecError
from beam_prep.expr import check, parse

COLUMNS = {"price": "float", "qty": "int", "year": "int", "country": "string",
           "device": "string", "tags": "list_string"}

RESULT_TYPES = [
    ("price", "float"), ("qty", "int"), ("country", "string"), ("tags", "list_string"),
    ("price / (qty + 1)", "float"), ("-qty", "float"), ("qty * 2", "float"),
    ("log1p(price)", "float"), ("log(qty)", "float"), ("exp(price)", "float"),
    ("sqrt(price)", "float"), ("abs(qty)", "float"), ("floor(price)", "float"),
    ("clip(qty, 0, 10)", "float"), ("minimum(price, qty, 3)", "float"),
    ("maximum(price, 0)", "float"), ("lower(country)", "string"),
    ("upper(country)", "string"), ("strip(country)", "string"),
    ("concat(country, '-', device)", "string"), ("cross(country, device)", "string"),
    ("cross(country, year)", "string"), ("split(country, '|')", "list_string"),
    ("coalesce(price, 0)", "float"), ("coalesce(qty, 0)", "int"),
    ("coalesce(qty, 0.5)", "float"), ("coalesce(country, 'unknown')", "string"),
    ("float(qty)", "float"), ("float(price)", "float"), ("str(year)", "string"),
    ("concat(str(year), country)", "string"),
]


@pytest.mark.parametrize("expr,expected", RESULT_TYPES)
def test_result_type(expr, expected):
    assert check(parse(expr), COLUMNS).type == expected


def test_every_node_is_typed():
    tree = check(parse("concat(lower(country), str(year))"), COLUMNS)
    assert tree.args[0].type == "string"
    assert tree.args[0].args[0].type == "string"
    assert tree.args[1].args[0].type == "int"


# (expression, words the message must hold)
TYPE_ERRORS = [
    ("log1p(country)", ["log1p()", "`country` is string", "numeric"]),
    ("price + country", ["operator +", "`country` is string"]),
    ("-country", ["operator unary -", "`country`"]),
    ("clip(price, 0, country)", ["clip()", "`country`"]),
    ("minimum(price, tags)", ["minimum()", "`tags` is list_string"]),
    ("lower(price)", ["lower()", "`price` is float", "string"]),
    ("strip(tags)", ["strip()", "`tags` is list_string"]),
    ("concat(country, qty)", ["concat()", "`qty` is int", "str(x)"]),
    ("cross(country, price)", ["cross()", "`price` is float", "bucketize"]),
    ("cross(country, 'x')", ["cross()", "argument 2 is string"]),
    ("split(qty, '|')", ["split()", "`qty` is int"]),
    ("split(country, device)", ["split()", "string literal", "split(tags, '|')"]),
    ("split(country, 1)", ["split()", "string literal"]),
    ("coalesce(price, 'x')", ["coalesce()", "float and string", "coalesce(price, 0)"]),
    ("coalesce(country, 0)", ["coalesce()", "string and int"]),
    ("str(price)", ["str()", "`price` is float", "integers only"]),
    ("str(country)", ["str()", "`country` is string"]),
    ("float(country)", ["float()", "`country` is string"]),
    ("lower(split(country, '|'))", ["lower()", "list_string"]),
    ("nope + 1", ["unknown column `nope`", "country, device"]),
    ("log(2) * price", ["log() is applied to constants only", "write the number"]),
    ("1 + 2", ["constants only"]),
    ("7", ["reads no column", "default_value"]),
]


@pytest.mark.parametrize("expr,words", TYPE_ERRORS)
def test_type_errors_name_feature_expression_and_fix(expr, words):
    with pytest.raises(SpecError) as info:
        check(parse(expr), COLUMNS, feature="derived", expr=expr)
    message = str(info.value)
    assert message.startswith(f"feature 'derived': `expr` {expr!r}: ")
    for word in words:
        assert word in message


def test_unknown_column_type_is_refused():
    with pytest.raises(SpecError, match="Received: price='double'"):
        check(parse("price"), {"price": "double"})
