"""The target-encoding part of a string or integer feature's report card.

From the manifest's ``stats.target_encoding`` and one streaming pass over the checked
``vocab/<feature>.target.jsonl`` (memory: the ten tokens kept): label and fold columns,
folds, smoothing, labelled rows per fold, the global mean, the spread of the encodings and
the ten tokens with the most labelled rows, with their encoding. Tokens are shown through
:func:`beam_prep.report.page.token` (escaped, control characters visible).

Example:
    >>> html = target_html(art, "city")                             # doctest: +SKIP
"""

from __future__ import annotations

import heapq
import json
import math

from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.report.page import fmt_int, fmt_num, kv_table, note, text, token

TOP = 10


def target_html(art: Artifacts, name: str) -> str:
    """Settings, totals and the ten tokens with the most labelled rows (HTML)."""
    te = art.stats(name)["target_encoding"]
    low, high = math.inf, -math.inf
    top: list[tuple[int, str, float | None]] = []
    for line in art.iter_lines(name, "target_encoding"):
        tok, enc, rows = json.loads(line)[:3]
        if enc is not None:
            low, high = min(low, enc), max(high, enc)
        item = (sum(rows), str(tok), enc)
        (heapq.heappush if len(top) < TOP else heapq.heappushpop)(top, item)
    rows_html = [
        ("target encoding", text(f"mean of {te['label_column']!r} per token, {te['folds']} "
                                 f"folds by {te['fold_column']!r}, smoothing "
                                 f"{te['smoothing']}")),
        ("labelled rows", text(f"{te['rows']:,} (per fold: "
                               f"{', '.join(f'{n:,}' for n in te['rows_per_fold'])})")),
        ("global mean", fmt_num(te["global_mean"])),
        ("tokens", fmt_int(te["tokens"])),
    ]
    if top:
        rows_html.append(("encodings", text(f"{fmt_num(low)} … {fmt_num(high)}")))
    for count, tok, enc in sorted(top, key=lambda t: (-t[0], t[1])):
        rows_html.append((token(tok), text(f"{count:,} rows, encoding {fmt_num(enc)}")))
    return note(f"target encoding ({TOP} tokens with the most labelled rows):") + kv_table(
        rows_html, html_keys=True)
