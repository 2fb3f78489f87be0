"""Configuration mechanism shared by every beam_prep config: mappings to frozen dataclasses.

* :mod:`beam_prep.config.build`: :func:`from_mapping` (unknown keys, Literal options, types,
  nested sections), :func:`check_fields` (the same checks on a dataclass built in Python) and
  :func:`field_error` (the one message shape).
* :mod:`beam_prep.config.schema`: :func:`json_schema` of a config class (draft 2020-12).
* :mod:`beam_prep.config.yaml_text`: :func:`load_yaml`, YAML that refuses repeated keys.

Example:
    >>> from beam_prep.ranking.train.hparams import DistributionHparams
    >>> from_mapping(DistributionHparams, {"strategy": "mirrored"}).strategy
    'mirrored'
"""

from __future__ import annotations

from beam_prep.config.build import (
    check_fields,
    check_keys,
    child_where,
    coerce_field,
    constant_fields,
    describe,
    did_you_mean,
    field_error,
    from_mapping,
    known_keys,
    shown,
)
from beam_prep.config.schema import json_schema
from beam_prep.config.yaml_text import DuplicateKeyError, UniqueKeyLoader, load_yaml

__all__ = [
    "DuplicateKeyError",
    "UniqueKeyLoader",
    "check_fields",
    "check_keys",
    "child_where",
    "coerce_field",
    "constant_fields",
    "describe",
    "did_you_mean",
    "field_error",
    "from_mapping",
    "json_schema",
    "known_keys",
    "load_yaml",
    "shown",
]
