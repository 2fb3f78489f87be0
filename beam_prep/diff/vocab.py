"""Drift between two vocabularies, from their count sidecars, in one pass over each.

Index convention: line *i* of a sidecar is vocabulary index *i* (the layer adds its OOV /
mask offset, the same on both sides). Measures:

* size change: ``(new size - old size) / max(old size, 1)``;
* added tokens (in NEW, not in OLD) and dropped tokens (in OLD, not in NEW), the first
  ``top_n`` of each by count (file order, which is count descending);
* index stability: share of OLD's tokens, and of OLD's first ``top_k``, whose index changed
  in NEW; a dropped token counts as changed (its embedding row is lost too);
* OOV share: NEW's values whose token is not in OLD's vocabulary, over NEW's ``total_count``
  (every value seen). NEW's own unlisted values (``dropped_top_k``, ``dropped_min_count``,
  excluded tokens) are not in its sidecar, so they may or may not be in OLD's vocabulary:
  ``oov_share`` leaves them out (lower bound), ``oov_share_max`` counts them all (upper bound);
* Jensen-Shannon divergence, base 2, in [0, 1], of the two listed token distributions (each
  sidecar's counts normalised by their sum). None when exactly one vocabulary is empty.

Memory: OLD's sidecar is held as a dict token -> index plus an int64 array of counts, about
250 bytes per OLD token (a 2M-token vocabulary needs ~0.5 GB); NEW is streamed and only
the counts of tokens present in both are kept (16 bytes each). Vocabularies of tens of
millions of tokens need the machine's memory to match (docs/diff.md).

Example:
    >>> d = compare_vocab([("a", 6), ("b", 4)], [("c", 5), ("a", 5)])
    >>> d.top_added, d.top_dropped, d.index_changed_share, d.oov_share
    ([('c', 5)], [('b', 4)], 1.0, 0.5)
"""

from __future__ import annotations

import array
import dataclasses
from collections.abc import Iterable

import numpy as np

from beam_prep.errors import ArtifactError


@dataclasses.dataclass(frozen=True)
class VocabDiff:
    """How one vocabulary changed between OLD and NEW.

    Attributes:
        old_size: Tokens in OLD's vocabulary.
        new_size: Tokens in NEW's vocabulary.
        size_change: ``(new_size - old_size) / max(old_size, 1)``.
        added: Tokens in NEW and not in OLD.
        dropped: Tokens in OLD and not in NEW.
        top_added: ``(token, NEW count)`` of the most frequent added tokens.
        top_dropped: ``(token, OLD count)`` of the most frequent dropped tokens.
        index_changed_share: Share of OLD's tokens whose index changed (None: OLD empty).
        top_k: OLD tokens looked at for ``top_k_index_changed_share`` (``min(K, old_size)``).
        top_k_index_changed_share: Same share over OLD's first ``top_k`` tokens.
        oov_share: NEW's listed values whose token OLD lacks, over NEW's values (None: none).
        oov_share_max: Same, also counting NEW's unlisted values as OOV.
        jsd: Jensen-Shannon divergence (base 2) of the listed token distributions.
    """

    old_size: int
    new_size: int
    size_change: float
    added: int
    dropped: int
    top_added: list[tuple[str, int]]
    top_dropped: list[tuple[str, int]]
    index_changed_share: float | None
    top_k: int
    top_k_index_changed_share: float | None
    oov_share: float | None
    oov_share_max: float | None
    jsd: float | None


def jensen_shannon(a: np.ndarray, b: np.ndarray, a_only: float, b_only: float) -> float:
    """Base-2 JS divergence from the counts of shared tokens and the mass of the others.

    Args:
        a: OLD counts of the tokens in both vocabularies.
        b: NEW counts of the same tokens, same order.
        a_only: Sum of OLD counts of tokens only in OLD.
        b_only: Sum of NEW counts of tokens only in NEW.

    Returns:
        The divergence in [0, 1]; a token in one distribution only contributes half its
        probability (``p log2(p / (p/2)) / 2``).

    Example:
        >>> jensen_shannon(np.array([]), np.array([]), 3.0, 2.0)
        1.0
    """
    total_a = float(a.sum()) + a_only
    total_b = float(b.sum()) + b_only
    p = a / total_a
    q = b / total_b
    m = (p + q) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        tp = np.where(p > 0, p * np.log2(p / m), 0.0)
        tq = np.where(q > 0, q * np.log2(q / m), 0.0)
    shared = 0.5 * float(tp.sum() + tq.sum())
    value = shared + 0.5 * a_only / total_a + 0.5 * b_only / total_b
    return min(1.0, max(0.0, value))


