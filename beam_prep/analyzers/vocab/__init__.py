"""Exact vocabulary analysis (string, integer and text features): the family's public names.

The work is split by job; import from here or from the module itself:

=========================  ==================================================================
module                     job
=========================  ==================================================================
``count``                  count tokens into vocabulary tables (``token``, ``count``, ``df``)
                           and merge tables (exact, order-independent)
``partition``              stable hash partitions of a table (same in every process) and
                           the automatic partition count
``topk``                   vocabulary order, exact top-k, pruning and drop statistics
``write``                  the ``.txt`` and ``.counts.jsonl`` file bodies
``merge``                  k-way merge of sorted runs streamed into the vocabulary files
``combine``                the Beam CombineFn summing tables, spilling large ones
``split``                  a split's tables in bounded memory, spilled in runs
``strings``                zero-copy byte views of Arrow strings (shared helpers)
=========================  ==================================================================

Ordering (TFT's): count descending, then token UTF-8 bytes descending.

Example:
    >>> import pyarrow as pa
    >>> t = count_values(pa.array(["b", "a", "b", None]))
    >>> sort_vocabulary(t).column("token").to_pylist()
    ['b', 'a']
"""

from __future__ import annotations

from beam_prep.analyzers.vocab.combine import COMPACT_ROWS, VocabularyCombineFn
from beam_prep.analyzers.vocab.count import (
    SCHEMA,
    count_chunks,
    count_values,
    empty_table,
    merge_tables,
    summary,
    table_from_counts,
)
from beam_prep.analyzers.vocab.partition import (
    split_by_partition,
    stable_partition,
    token_hashes,
)
from beam_prep.analyzers.vocab.topk import (
    add_drop_stats,
    largest_tokens,
    prune,
    select_top_k,
    sort_vocabulary,
)
from beam_prep.analyzers.vocab.write import counts_jsonl, unwritable_mask, vocabulary_text

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
