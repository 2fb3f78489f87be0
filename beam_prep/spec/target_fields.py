"""The ``target_encoding`` field of string and integer features, and its checks.

``target_encoding`` asks the analysis for the mean of a numeric label per category,
smoothed toward the label's global mean, on ``folds`` folds of the rows (NVTabular's
``TargetEncoding``; docs/target_encoding.md):

    encoding(token) = (label_sum + smoothing * global_mean) / (rows + smoothing)

A row's fold is a stable hash of its ``fold_column`` value modulo ``folds``: the same
whatever the sharding, and never the row's content (which holds the label).

Example:
    >>> from beam_prep.spec import StringFeature
    >>> te = TargetEncoding(labels="clicked", fold_column="user_id", folds=5)
    >>> StringFeature("city", target_encoding=te).validate()
    >>> StringFeature("city", target_encoding=TargetEncoding("y", "y", folds=1)).validate()
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: Feature 'city': `target_encoding.folds` must be an integer \
from 2 to 1000 (each row's statistics leave its own fold out). Received: \
target_encoding.folds=1
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from beam_prep.config import field_error, shown

MAX_FOLDS = 1000


@dataclasses.dataclass(frozen=True)
class TargetEncoding:
    """Out-of-fold target encoding of a categorical feature.

    Attributes:
        labels: A numeric (float or integer) label column; rows where it is missing or
            not finite do not count.
        fold_column: The column whose value sets a row's fold (a stable hash of its
            value modulo ``folds``), e.g. a user or session id. Required: hashing the row
            would include its label.
        folds: Number of folds (>= 2).
        smoothing: Weight of the global mean (>= 0; 0 = the raw mean per category).

    Example:
        >>> TargetEncoding("y", "user").smoothing
        20.0
    """

    labels: str
    fold_column: str
    folds: int = 5
    smoothing: float = 20.0


def has_target_encoding(feature: Any) -> bool:
    """Whether a feature asks for a target encoding.

    Example:
        >>> from beam_prep.spec import StringFeature
        >>> has_target_encoding(StringFeature("a"))
        False
    """
    return getattr(feature, "target_encoding", None) is not None


def _error(feature: str, field: str, value: Any, allowed: str) -> Exception:
    return field_error(f"Feature {shown(feature, 80)}", f"target_encoding.{field}", value,
                       allowed)


def check_target_fields(f: Any) -> None:
    """Ranges and combinations of ``target_encoding`` (types are checked by the loader).

    Raises:
        SpecError: One line naming the feature, the field, the value and the fix.
    """
    te = f.target_encoding
    if te is None:
        return
    for name in ("labels", "fold_column"):
        value = getattr(te, name)
        if not isinstance(value, str) or not value:
            raise _error(f.name, name, value, "the name of an input column")
    if isinstance(te.folds, bool) or not isinstance(te.folds, int) or not (
            2 <= te.folds <= MAX_FOLDS):
        raise _error(f.name, "folds", te.folds, f"an integer from 2 to {MAX_FOLDS} (each "
                     "row's statistics leave its own fold out)")
    if isinstance(te.smoothing, bool) or not isinstance(te.smoothing, (int, float)) or not (
            math.isfinite(te.smoothing) and te.smoothing >= 0):
        raise _error(f.name, "smoothing", te.smoothing, "a finite number >= 0")
    own = f.source_column if f.expr is None else None
    if te.labels == own:
        raise _error(f.name, "labels", te.labels,
                     "another column than the feature's own (a token would encode itself)")
    if te.labels == te.fold_column:
        raise _error(f.name, "fold_column", te.fold_column,
                     "another column than `labels` (folds must not depend on the label)")
    if f.is_list():
        raise _error(f.name, "labels", te.labels, "null on a list feature (target encoding "
                     "takes one value per row; drop `shape: list` or `target_encoding`)")
