"""Issue 21 (hostile review): user keys and values in messages never reach the terminal raw.

A spec key like ``"bogus\\x1b[2J"`` used to be echoed as is (an ANSI "clear screen");
``field_error``, ``child_where`` and ``shown`` show non-printable characters escaped as
``repr`` does (``\\x1b``, ``\\u202e``), so every message built from them is safe.
"""

from __future__ import annotations

import pytest

from beam_prep.config.build import child_where, field_error, shown
from beam_prep.errors import SpecError
from beam_prep.spec import Spec

HOSTILE = ["bogus\x1b[2J", "a\u202eb", "line\nbreak", "nul\x00", "bell\x07", "del\x7f",
           "c1\x9b31m"]


def _safe(text: str) -> bool:
    return all(ch.isprintable() for ch in text)


@pytest.mark.parametrize("key", HOSTILE)
def test_unknown_spec_key_is_shown_escaped(key):
    with pytest.raises(SpecError) as info:
        Spec.from_dict({"features": [{"name": "a", "kind": "numeric", key: 1}]})
    message = str(info.value)
    assert _safe(message), repr(message)
    # repr's own escape of the key (without its quotes) is what the user reads
    assert f"`{repr(key)[1:-1]}`" in message


@pytest.mark.parametrize("key", HOSTILE)
def test_top_level_unknown_key_and_value_are_escaped(key):
    with pytest.raises(SpecError) as info:
        Spec.from_dict({key: key})
    assert _safe(str(info.value)), repr(str(info.value))


def test_helpers_escape_what_they_are_given():
    assert _safe(str(field_error("`data`", "x\x1b[2J", "v\x1b", "a number")))
    assert child_where("`data`", "k\x1b") == "`data.k\\x1b`"
    assert child_where("", "ok") == "`ok`"

    class Loud:
        def __repr__(self) -> str:
            return "<\x1b[31mred\x1b[0m>"

    assert shown(Loud()) == "<\\x1b[31mred\\x1b[0m>"
    assert shown("plain") == "'plain'"  # printable text is unchanged
