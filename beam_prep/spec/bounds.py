"""Ranges of the feature spec's numeric fields, and why each bound is where it is.

Types are checked by :mod:`beam_prep.config` (every ``int`` field is int64 there); these are
the tighter bounds past which a value would fail late (a bad_alloc in the quantile sketch,
an int32 layer dimension) or cost without bound.

Example:
    >>> check_positive_int("t", "ngrams", 3, optional=True, maximum=MAX_NGRAMS)
    >>> check_positive_int("t", "ngrams", 0, optional=True)
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: Feature 't': `ngrams` must be a positive integer or null. \
Received: ngrams=0
"""

from __future__ import annotations

from typing import Any

from beam_prep.config import field_error, shown

#: Largest ``ngrams``: every width is one more pass over every token of the batch, and
#: n-grams wider than a phrase are nearly all distinct (a vocabulary as large as the corpus).
MAX_NGRAMS = 16
#: Largest ``num_buckets`` and smallest ``epsilon`` (TFT's default epsilon is
#: ``1 / num_buckets``). The tfx-bsl quantile sketch buffers about ``log2(eps * N) / eps``
#: values per feature and worker: measured on 20M rows, 0.25 GB above the baseline at
#: ``eps=1e-5``, 1.2 GB at ``1e-6``; at ``1e-9`` its constructor fails with bad_alloc.
MAX_NUM_BUCKETS = 1_000_000
MIN_EPSILON = 1e-6
#: Largest size of a layer dimension (``num_bins``, ``num_oov_indices``, ``max_tokens``,
#: ``output_sequence_length``, ``max_values``): Keras' CategoryEncoding / ``tf.one_hot``
#: take an int32 depth, and padded outputs an int32 length.
MAX_LAYER_SIZE = 2**31 - 1


LAYER_WHY = "a layer dimension: Keras one-hot and padded outputs take an int32 size"


def check_positive_int(feature: str, field: str, value: Any, *, optional: bool,
                       minimum: int = 1, maximum: int | None = None, why: str = "") -> None:
    """SpecError unless ``value`` is an int in ``[minimum, maximum]`` (or null if optional).

    ``why`` is added to the message when the value is above ``maximum``.
    """
    if value is None and optional:
        return
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or (maximum is not None and value > maximum)):
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        too_large = maximum is not None and isinstance(value, int) and value > maximum
        if too_large:
            what += f" no larger than {maximum:,}"
        if optional:
            what += " or null"
        raise field_error(f"Feature {shown(feature, 80)}", field, value,
                          what + (f" ({why})" if why and too_large else ""))
