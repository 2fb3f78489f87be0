"""The registry of analysis families (:mod:`beam_prep.analyzers.family`), in output order.

The split DoFn, the cache, the pipeline graph and the manifest loop over :data:`FAMILIES`,
read when they run (``families.FAMILIES``, never a copy taken at import); a new family is
its subpackage plus one line here.

Example:
    >>> by_tag("per_key").label
    'PerKey'
"""

from __future__ import annotations

from typing import Any

from beam_prep.analyzers.family import AnalysisFamily
from beam_prep.analyzers.label.family import LABELS
from beam_prep.analyzers.per_key.family import PER_KEY
from beam_prep.analyzers.per_key_buckets.family import PER_KEY_BUCKETS
from beam_prep.analyzers.target.family import TARGET

FAMILIES: tuple[AnalysisFamily, ...] = (
    LABELS,
    TARGET,
    PER_KEY,
    PER_KEY_BUCKETS,
)


def own_vocabularies(spec: Any) -> set[str]:
    """The features whose vocabulary a family writes (they skip the count-ranked path).

    Example:
        >>> from beam_prep.spec import Spec, StringFeature
        >>> own_vocabularies(Spec([StringFeature("a", labels="y"), StringFeature("b")]))
        {'a'}
    """
    return {f.name for family in FAMILIES if family.replaces_vocabulary
            for f in family.features(spec)}


def by_tag(tag: str) -> AnalysisFamily:
    """The registered family with output tag ``tag`` (KeyError if none)."""
    for family in FAMILIES:
        if family.tag == tag:
            return family
    raise KeyError(tag)
