"""The label-aware vocabulary fields of string and integer features, and their checks.

``labels: <column>`` ranks a feature's vocabulary by mutual information with an integer
label column, as ``tft.vocabulary(labels=...)`` does (docs/label_vocabulary.md). The three
tuning fields only make sense with ``labels``:

=======================  =============================================  =====================
field                    meaning                                        TFT argument
=======================  =============================================  =====================
``labels``               integer label column (values >= 0)             ``labels``
``adjusted_mutual_info`` rank by MI minus its expectation by chance     ``use_adjusted_mutual_info``
``min_diff_from_avg``    smoothing: a (token, label) count closer than  ``min_diff_from_avg``
                         this to its expectation adds nothing
``min_mutual_info``      drop tokens scoring below this                 ``frequency_threshold``
=======================  =============================================  =====================

Example:
    >>> from beam_prep.spec import StringFeature
    >>> StringFeature("city", labels="clicked", min_diff_from_avg=2).validate()
    >>> StringFeature("city", adjusted_mutual_info=True).validate()
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: Feature 'city': `adjusted_mutual_info` must be false unless \
`labels` names a label column (set `labels: <column>`, or drop `adjusted_mutual_info`). \
Received: adjusted_mutual_info=True
"""

from __future__ import annotations

import math
from typing import Any

from beam_prep.config import field_error, shown

LABEL_OPTIONS = ("adjusted_mutual_info", "min_diff_from_avg", "min_mutual_info")
_DEFAULTS = {"adjusted_mutual_info": False, "min_diff_from_avg": None, "min_mutual_info": None}


def _error(feature: str, field: str, value: Any, allowed: str) -> Exception:
    return field_error(f"Feature {shown(feature, 80)}", field, value, allowed)


def has_labels(feature: Any) -> bool:
    """Whether a feature's vocabulary is ranked by mutual information with a label column.

    Example:
        >>> from beam_prep.spec import StringFeature
        >>> has_labels(StringFeature("a", labels="y")), has_labels(StringFeature("a"))
        (True, False)
    """
    return getattr(feature, "labels", None) is not None


def check_label_fields(f: Any) -> None:
    """Ranges and combinations of the label fields (types are checked by the loader).

    Raises:
        SpecError: One line naming the feature, the field, the value and the fix.
    """
    if f.labels is None:
        for name in LABEL_OPTIONS:
            value = getattr(f, name)
            if value != _DEFAULTS[name]:
                raise _error(f.name, name, value,
                             f"{'false' if name == 'adjusted_mutual_info' else 'null'} unless "
                             "`labels` names a label column (set `labels: <column>`, or drop "
                             f"`{name}`)")
        return
    if not isinstance(f.labels, str) or not f.labels:
        raise _error(f.name, "labels", f.labels, "the name of an integer label column or null")
    if f.min_diff_from_avg is not None and not (
            isinstance(f.min_diff_from_avg, (int, float))
            and not isinstance(f.min_diff_from_avg, bool)
            and math.isfinite(f.min_diff_from_avg) and f.min_diff_from_avg >= 0):
        raise _error(f.name, "min_diff_from_avg", f.min_diff_from_avg,
                     "a finite number >= 0 or null (null = TFT's recommendation from the "
                     "number of rows: 2 up to 10,000 rows, rising to 25 at 1,000,000)")
    if f.min_mutual_info is not None and not (
            isinstance(f.min_mutual_info, (int, float))
            and not isinstance(f.min_mutual_info, bool) and math.isfinite(f.min_mutual_info)):
        raise _error(f.name, "min_mutual_info", f.min_mutual_info,
                     "a finite number or null (tokens scoring below it are dropped)")
    if f.labels == f.source_column and f.expr is None:
        raise _error(f.name, "labels", f.labels,
                     "another column than the feature's own (a token would predict itself)")
