"""Feature spec loading: YAML / dict documents to validated feature dataclasses.

The document (``spec.yaml``)::

    version: 1            # optional
    features:
      - {name: country, kind: string, top_k: 10}
      - {name: price, kind: numeric, num_buckets: 4}

Keys are checked by :func:`beam_prep.config.from_mapping` (unknown keys, types, options); the
YAML is read by :func:`beam_prep.config.load_yaml`, which refuses a key repeated in a mapping.
:data:`SpecFile` describes the document for :func:`spec_json_schema`.

Example:
    >>> features_from_document({"features": [{"name": "x", "kind": "numeric"}]})[0].kind
    'numeric'
    >>> spec_json_schema()["properties"]["version"]
    {'enum': [1], 'default': 1}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from beam_prep.config import (
    check_keys,
    coerce_field,
    did_you_mean,
    field_error,
    from_mapping,
    json_schema,
    known_keys,
    load_yaml,
    shown,
)
from beam_prep.errors import SpecError
from beam_prep.spec.features import KIND_CLASSES, KINDS, Feature
from beam_prep.spec.imputation import IMPUTE_OPTIONS, SYNONYM_KINDS, impute_synonym

SPEC_VERSION = 1
WHERE = "The spec"


@dataclasses.dataclass(frozen=True)
class SpecFile:
    """A feature spec document (``spec.yaml``).

    Attributes:
        features: The features, each a mapping with ``name``, ``kind`` and the kind's fields.
        version: Format version (1).
    """

    features: tuple[Feature, ...]
    version: Literal[1] = 1


def feature_from_dict(raw: Mapping[str, Any], position: int = 0) -> Feature:
    """Builds and validates one feature from a mapping (a YAML entry).

    Args:
        raw: Mapping with ``name``, ``kind`` and the kind's fields.
        position: Index in the spec, for error messages.

    Returns:
        The validated feature dataclass.

    Raises:
        SpecError: Unknown kind, unknown key, or a value out of range.

    Example:
        >>> feature_from_dict({"name": "x", "kind": "numeric"}).kind
        'numeric'
    """
    if not isinstance(raw, Mapping):
        raise SpecError(f"features[{position}] must be a mapping. Received: {shown(raw)}")
    name = raw.get("name", f"<features[{position}]>")
    where = f"Feature {shown(name, 80)}"
    kind = raw.get("kind")
    if kind not in KIND_CLASSES:
        raise field_error(where, "kind", kind, "one of " + ", ".join(repr(k) for k in KINDS)
                          + (did_you_mean(kind, KINDS) if isinstance(kind, str) else ""))
    cls = KIND_CLASSES[kind]
    check_keys(raw, known_keys(cls), where)
    if "name" not in raw:
        raise SpecError(f"features[{position}] has no `name`. Received: {shown(dict(raw))}")
    values = impute_synonym(kind, dict(raw), where)
    if kind == "text":
        for field in ("standardize", "split"):
            if field in values and values[field] is None:
                values[field] = "none"  # YAML reads a bare `none`-like null as None
    return from_mapping(cls, values, where=where)


def features_from_document(raw: Any) -> tuple[Feature, ...]:
    """The features of a parsed spec document (top-level keys and version checked).

    Raises:
        SpecError: With the feature, field, value and what is allowed.
    """
    if not isinstance(raw, Mapping):
        raise SpecError(
            "A spec must be a mapping with a `features` list. "
            f"Received: {type(raw).__name__}"
        )
    check_keys(raw, known_keys(SpecFile), WHERE)
    coerce_field(Literal[1], raw.get("version", SPEC_VERSION), WHERE, "version")
    features = raw.get("features")
    if not isinstance(features, list):
        raise field_error(WHERE, "features", features, "a list of features")
    return tuple(feature_from_dict(f, i) for i, f in enumerate(features))


def parse_yaml(text: str, *, source: str | None = None) -> Any:
    """The parsed spec document; SpecError on invalid YAML or a repeated key.

    ``source`` (the spec file) makes a syntax error point at ``path:line:col``.
    """
    return load_yaml(text, what=WHERE, source=source)


def spec_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of ``spec.yaml``, e.g. for editor completion.

    Features are told apart by ``kind`` (``oneOf``); unknown keys are refused.
    """
    schema = json_schema(SpecFile)
    schema["title"] = "beam_prep feature spec"
    for kind in SYNONYM_KINDS:  # `default_value: mean` there is read as `impute: mean`
        field = schema["$defs"][KIND_CLASSES[kind].__name__]["properties"]["default_value"]
        field["anyOf"].append({"enum": list(IMPUTE_OPTIONS)})
    return schema
