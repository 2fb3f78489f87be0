"""Example budgets of the hypothesis tests: small in the default run, larger for fuzzing.

Example:
    >>> examples(40)  # 40 in ``make test``; 40 * 25 with BEAM_PREP_FUZZ_SCALE=25
    40
"""

from __future__ import annotations

import os


def examples(n: int) -> int:
    """``n`` times ``BEAM_PREP_FUZZ_SCALE`` (default 1): the ``max_examples`` of one test."""
    scale = int(os.environ.get("BEAM_PREP_FUZZ_SCALE", "1"))
    if scale < 1:
        raise ValueError(f"BEAM_PREP_FUZZ_SCALE must be a positive integer. Received: {scale}")
    return n * scale
