"""Thresholds of the drift flags raised by ``beam-prep diff``.

A flag is raised when a measured value is strictly greater than its threshold. Every
threshold is a non-negative finite number (:data:`INT_FIELDS` positive integers).

Example:
    >>> DiffThresholds(max_jsd=0.2).max_jsd
    0.2
    >>> DiffThresholds(max_jsd=-1)
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: `max_jsd` must be a non-negative finite number. Received: max_jsd=-1
"""

from __future__ import annotations

import dataclasses
import math

from beam_prep.config import field_error

#: The thresholds that are counts (positive integers), not measures.
INT_FIELDS = ("top_k", "top_n", "min_shift_rows")


@dataclasses.dataclass(frozen=True)
class DiffThresholds:
    """When a feature's change counts as drift.

    Attributes:
        max_jsd: Jensen-Shannon divergence (base 2, in [0, 1]) of the vocabulary token
            distributions.
        max_oov_share: Share of NEW's values whose token is not in OLD's vocabulary.
        max_size_change: ``|new size - old size| / max(old size, 1)`` of a vocabulary.
        max_top_k_index_changed: Share of OLD's first ``top_k`` tokens whose index changed
            (or that left the vocabulary).
        max_mean_shift: ``|new mean - old mean| / old std`` of a numeric feature.
        max_std_shift: ``|new std - old std| / old std`` (of a ``per_key`` key: in the
            key's own OLD std).
        max_boundary_shift: Largest ``|new - old|`` quantile boundary, in OLD std units (of
            a ``per_key`` key: its min/max or bucket boundaries, in its OLD range).
        max_rate_change: Absolute change of the missing, NaN or infinite rate (per row).
        max_target_shift: ``|new - old|`` global mean of a target encoding, in OLD's
            estimated label std units.
        max_token_shift: ``|new - old|`` encoding of one token, in OLD's estimated label std
            units, above which the token counts as shifted.
        max_shifted_share: Share of the frequent keys' (``per_key``) or tokens' (target
            encoding) OLD rows whose mean, std, range, boundaries or encoding shifted (keys:
            mean by more than ``max_mean_shift`` OLD global std units, std by more than
            ``max_std_shift``, range or boundaries by more than ``max_boundary_shift``;
            tokens: ``max_token_shift``).
        min_shift_rows: Rows a key or token needs on both sides to count as frequent.
        top_k: How many of OLD's first tokens the top-K index stability looks at.
        top_n: How many added / dropped tokens are listed per feature.
    """

    max_jsd: float = 0.05
    max_oov_share: float = 0.05
    max_size_change: float = 0.5
    max_top_k_index_changed: float = 0.25
    max_mean_shift: float = 0.5
    max_std_shift: float = 0.5
    max_boundary_shift: float = 0.5
    max_rate_change: float = 0.05
    max_target_shift: float = 0.1
    max_token_shift: float = 0.25
    max_shifted_share: float = 0.1
    min_shift_rows: int = 100
    top_k: int = 100
    top_n: int = 5

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in INT_FIELDS:
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise field_error("", f.name, value, "a positive integer")
            elif (isinstance(value, bool) or not isinstance(value, (int, float))
                  or not math.isfinite(value) or value < 0):
                raise field_error("", f.name, value, "a non-negative finite number")
