"""Frozen dataclasses built from mappings, checked against their type hints.

One mechanism serves every configuration of beam_prep (feature spec, training config, ELWC
options, ``feature_spec.json``). The type hints of the dataclass are the contract:

=======================  ==================================  ===========================
annotation               accepted                            stored
=======================  ==================================  ===========================
``str``/``int``/``bool``  that type (``bool`` is no ``int``)  as given
``float``                int or float                        float
``Literal["a", "b"]``    one of the options                  as given
``X | None``             null or an ``X``                    as given
``tuple[X, ...]``        list or tuple of ``X``              tuple
``tuple[X, Y]``          list or tuple of two                tuple
a dataclass              a mapping (a nested section)        the dataclass, built here
=======================  ==================================  ===========================

Fields with ``init=False`` and a default (e.g. a feature's ``kind``) are constants: the key is
allowed and must hold that value. Unknown keys are errors listing the allowed keys, with a "did
you mean" suggestion. After construction, a ``validate()`` method, if the class has one, runs
the range checks the types cannot express.

Every message has one shape: ``<where>: `<field>` must be <allowed>. Received: <field>=<value>``
where ``<where>`` names the enclosing section (```data```, ``Feature 'price'``) and is left out
at the top level.

Example:
    >>> import dataclasses
    >>> from typing import Literal
    >>> @dataclasses.dataclass(frozen=True)
    ... class Opt:
    ...     mode: Literal["a", "b"] = "a"
    ...     sizes: tuple[int, ...] = ()
    >>> from_mapping(Opt, {"sizes": [1, 2]})
    Opt(mode='a', sizes=(1, 2))
    >>> from_mapping(Opt, {"mdoe": "b"}, where="`opt`")
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: `opt`: `mdoe` must be one of the known keys ['mode', 'sizes'] \
(did you mean `mode`?). Received: mdoe='b'
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import reprlib
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from beam_prep.errors import SpecError

T = TypeVar("T")

_NONE = type(None)


#: Longest echo of a received value in a message: a hostile value (a 10 MB string, a YAML
#: alias bomb that expands to millions of items) must not make a 580 MB error message.
MAX_SHOWN = 200

#: Integers of every ``int`` field are int64: the readers, the manifest and TensorFlow hold
#: them as int64; a larger value would overflow there (late, as a traceback) or in numpy.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 8, 8, 8
_REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxarray = 8
_REPR.maxstring, _REPR.maxlong, _REPR.maxother = MAX_SHOWN, MAX_SHOWN, MAX_SHOWN


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters (``...`` marks a cut).

    Nested containers are summarised without being walked whole (``reprlib``), so showing
    a value costs little whatever its size.

    Example:
        >>> shown("x" * 1000)[-8:], len(shown("x" * 1000))
        ("xxxxx...", 200)
        >>> shown([[1, 2]] * 10**6)
        '[[1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], ...]'
    """
    text = printable(_REPR.repr(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def printable(text: str) -> str:
    """``text`` with every non-printable character escaped as ``repr`` does (no quotes).

    Keys and values from a spec or a data file reach the terminal only through this (or
    :func:`shown`): an ESC sequence, a line break or a bidi control is shown, not obeyed.

    Example:
        >>> printable("bogus\\x1b[2J"), printable("price/usd")
        ('bogus\\\\x1b[2J', 'price/usd')
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


class _Mismatch(Exception):
    """A value does not fit a type; turned into a SpecError for the whole field."""


def field_error(where: str, field: str, value: Any, allowed: str) -> SpecError:
    """The one error shape: ``<where>: `<field>` must be <allowed>. Received: <field>=<v>``.

    Args:
        where: The enclosing section (``"`data`"``, ``"Feature 'price'"``); ``""`` at the top.
        field: The key.
        value: The value received.
        allowed: What is allowed, e.g. ``"a positive integer"``.

    Example:
        >>> str(field_error("`data`", "list_size", 0, "a positive integer"))
        '`data`: `list_size` must be a positive integer. Received: list_size=0'
    """
    prefix = f"{printable(where)}: " if where else ""
    field = printable(field)
    field = field if len(field) <= 80 else field[:77] + "..."
    return SpecError(f"{prefix}`{field}` must be {allowed}. Received: {field}={shown(value)}")


def child_where(where: str, key: str) -> str:
    """The ``where`` of a nested section: ```data``` then ```data.sub```.

    Example:
        >>> child_where("", "data"), child_where("`data`", "sub"), child_where("`a`", "[0]")
        ('`data`', '`data.sub`', '`a[0]`')
    """
    key = printable(key)
    if not where:
        return f"`{key}`"
    if where.startswith("`") and where.endswith("`"):
        sep = "" if key.startswith("[") else "."
        return f"`{where[1:-1]}{sep}{key}`"
    return f"{where}, `{key}`"


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    """Resolved type hints of a dataclass (string annotations evaluated once)."""
    return typing.get_type_hints(cls)


def constant_fields(cls: type) -> dict[str, Any]:
    """Fields with ``init=False`` and a default: keys that must hold that value.

    Example:
        >>> from beam_prep.spec import NumericFeature
        >>> constant_fields(NumericFeature)
        {'kind': 'numeric'}
    """
    return {f.name: f.default for f in dataclasses.fields(cls)
            if not f.init and f.default is not dataclasses.MISSING}


def known_keys(cls: type) -> tuple[str, ...]:
    """Keys a mapping for ``cls`` may hold, in declaration order."""
    consts = constant_fields(cls)
    return tuple(f.name for f in dataclasses.fields(cls) if f.init or f.name in consts)


def check_keys(raw: Mapping[Any, Any], allowed: Sequence[str], where: str) -> None:
    """Raises SpecError naming the first unknown key, the allowed keys and the closest one.

    Example:
        >>> check_keys({"top_k": 1}, ["top_k", "min_count"], "")
        >>> check_keys({"topk": 1}, ["top_k", "min_count"], "")
        Traceback (most recent call last):
        ...
        beam_prep.errors.SpecError: `topk` must be one of the known keys ['top_k', \
'min_count'] (did you mean `top_k`?). Received: topk=1
    """
    unknown = [k for k in raw if k not in allowed]
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(str(key)[:MAX_SHOWN], list(allowed), n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    more = (f"; other unknown keys: {shown([str(k) for k in unknown[1:]])}"
            if len(unknown) > 1 else "")
    raise field_error(where, str(key), raw[key],
                      f"one of the known keys {list(allowed)}{hint}{more}")


def describe(tp: Any) -> str:
    """What a type annotation accepts, in words ("an integer or null").

    Example:
        >>> describe(int | None), describe(tuple[int, ...]), describe(Literal["a", "b"])
        ('an integer or null', 'a list of integers', "one of 'a', 'b'")
    """
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        arms = [describe(a) for a in get_args(tp) if a is not _NONE]
        words = " or ".join(arms) if len(arms) < 3 else ", ".join(arms[:-1]) + " or " + arms[-1]
        return words + (" or null" if _NONE in get_args(tp) else "")
    if origin is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            item = describe(args[0])
            for article in ("an ", "a "):
                if item.startswith(article):
                    item = item[len(article):]
            plural = {"true or false": "booleans", "number": "numbers", "integer": "integers",
                      "string": "strings"}.get(item, item)
            return f"a list of {plural}"
        items = ", ".join(describe(a) for a in args)
        return f"a list of {len(args)} items ({items})"
    if dataclasses.is_dataclass(tp):
        return f"a mapping ({tp.__name__})"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            Any: "any value"}.get(tp, getattr(tp, "__name__", str(tp)))


def _native(tp: Any, value: Any) -> bool:
    """True when ``value`` already is a ``tp`` without conversion (union arm preference)."""
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp in (float, str, bool):
        return isinstance(value, tp)
    return False


def _coerce(tp: Any, value: Any, where: str, field: str) -> Any:
    """``value`` converted to ``tp``; _Mismatch if it does not fit (SpecError if nested)."""
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        if any(value == a and type(value) is type(a) for a in get_args(tp)):
            return value
        raise _Mismatch
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None:
            if _NONE in args:
                return None
            raise _Mismatch
        arms = [a for a in args if a is not _NONE]
        if len(arms) == 1:
            return _coerce(arms[0], value, where, field)
        for arm in sorted(arms, key=lambda a: not _native(a, value)):
            try:
                return _coerce(arm, value, where, field)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin is tuple:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise _Mismatch
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(value)
        elif len(args) != len(value):
            raise _Mismatch
        return tuple(_coerce(a, v, where, f"{field}[{i}]")
                     for i, (a, v) in enumerate(zip(args, value)))
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if isinstance(value, Mapping):
            return from_mapping(tp, value, where=child_where(where, field))
        raise _Mismatch
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:  # an int beyond float64 (10**400)
                raise field_error(where, field, value, "a number within the float64 range "
                                  "(about ±1.8e308)") from None
        raise _Mismatch
    if tp is int and _native(int, value) and not INT64_MIN <= value <= INT64_MAX:
        raise field_error(where, field, value, "an integer in the int64 range [-2**63, "
                          "2**63 - 1] (the readers, the manifest and TensorFlow hold int64)")
    if tp is str and isinstance(value, str):
        _check_unicode(value, where, field)
    if _native(tp, value):
        return value
    raise _Mismatch


def _check_unicode(value: str, where: str, field: str) -> None:
    """SpecError when ``value`` holds a lone surrogate (it has no UTF-8 form)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise field_error(where, field, value, f"valid Unicode text (it holds the lone "
                          f"surrogate {value[e.start]!r} at index {e.start}, which has no "
                          "UTF-8 form; remove it or write the character it was meant to "
                          "pair with)") from None


def coerce_field(tp: Any, value: Any, where: str, field: str) -> Any:
    """``value`` as the annotation ``tp`` expects, or SpecError naming the field.

    Example:
        >>> coerce_field(tuple[int, ...], [1, 2], "", "sizes")
        (1, 2)
    """
    try:
        return _coerce(tp, value, where, field)
    except _Mismatch:
        allowed = describe(tp)
        if isinstance(value, str) and ("integer" in allowed or "number" in allowed) \
                and _looks_numeric(value):
            allowed += (" (YAML reads a number written like 1e23 as text: write digits for "
                        "an integer, or 1.0e+23 with a dot for a float)")
        elif isinstance(value, float) and "integer" in allowed and "number" not in allowed:
            allowed += " (a float such as 1e23 or 2.0 is not an integer: write digits)"
        elif isinstance(value, str):
            allowed += did_you_mean(value, _literal_options(tp))
        raise field_error(where, field, value, allowed) from None


def _literal_options(tp: Any) -> list[str]:
    """The string options of a ``Literal`` (or of the Literal arms of a union)."""
    if get_origin(tp) is Literal:
        return [a for a in get_args(tp) if isinstance(a, str)]
    if get_origin(tp) in (Union, types.UnionType):
        return [o for arm in get_args(tp) for o in _literal_options(arm)]
    return []


def did_you_mean(value: str, options: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the option closest to a misspelt ``value``, else ``""``.

    Example:
        >>> did_you_mean("strin", ["string", "integer"])
        " (did you mean 'string'?)"
    """
    close = difflib.get_close_matches(value[:MAX_SHOWN], list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _looks_numeric(text: str) -> bool:
    """True for ``1e23``, ``-2E-5``: numbers YAML 1.1 reads as text (no dot before ``e``)."""
    if "e" not in text.lower():
        return False
    try:
        float(text[:MAX_SHOWN])
    except ValueError:
        return False
    return True


def from_mapping(cls: type[T], raw: Any, *, where: str = "") -> T:
    """Builds the frozen dataclass ``cls`` from a mapping (see the module docstring).

    Args:
        cls: A dataclass.
        raw: The mapping (parsed YAML or JSON).
        where: The section, for messages (```data```, ``Feature 'x'``); ``""`` at the top.

    Returns:
        The instance, after its ``validate()`` (if any) ran.

    Raises:
        SpecError: Not a mapping, unknown or missing key, value of the wrong type or option.
    """
    if not isinstance(raw, Mapping):
        what = where or f"A {cls.__name__}"
        raise SpecError(f"{what} must be a mapping of {list(known_keys(cls))}. "
                        f"Received: {shown(raw)}")
    check_keys(raw, known_keys(cls), where)
    hints = type_hints(cls)
    for name, const in constant_fields(cls).items():
        if name in raw and raw[name] != const:
            raise field_error(where, name, raw[name], repr(const))
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name in raw:
            values[f.name] = coerce_field(hints[f.name], raw[f.name], where, f.name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            prefix = f"{where}: " if where else ""
            raise SpecError(f"{prefix}`{f.name}` must be given ({describe(hints[f.name])}). "
                            f"Received: no `{f.name}` key; add `{f.name}: <value>`.")
    obj = cls(**values)
    validate = getattr(obj, "validate", None)
    if callable(validate):
        validate()
    return obj


def check_fields(obj: Any, *, where: str = "", skip: Sequence[str] = ()) -> None:
    """Checks every field of a constructed dataclass against its annotation.

    For dataclasses built directly in Python (``__post_init__`` or ``validate()``): the same
    Literal options and types as :func:`from_mapping`, nothing converted (lists pass for
    tuples, ints for floats).

    Example:
        >>> from beam_prep.spec import StringFeature
        >>> check_fields(StringFeature("a", output_mode="dense"), where="Feature 'a'")
        Traceback (most recent call last):
        ...
        beam_prep.errors.SpecError: Feature 'a': `output_mode` must be one of 'int', \
'one_hot', 'multi_hot', 'count'. Received: output_mode='dense'
    """
    hints = type_hints(type(obj))
    for f in dataclasses.fields(obj):
        if f.name not in skip:
            coerce_field(hints[f.name], getattr(obj, f.name), where, f.name)
