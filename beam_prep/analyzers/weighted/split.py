"""One batch of a weighted feature, inside the per-split analysis (``AnalyzeSplitFn``).

Rows whose weight is missing (null), NaN, infinite, negative or above
:data:`~beam_prep.analyzers.weighted.counts.MAX_WEIGHT` are set aside for that feature:
their values are not analysed, and they are counted in the manifest's
``invalid_weight_count`` (whatever their value; a missing value is also counted in
``missing_count``). TF Transform has no rule for them (a negative weight would subtract
from a count, a NaN would poison it).

Example:
    >>> w = feature_weights(StringFeature("c", weights="w"), batch)   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers import text, text_counts
from beam_prep.analyzers.text_counts import TERMS_BUCKETS
from beam_prep.analyzers.weighted.counts import valid_weights
from beam_prep.analyzers.weighted.numeric import WeightedNumericAccumulator
from beam_prep.analyzers.weighted.vocab import WeightedSplitVocabulary, token_weights
from beam_prep.expr import arrow as expr_arrow
from beam_prep.spec.weights import is_weighted, weight_expression

#: Text is tokenised this many bytes at a time (as ``split_fn.TEXT_CHUNK_BYTES``).
TEXT_CHUNK_BYTES = 1 << 22

__all__ = ["accumulators", "add_weighted", "feature_weights", "numeric_results",
           "vocabulary_results"]


def accumulators(spec: Any, vocab_args: dict[str, Any]) -> dict[str, Any]:
    """Feature name -> the split accumulator of each weighted feature, in spec order."""
    out: dict[str, Any] = {}
    for f in spec.features:
        if not is_weighted(f):
            continue
        if f.kind == "numeric":
            out[f.name] = WeightedNumericAccumulator(f.resolved_epsilon())
        else:
            out[f.name] = WeightedSplitVocabulary(f.name, **vocab_args)
    return out


def vocabulary_results(accs: dict[str, Any]) -> list[tuple[tuple[str, int], Any]]:
    """The main-output elements of the weighted vocabularies (band keys)."""
    return [item for acc in accs.values() if isinstance(acc, WeightedSplitVocabulary)
            for item in acc.result()]


def numeric_results(accs: dict[str, Any]) -> dict[str, Any]:
    """The numeric partials of the weighted numeric features."""
    return {name: acc.result() for name, acc in accs.items()
            if isinstance(acc, WeightedNumericAccumulator)}


def feature_weights(feature: Any, batch: pa.RecordBatch) -> np.ndarray:
    """Each row's weight as float64 (NaN where it is missing)."""
    tree = weight_expression(feature)
    values = (batch.column(feature.weights) if tree is None
              else expr_arrow.evaluate(tree, batch))
    values = pc.cast(values, pa.float64())
    return np.asarray(pc.fill_null(values, float("nan")).to_numpy(zero_copy_only=False),
                      dtype=np.float64)


def add_weighted(feature: Any, raw: pa.Array, weights: np.ndarray, acc: Any
                 ) -> tuple[int, int, list[int] | None]:
    """Adds one batch of a weighted feature (``raw`` already has its defaults filled).

    Args:
        feature: The feature spec.
        raw: Its column (or expression) values, one per row.
        weights: :func:`feature_weights` of the batch.
        acc: A :class:`WeightedSplitVocabulary` or a ``WeightedNumericAccumulator``.

    Returns:
        ``(rows with an invalid weight, documents, terms histogram or None)``.
    """
    valid = valid_weights(weights)
    invalid = int((~valid).sum())
    if invalid:
        raw = raw.filter(pa.array(valid))
        weights = weights[valid]
    documents, terms = 0, None
    if feature.kind == "numeric":
        values, w = token_weights(raw, weights)
        keep = np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), dtype=bool)
        arr = np.asarray(values.filter(pa.array(keep)).to_numpy(zero_copy_only=False),
                         dtype=np.float64)
        acc.add(arr, w[keep], 0)
    elif feature.kind == "text":
        documents, terms = _add_text(feature, raw, weights, acc)
    else:
        acc.add(*token_weights(raw, weights))
    return invalid, documents, terms


def _add_text(feature: Any, raw: pa.Array, weights: np.ndarray,
              acc: WeightedSplitVocabulary) -> tuple[int, list[int]]:
    """Every term of every document with its document's weight (n-grams included)."""
    if pa.types.is_large_list(raw.type) or pa.types.is_list(raw.type):
        raw, weights = token_weights(raw, weights)
    if pa.types.is_dictionary(raw.type):
        raw = raw.dictionary_decode()
    present = np.asarray(pc.is_valid(raw).to_numpy(zero_copy_only=False), dtype=bool)
    raw, weights = raw.filter(pa.array(present)), weights[present]
    hist = np.zeros(TERMS_BUCKETS, np.int64)
    for start, end in row_chunks(raw, TEXT_CHUNK_BYTES):
        chunk = raw.slice(start, end - start)
        grams = text.grams(chunk, feature)
        hist += text_counts.log2_histogram(text_counts.terms_per_document(grams))
        acc.add(grams.values(), weights[start:end][grams.rows()])
    return int(present.sum()), hist.tolist()


def row_chunks(texts: pa.Array, max_bytes: int) -> list[tuple[int, int]]:
    """``(start, end)`` row ranges holding at most ``max_bytes`` of text each (a longer row
    is a range of its own), so n-gram arrays stay small whatever the batch size.

    Example:
        >>> row_chunks(pa.array(["ab", "c", "de", "f"]), 3)
        [(0, 2), (2, 4)]
    """
    n = len(texts)
    ends = np.cumsum(pc.fill_null(pc.binary_length(texts), 0).to_numpy(zero_copy_only=False))
    out, start = [], 0
    while start < n:
        consumed = int(ends[start - 1]) if start else 0
        end = max(int(np.searchsorted(ends, consumed + max_bytes, side="right")), start + 1)
        out.append((start, end))
        start = end
    return out
