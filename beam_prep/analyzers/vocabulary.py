"""Exact vocabulary analysis: the public names of its modules, in one place.

The work is split by job; import from here or from the module itself:

=========================  ==================================================================
module                     job
=========================  ==================================================================
``vocab_count``            count tokens into vocabulary tables (``token``, ``count``, ``df``)
                           and merge tables (exact, order-independent)
``vocab_partition``        stable hash partitions of a table (same in every process) and
                           the automatic partition count
``vocab_topk``             vocabulary order, exact top-k, pruning and drop statistics
``vocab_write``            the ``.txt`` and ``.counts.jsonl`` file bodies
``vocab_merge``            k-way merge of sorted runs streamed into the vocabulary files
``vocab_combine``          the Beam CombineFn summing tables, spilling large ones
``vocab_strings``          zero-copy byte views of Arrow strings (shared helpers)
=========================  ==================================================================

Ordering (TFT's): count descending, then token UTF-8 bytes descending.

Example:
    >>> import pyarrow as pa
    >>> t = count_values(pa.array(["b", "a", "b", None]))
    >>> sort_vocabulary(t).column("token").to_pylist()
    ['b', 'a']
"""

from __future__ import annotations

from beam_prep.analyzers.vocab_combine import COMPACT_ROWS, VocabularyCombineFn
from beam_prep.analyzers.vocab_count import (
    SCHEMA,
    count_chunks,
    count_values,
    empty_table,
    merge_tables,
    summary,
    table_from_counts,
)
from beam_prep.analyzers.vocab_partition import (
    split_by_partition,
    stable_partition,
    token_hashes,
)
from beam_prep.analyzers.vocab_topk import (
    add_drop_stats,
    largest_tokens,
    prune,
    select_top_k,
    sort_vocabulary,
)
from beam_prep.analyzers.vocab_write import counts_jsonl, unwritable_mask, vocabulary_text

__all__ = [
    "COMPACT_ROWS",
    "SCHEMA",
    "VocabularyCombineFn",
    "add_drop_stats",
    "count_chunks",
    "count_values",
    "counts_jsonl",
    "empty_table",
    "largest_tokens",
    "merge_tables",
    "prune",
    "select_top_k",
    "sort_vocabulary",
    "split_by_partition",
    "stable_partition",
    "summary",
    "table_from_counts",
    "token_hashes",
    "unwritable_mask",
    "vocabulary_text",
]
