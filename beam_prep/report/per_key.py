"""The per-key part of a numeric feature's report card (``per_key:``).

Read in one streaming pass over the checked per-key file (memory: the ten keys kept):
the number of keys, values per key (min / mean / max), the spread of the keys' means and
the ten keys with the most values, with their statistics. Keys are shown through
:func:`beam_prep.report.page.token` (escaped, control characters visible).

Example:
    >>> html = per_key_rows(art, "price")                        # doctest: +SKIP
"""

from __future__ import annotations

import heapq
import math

from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.io.contract.per_key_file import rows_of
from beam_prep.report.page import fmt_int, fmt_num, kv_table, note, text, token

TOP = 10


def per_key_html(art: Artifacts, name: str) -> str:
    """Key count, spread of per-key means and counts, and the ten largest keys (HTML)."""
    keys, total = 0, 0
    smallest, largest = math.inf, 0
    low_mean, high_mean = math.inf, -math.inf
    top: list[tuple[int, str, tuple]] = []
    for key, count, mean, variance, lo, hi in rows_of(art, name):
        keys += 1
        total += count
        smallest, largest = min(smallest, count), max(largest, count)
        low_mean, high_mean = min(low_mean, mean), max(high_mean, mean)
        item = (count, key, (mean, variance, lo, hi))
        (heapq.heappush if len(top) < TOP else heapq.heappushpop)(top, item)
    if not keys:
        return note("per key: no key in the data (every row uses the global statistics).")
    rows = [("keys", fmt_int(keys)),
            ("values per key", text(f"min {smallest:,}, mean {total / keys:,.1f}, "
                                    f"max {largest:,}")),
            ("key means", text(f"{fmt_num(low_mean)} … {fmt_num(high_mean)}"))]
    for count, key, (mean, variance, lo, hi) in sorted(top, key=lambda t: (-t[0], t[1])):
        std = math.sqrt(variance) if variance == variance else None
        rows.append((token(key), text(f"{count:,} values, mean {fmt_num(mean)}, std "
                                      f"{fmt_num(std)}, min {fmt_num(lo)}, max {fmt_num(hi)}")))
    return note(f"per key ({TOP} keys with the most values):") + kv_table(rows, html_keys=True)
