"""Drift of the value ``impute`` fills missing cells with (``stats.imputed_value``).

Compared when either manifest records an imputed value:

* numeric (``mean``, ``median``): ``shift = (new - old) / old std`` (population std of OLD,
  as :mod:`beam_prep.diff.numeric`), flagged above ``max_mean_shift``; None when a value is
  null or OLD's std is 0 (then ``changed`` says whether it moved);
* integer and string (``most_frequent``): ``changed`` — every missing cell now encodes as
  another category, always flagged.

Example:
    >>> d = compare_imputed({"imputed_value": 1.0, "variance": 4.0},
    ...                     {"imputed_value": 2.0}, "mean")
    >>> d.shift, d.changed
    (0.5, True)
    >>> compare_imputed({}, {}, None) is None
    True
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any


@dataclasses.dataclass(frozen=True)
class ImputedDiff:
    """How one feature's imputed value changed.

    Attributes:
        strategy: NEW's ``impute`` (OLD's when NEW has none).
        old: OLD imputed value (None: no value, or no ``impute`` in OLD).
        new: NEW imputed value.
        changed: The values differ.
        shift: Numeric only: ``(new - old) / old std``; None when not computable.
    """

    strategy: str
    old: Any
    new: Any
    changed: bool
    shift: float | None = None


def compare_imputed(old: dict[str, Any], new: dict[str, Any],
                    strategy: str | None) -> ImputedDiff | None:
    """The comparison, or None when neither side records an imputed value."""
    if "imputed_value" not in old and "imputed_value" not in new:
        return None
    a, b = old.get("imputed_value"), new.get("imputed_value")
    shift = None
    numeric = all(isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool))
                  for v in (a, b))
    if numeric and strategy in ("mean", "median") and a is not None and b is not None:
        variance = old.get("variance")
        std = math.sqrt(variance) if isinstance(variance, (int, float)) and variance > 0 \
            else 0.0
        if std > 0:
            value = (float(b) - float(a)) / std
            shift = value if math.isfinite(value) else None
    return ImputedDiff(strategy or "", a, b, a != b, shift)
