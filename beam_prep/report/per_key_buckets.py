"""The per-key buckets part of a numeric feature's report card (``per_key`` + ``num_buckets``).

Read in one streaming pass over the checked bucket file (memory: the ten keys kept): the
number of keys, how many have exact boundaries (histogram level 0) and the coarsest grid
cell, then the ten keys with the most values and their boundaries. Keys are shown through
:func:`beam_prep.report.page.token` (escaped, control characters visible).

Example:
    >>> html = per_key_buckets_html(art, "price")                # doctest: +SKIP
"""

from __future__ import annotations

import heapq

from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.io.contract.per_key_buckets_file import rows_of
from beam_prep.report.page import fmt_int, fmt_num, kv_table, note, text, token

TOP = 10


def per_key_buckets_html(art: Artifacts, name: str) -> str:
    """Key count, exactness and the ten largest keys' boundaries (HTML)."""
    keys = exact = 0
    coarsest = 0
    top: list[tuple[int, str, list[float]]] = []
    for key, count, level, bounds in rows_of(art, name):
        keys += 1
        exact += level == 0
        coarsest = max(coarsest, level)
        item = (count, key, bounds)
        (heapq.heappush if len(top) < TOP else heapq.heappushpop)(top, item)
    if not keys:
        return note("per-key buckets: no key in the data (every row uses the global "
                    "boundaries).")
    accuracy = "all exact" if exact == keys else (
        f"{exact:,} exact; the others within a grid cell of 2^{coarsest} float64 codes "
        f"(about {2.0 ** (coarsest - 52):.1e} relative) of the exact quantile")
    rows = [("keys", fmt_int(keys)), ("boundaries", text(accuracy))]
    for count, key, bounds in sorted(top, key=lambda t: (-t[0], t[1])):
        rows.append((token(key), text(f"{count:,} values: "
                                      + ", ".join(fmt_num(b) for b in bounds))))
    return (note(f"per-key buckets ({TOP} keys with the most values, their boundaries):")
            + kv_table(rows, html_keys=True))
