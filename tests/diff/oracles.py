"""Independent oracles for the diff tests: written from the definitions, not the library.

Jensen-Shannon divergence is the textbook ``(KL(P||M) + KL(Q||M)) / 2`` with ``M = (P+Q)/2``
over the union of the tokens, base 2 (scipy is not installed in the venv).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterable


def vocab_order(counts: dict[str, int]) -> list[str]:
    """docs/artifacts.md order: count descending, ties by UTF-8 bytes descending."""
    return sorted(counts, key=lambda t: (-counts[t], [-b for b in t.encode("utf-8")] + [1]))


def counter(values: Iterable[str | None]) -> dict[str, int]:
    return dict(collections.Counter(v for v in values if v))


def jsd(p_counts: dict[str, int], q_counts: dict[str, int]) -> float:
    sp, sq = sum(p_counts.values()), sum(q_counts.values())
    total = 0.0
    for t in set(p_counts) | set(q_counts):
        p = p_counts.get(t, 0) / sp
        q = q_counts.get(t, 0) / sq
        m = (p + q) / 2
        if p:
            total += 0.5 * p * math.log2(p / m)
        if q:
            total += 0.5 * q * math.log2(q / m)
    return total


def index_changed(old: dict[str, int], new: dict[str, int], k: int | None = None) -> float:
    """Share of OLD's (first k) tokens whose index differs in NEW or that NEW lacks."""
    old_order, new_index = vocab_order(old), {t: i for i, t in enumerate(vocab_order(new))}
    looked = old_order[:k] if k else old_order
    return sum(new_index.get(t) != i for i, t in enumerate(looked)) / len(looked)


def oov_share(old: dict[str, int], new: dict[str, int]) -> float:
    return sum(c for t, c in new.items() if t not in old) / sum(new.values())