def compare_vocab(old: Iterable[tuple[str, int]], new: Iterable[tuple[str, int]], *,
                  new_total: float | None = None, top_k: int = 100, top_n: int = 5,
                  name: str = "?", weighted: bool = False) -> VocabDiff:
    """Compares two vocabularies given as ``(token, count)`` pairs in index order.

    Args:
        old: OLD's sidecar pairs (read whole into memory, see the module docstring).
        new: NEW's sidecar pairs (streamed once).
        new_total: NEW's ``total_count`` statistic (values seen); None = the listed sum.
        top_k: OLD's first tokens looked at for top-K index stability.
        top_n: Added / dropped tokens listed.
        name: Feature name, for error messages.
        weighted: Counts are sums of weights (floats) on either side (spec.weights).

    Returns:
        The :class:`VocabDiff`.

    Raises:
        ArtifactError: OLD's sidecar lists a token twice.
    """
    index: dict[str, int] = {}
    code = "d" if weighted else "q"  # weighted counts are floats (spec.weights)
    old_counts = array.array(code)
    for i, (token, count) in enumerate(old):
        if token in index:
            raise ArtifactError(
                f"Feature {name!r}: OLD's counts sidecar lists token {token!r} twice (lines "
                f"{index[token] + 1} and {i + 1}). Fix: re-run `beam-prep analyze`.")
        index[token] = i
        old_counts.append(count)
    old_size = len(old_counts)
    old_sum = sum(old_counts) if weighted else int(sum(old_counts))

    shared_old = array.array(code)
    shared_new = array.array(code)
    moved = moved_top = added = new_only_sum = new_sum = new_size = 0
    top_added: list[tuple[str, int]] = []
    k = min(top_k, old_size)
    for j, (token, count) in enumerate(new):
        new_size += 1
        new_sum += count
        i = index.pop(token, None)
        if i is None:
            added += 1
            new_only_sum += count
            if len(top_added) < top_n:
                top_added.append((token, count))
            continue
        shared_old.append(old_counts[i])
        shared_new.append(count)
        if i != j:
            moved += 1
            moved_top += i < k

    dropped = len(index)
    top_dropped = []
    for token, i in index.items():  # insertion order = OLD index = count descending
        if len(top_dropped) == top_n:
            break
        top_dropped.append((token, old_counts[i]))
    dropped_top = sum(1 for i in index.values() if i < k)

    total = new_sum if new_total is None else max(new_total, new_sum)
    dtype = np.float64 if weighted else np.int64
    a = np.frombuffer(shared_old, dtype=dtype).astype(np.float64)
    b = np.frombuffer(shared_new, dtype=dtype).astype(np.float64)
    if old_sum == 0 and new_sum == 0:
        jsd: float | None = 0.0
    elif old_sum == 0 or new_sum == 0:
        jsd = None
    else:
        jsd = jensen_shannon(a, b, float(old_sum - a.sum()), float(new_only_sum))
    return VocabDiff(
        old_size=old_size,
        new_size=new_size,
        size_change=(new_size - old_size) / max(old_size, 1),
        added=added,
        dropped=dropped,
        top_added=top_added,
        top_dropped=top_dropped,
        index_changed_share=(moved + dropped) / old_size if old_size else None,
        top_k=k,
        top_k_index_changed_share=(moved_top + dropped_top) / k if k else None,
        oov_share=new_only_sum / total if total else None,
        oov_share_max=(new_only_sum + total - new_sum) / total if total else None,
        jsd=jsd,
    )
