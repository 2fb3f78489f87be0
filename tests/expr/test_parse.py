"""Parser tests: the whitelist, one case per forbidden construct, and hand-written trees."""

from __future__ import annotations

import pytest

from beam_prep.errors import SpecError
from beam_prep.expr import Call, Column, Literal, parse

# (expression, offending piece the message must name, a word of the fix)
FORBIDDEN = [
    ("city.lower()", "city.lower", "bare"),
    ("price.real", "price.real", "whitelist"),
    ("tags[0]", "tags[0]", "whitelist"),
    ("(lambda x: x)(price)", "lambda x: x", "function name"),
    ("lambda x: x", "lambda x: x", "whitelist"),
    ("[p for p in price]", "[p for p in price]", "whitelist"),
    ("{p: 1 for p in price}", "{p: 1 for p in price}", "whitelist"),
    ("sum(p for p in price)", "sum", "Use one of"),
    ("log(price, base=2)", "log(price, base=2)", "by position"),
    ("concat(*cols)", "concat(*cols)", "one by one"),
    ("eval('1')", "eval", "Use one of"),
    ("__import__('os')", "__import__", "Use one of"),
    ("unknown_fn(price)", "unknown_fn", "Use one of"),
    ("price(1)", "price", "Use one of"),
    ("log1p(price)(2)", "log1p(price)", "bare"),
    ("price ** 2", "price ** 2", "+ - * /"),
    ("price // 2", "price // 2", "+ - * /"),
    ("price % 2", "price % 2", "+ - * /"),
    ("~qty", "~qty", "whitelist"),
    ("not price", "not price", "whitelist"),
    ("price > 1", "price > 1", "whitelist"),
    ("price and qty", "price and qty", "whitelist"),
    ("price if qty else 1", "price if qty else 1", "whitelist"),
    ("(x := price)", "x := price", "whitelist"),
    ("f'{price}'", "f'{price}'", "whitelist"),
    ("[price]", "[price]", "whitelist"),
    ("(price, qty)", "price, qty", "whitelist"),
    ("True", "True", "numeric literal"),
    ("None", "None", "numeric literal"),
    ("b'x'", "b'x'", "numeric literal"),
    ("1j", "1j", "numeric literal"),
    ("concat(city, '')", "empty string", "coalesce"),
    ("price + 1e999", "1e999", "finite"),
    ("qty + 99999999999999999999", "99999999999999999999", "int64"),
    ("log1p", "log1p", "Call it"),
    ("log1p()", "log1p()", "docs/expressions.md"),
    ("clip(price, 0)", "clip(price, 0)", "docs/expressions.md"),
    ("concat(city)", "concat(city)", "docs/expressions.md"),
    ("split(tags)", "split(tags)", "docs/expressions.md"),
    ("price +", "not a Python expression", "brackets"),
    ("x = 1", "not a Python expression", "brackets"),
    ("price; qty", "not a Python expression", "brackets"),
    ("", "empty", "expr: log1p(price)"),
]


@pytest.mark.parametrize("expr,piece,fix", FORBIDDEN)
def test_forbidden_constructs_are_spec_errors_naming_feature_expr_piece_and_fix(expr, piece,
                                                                                  fix):
    with pytest.raises(SpecError) as info:
        parse(expr, feature="derived")
    message = str(info.value)
    assert "feature 'derived'" in message
    assert repr(expr) in message
    assert piece in message
    assert fix in message


def test_spec_error_is_also_a_value_error():
    with pytest.raises(ValueError):
        parse("price.real")


def test_operators_and_calls_build_the_expected_tree():
    assert parse("price / (qty + 1)") == Call(
        "divide", (Column("price"), Call("add", (Column("qty"), Literal(1)))))
    assert parse("clip(age, -1, 100.5)") == Call(
        "clip", (Column("age"), Literal(-1), Literal(100.5)))
    assert parse("-price") == Call("negate", (Column("price"),))
    assert parse("+price") == Column("price")
    assert parse("lower(strip(city))") == Call("lower", (Call("strip", (Column("city"),)),))
    assert parse("split(tags, '|')") == Call("split", (Column("tags"), Literal("|")))
    assert parse("a - b * c") == Call(
        "subtract", (Column("a"), Call("multiply", (Column("b"), Column("c")))))
    assert parse("  cross(a, b, c)  ") == Call("cross", (Column("a"), Column("b"), Column("c")))


def test_every_function_of_the_issue_is_in_the_table():
    from beam_prep.expr import FUNCTIONS

    issue = {"log1p", "log", "exp", "sqrt", "abs", "clip", "minimum", "maximum", "floor",
             "lower", "upper", "strip", "concat", "cross", "split", "coalesce", "float", "str"}
    assert set(FUNCTIONS) == issue


def test_docs_table_lists_every_function():
    import pathlib

    from beam_prep.expr import FUNCTIONS

    root = pathlib.Path(__file__).resolve().parents[2]
    text = (root / "docs" / "expressions.md").read_text(encoding="utf-8")
    for name in FUNCTIONS:
        assert f"| `{name}(" in text or f", `{name}(" in text, name
