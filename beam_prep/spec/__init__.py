"""Feature spec: frozen dataclasses, YAML loading and validation.

* :mod:`beam_prep.spec.features`: the five feature kinds (string, integer, text, numeric,
  hashed), their options and range checks.
* :mod:`beam_prep.spec.loading`: documents (YAML / dict) to features; JSON Schema of
  ``spec.yaml``.
* :mod:`beam_prep.spec.document`: :class:`Spec`, the ordered, uniquely named features.

Every public name is importable from ``beam_prep.spec``.

Example:
    >>> spec = Spec.from_yaml_text('''
    ... features:
    ...   - {name: country, kind: string, top_k: 10, min_count: 2}
    ...   - {name: price, kind: numeric, num_buckets: 4}
    ... ''')
    >>> spec.feature("country").top_k
    10
"""

from __future__ import annotations

from beam_prep.spec.document import Spec
from beam_prep.spec.features import (
    HASHED_DTYPES,
    KIND_CLASSES,
    KINDS,
    LOOKUP_OUTPUT_MODES,
    SCALING_OPTIONS,
    SPLIT_OPTIONS,
    STANDARDIZE_OPTIONS,
    TEXT_OUTPUT_MODES,
    Feature,
    HashedDtype,
    HashedFeature,
    IntegerFeature,
    Kind,
    LookupOutputMode,
    NumericFeature,
    Scaling,
    Split,
    Standardize,
    StringFeature,
    TextFeature,
    TextOutputMode,
    VocabularyFeature,
)
from beam_prep.spec.loading import (
    SPEC_VERSION,
    SpecFile,
    feature_from_dict,
    features_from_document,
    spec_json_schema,
)
from beam_prep.spec.target_fields import TargetEncoding

__all__ = [
    "HASHED_DTYPES",
    "KINDS",
    "KIND_CLASSES",
    "LOOKUP_OUTPUT_MODES",
    "SCALING_OPTIONS",
    "SPEC_VERSION",
    "SPLIT_OPTIONS",
    "STANDARDIZE_OPTIONS",
    "TEXT_OUTPUT_MODES",
    "Feature",
    "HashedDtype",
    "HashedFeature",
    "IntegerFeature",
    "Kind",
    "LookupOutputMode",
    "NumericFeature",
    "Scaling",
    "Spec",
    "SpecFile",
    "Split",
    "Standardize",
    "StringFeature",
    "TargetEncoding",
    "TextFeature",
    "TextOutputMode",
    "VocabularyFeature",
    "feature_from_dict",
    "features_from_document",
    "spec_json_schema",
]
