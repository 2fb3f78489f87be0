"""JSON Schema (draft 2020-12) of a config dataclass, from the same type hints the loader uses.

Editors (VS Code YAML, PyCharm) use it for completion and to flag misspelt keys before a job
runs. Mapping of annotations: ``str``/``int``/``float``/``bool`` to the JSON types, ``Literal``
to ``enum``, ``X | None`` to ``anyOf`` with ``null``, ``tuple[X, ...]`` to an array,
``tuple[X, Y]`` to ``prefixItems``, a nested dataclass to a ``$ref`` into ``$defs``, a union
of dataclasses to ``oneOf`` (told apart by their constant fields, e.g. ``kind``). Every object
has ``additionalProperties: false``: unknown keys are errors, as in the loader.

Example:
    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Opt:
    ...     size: int | None = None
    >>> s = json_schema(Opt)
    >>> s["properties"]["size"], s["additionalProperties"]
    ({'anyOf': [{'type': 'integer'}, {'type': 'null'}], 'default': None}, False)
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Literal, Union, get_args, get_origin

from beam_prep.config.build import constant_fields, type_hints

DRAFT = "https://json-schema.org/draft/2020-12/schema"

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
    bool: {"type": "boolean"}, type(None): {"type": "null"}, Any: {},
}


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = get_origin(tp)
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (Union, types.UnionType):
        arms = get_args(tp)
        if all(dataclasses.is_dataclass(a) for a in arms):
            return {"oneOf": [_type_schema(a, defs) for a in arms]}
        return {"anyOf": [_type_schema(a, defs) for a in arms]}
    if origin is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0], defs)}
        return {"type": "array", "prefixItems": [_type_schema(a, defs) for a in args],
                "minItems": len(args), "maxItems": len(args)}
    if dataclasses.is_dataclass(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # placeholder: recursive classes terminate
            defs[tp.__name__] = _object_schema(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    raise TypeError(f"json_schema: no JSON Schema for the annotation {tp!r}")


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = type_hints(cls)
    consts = constant_fields(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        if f.name in consts:
            properties[f.name] = {"const": consts[f.name]}
            required.append(f.name)
            continue
        if not f.init:
            continue
        prop = _type_schema(hints[f.name], defs)
        if f.default is not dataclasses.MISSING:
            prop["default"] = _jsonable(f.default)
        elif f.default_factory is dataclasses.MISSING:
            required.append(f.name)
        properties[f.name] = prop
    out: dict[str, Any] = {"title": cls.__name__, "type": "object"}
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    if doc:
        out["description"] = " ".join(doc.split())
    out["properties"] = properties
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def json_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the config dataclass ``cls``.

    Args:
        cls: A dataclass whose fields use the annotations listed in the module docstring.

    Returns:
        A JSON-serialisable dict; nested dataclasses are under ``$defs``.

    Example:
        >>> from beam_prep.ranking.train.hparams import RankingHparams
        >>> json_schema(RankingHparams)["required"]
        ['data', 'training']
    """
    defs: dict[str, Any] = {}
    root = _object_schema(cls, defs)
    schema: dict[str, Any] = {"$schema": DRAFT, **root}
    if defs:
        schema["$defs"] = defs
    return schema
