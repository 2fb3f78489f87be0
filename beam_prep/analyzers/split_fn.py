"""The per-split DoFn: read one split in Arrow batches and emit packed partial results.

One element in, a handful out: reading, type conversion, tokenisation and counting happen
here, batch by batch, vectorised; nothing per row crosses a Beam boundary. Outputs:

* main        ``((feature, partition), vocabulary table)`` for every vocabulary feature
* ``numeric`` ``(group, (split_id, {feature: NumericPartial}))`` for all numeric features
* ``meta``    ``{rows_read, rows_rejected, rejected_by_reason, missing, documents,
  terms_per_document}`` (the last: per text feature, a ``text_counts.log2_histogram`` list)
* ``rejected`` ``(sort_key, json line)`` per rejected row
* one tag per analysis family (:data:`~beam_prep.analyzers.families.FAMILIES`: ``labels``,
  ``target``, ``per_key``, ``per_key_buckets``), the elements its
  :meth:`~beam_prep.analyzers.family.AnalysisFamily.elements` gives (the features of a
  family that replaces vocabularies, ``labels``, have no main output)

Example:
    >>> fn = AnalyzeSplitFn(spec.to_dict())                        # doctest: +SKIP
    >>> outputs = list(fn.process(Split("data.csv", "csv")))        # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep import progress
from beam_prep.analyzers import families as registry
from beam_prep.analyzers import numeric as num
from beam_prep.analyzers import spill
from beam_prep.analyzers import vocab as voc
from beam_prep.analyzers.family import FeatureBatch
from beam_prep.analyzers.spec_columns import (  # noqa: F401 (re-exported)
    column_owners,
    list_columns,
    required_columns,
)
from beam_prep.analyzers.text_counts import TERMS_BUCKETS
from beam_prep.analyzers.vocab.split import MEMORY_ROWS, SplitVocabulary
from beam_prep.analyzers.vocab.weights import valid_weights
from beam_prep.expr import arrow as expr_arrow
from beam_prep.io.inputs import columns as colmod
from beam_prep.io.inputs.readers import Split, read_split
from beam_prep.io.inputs.scalar_rows import scalar_rows
from beam_prep.io.inputs.tfrecord_stream import skipped_tail
from beam_prep.spec import Feature, Spec
from beam_prep.spec.weights import is_weighted, weight_expression

NUMERIC = "numeric"
META = "meta"
REJECTED = "rejected"
NUMERIC_GROUPS = 64
#: Text is tokenised and counted this many bytes at a time (bounds the n-gram arrays).
TEXT_CHUNK_BYTES = 1 << 22

_LOG = logging.getLogger("beam_prep.analyze")

def output_tags() -> list[str]:
    """The split DoFn's tagged outputs: the trunk's, then one per analysis family.

    Example:
        >>> output_tags()[:3]
        ['numeric', 'meta', 'rejected']
    """
    return [NUMERIC, META, REJECTED, *(family.tag for family in registry.FAMILIES)]


def feature_column(f: Feature, batch: pa.RecordBatch) -> pa.Array:
    """The values a feature analyses: its column, or its expression computed on ``batch``.

    Example:
        >>> f = NumericFeature("r", expr="a / 2")                     # doctest: +SKIP
        >>> feature_column(f, pa.record_batch({"a": [3.0]})).to_pylist()  # doctest: +SKIP
        [1.5]
    """
    tree = f.expression()
    if tree is None:
        return batch.column(f.source_column)
    values = expr_arrow.evaluate(tree, batch)
    if pa.types.is_list(values.type):  # split(): list columns are large_list, as read
        values = values.cast(pa.large_list(values.type.value_type))
    return values


def numeric_group(split_id: str) -> int:
    """Stable first-level merge group of a split (crc32: identical in every process)."""
    return zlib.crc32(split_id.encode("utf-8")) % NUMERIC_GROUPS


def _fill_missing(arr: pa.Array, default: Any) -> pa.Array:
    if default is None or arr.null_count == 0:
        return arr
    if pa.types.is_large_list(arr.type):
        return pc.fill_null(arr, pa.scalar([default], type=arr.type))
    return pc.fill_null(arr, pa.scalar(default, type=arr.type))


def text_ranges(texts: pa.Array, max_bytes: int) -> list[tuple[int, int]]:
    """``(start, end)`` row ranges of a string array holding at most ``max_bytes`` of text
    each (a longer row is a range of its own), so n-gram arrays stay small whatever the
    batch size. An empty array gives none.

    Example:
        >>> text_ranges(pa.array(["ab", "c", "de", "f"]), 3)
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


def feature_weights(feature: Feature, batch: pa.RecordBatch) -> np.ndarray:
    """Each row's weight (the spec's ``weights`` column or ``weights_expr``) as float64,
    NaN where it is missing.

    Example:
        >>> f = StringFeature("c", weights="w")                               # doctest: +SKIP
        >>> feature_weights(f, pa.record_batch({"w": [1.5, None]})).tolist()  # doctest: +SKIP
        [1.5, nan]
    """
    tree = weight_expression(feature)
    values = (batch.column(feature.weights) if tree is None
              else expr_arrow.evaluate(tree, batch))
    values = pc.cast(values, pa.float64())
    return np.asarray(pc.fill_null(values, float("nan")).to_numpy(zero_copy_only=False),
                      dtype=np.float64)


def _prefetched(items: Iterator[Any], depth: int = 2) -> Iterator[Any]:
    """Yields ``items`` while a background thread produces the next ones (read and decode
    of batch n+1 overlap the analysis of batch n). Exceptions reach the consumer in order;
    closing the generator early stops the producer after its current item."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put((done, None))
        except BaseException as e:  # handed to the consumer
            q.put((done, e))

    thread = threading.Thread(target=produce, name="beam_prep-read", daemon=True)
    thread.start()
    try:
        while True:
            item, error = q.get()
            if item is done:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get(timeout=0.1)
            except queue.Empty:
                pass
        thread.join()


class AnalyzeSplitFn(beam.DoFn):
    """Reads a split and emits its partial vocabularies, numeric partials and row counts.

    The features of a batch are independent, so with ``threads`` > 1 they are processed by
    a small thread pool: the heavy steps (Arrow kernels, numpy sorts and bincounts,
    dictionary unification) release the GIL. Each feature's accumulator still sees its
    batches in file order, and outputs are emitted in feature order, so the results do
    not depend on the thread count.

    Args:
        spec_dict: ``Spec.to_dict()`` (plain data, so the DoFn pickles small).
        batch_size: Rows per Arrow batch.
        num_partitions: Hash partitions per vocabulary (parallelism of the merge).
        csv_delimiter: CSV field delimiter.
        temp_dir: Scratch directory; partition tables of ``spill_rows`` rows or more are
            written there and passed as :class:`SpillRef` (None = never spill).
        spill_rows: Spill threshold.
        threads: Threads per split (1 = no pool).
        memory_rows: Merged vocabulary rows a feature keeps in memory per split before
            they are spilled as a run (only with ``temp_dir``).
    """

    def __init__(self, spec_dict: dict, *, batch_size: int, num_partitions: int,
                 csv_delimiter: str = ",", temp_dir: str | None = None,
                 spill_rows: int = spill.DEFAULT_SPILL_ROWS, threads: int = 1,
                 skip_corrupt_tail: bool = False, memory_rows: int = MEMORY_ROWS) -> None:
        self._spec_dict = spec_dict
        self._skip_corrupt_tail = skip_corrupt_tail
        self._batch_size = batch_size
        self._num_partitions = num_partitions
        self._temp_dir = temp_dir
        self._spill_rows = spill_rows
        self._csv_delimiter = csv_delimiter
        self._threads = max(1, threads)
        self._memory_rows = memory_rows
        self._rows = beam.metrics.Metrics.counter("beam_prep", "rows_read")
        self._bad = beam.metrics.Metrics.counter("beam_prep", "rows_rejected")

    def setup(self) -> None:
        self._spec = Spec.from_dict(self._spec_dict)
        self._columns = required_columns(self._spec)
        self._lists = list_columns(self._spec)
        self._features = [f for f in self._spec.features if f.kind != "hashed"]
        self._pool = (ThreadPoolExecutor(self._threads, thread_name_prefix="beam_prep")
                      if self._threads > 1 else None)

    def teardown(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _map(self, fn, items: list) -> list:
        if self._pool is None or len(items) < 2:
            return [fn(item) for item in items]
        return list(self._pool.map(fn, items))

    def process(self, split: Split) -> Iterator[Any]:
        spec = self._spec
        started = time.monotonic()
        stem = spill.stable_id(split.split_id)
        vocab_args = {"num_partitions": self._num_partitions, "spill_dir": self._temp_dir,
                      "file_stem": stem, "spill_rows": self._spill_rows,
                      "memory_rows": self._memory_rows}
        # The analysis families' accumulators (analyzers.families): tag -> feature -> state.
        family_states = {family.tag: {f.name: family.accumulator(f) for f in self._features
                                      if family.applies(f)} for family in registry.FAMILIES}
        states_of = {f.name: [states[f.name] for states in family_states.values()
                              if f.name in states] for f in self._features}
        own_vocabularies = registry.own_vocabularies(spec)
        # Weights are an optional input of the same accumulators (spec.weights). Unweighted
        # features come first: the order of a cache entry's files (cache/store.py).
        vocab = {f.name: SplitVocabulary(f.name, weighted=is_weighted(f), **vocab_args)
                 for f in sorted(spec.of_kind("string", "integer", "text"), key=is_weighted)
                 if f.name not in own_vocabularies}
        numeric = {f.name: num.NumericAccumulator(f.resolved_epsilon(), weighted=is_weighted(f))
                   for f in sorted(spec.of_kind("numeric"), key=is_weighted)}
        meta = {"rows_read": 0, "rows_rejected": 0, "rejected_by_reason": {},
                "missing": {f.name: 0 for f in self._features},
                "documents": {f.name: 0 for f in spec.of_kind("text")},
                "terms_per_document": {f.name: [0] * TERMS_BUCKETS for f in spec.of_kind("text")}}
        weighted = [f.name for f in self._features if is_weighted(f)]
        if weighted:
            meta["invalid_weights"] = {name: 0 for name in weighted}

        def add_feature(args: tuple[Feature, pa.Array, np.ndarray | None, pa.RecordBatch]
                        ) -> tuple[int, int, list[int] | None]:
            """Adds one feature's column; returns (missing cells, documents, terms histogram)."""
            f, raw, weights, batch = args
            n_missing = int(colmod.missing_mask(raw).sum())
            filled = _fill_missing(raw, getattr(f, "default_value", None))
            values = filled
            if weights is not None:  # rows with an invalid weight are set aside (weights.md)
                valid = valid_weights(weights)
                if not valid.all():
                    meta["invalid_weights"][f.name] += int((~valid).sum())
                    values, weights = values.filter(pa.array(valid)), weights[valid]
            documents, terms = 0, None
            if f.kind == "numeric":
                leaf = colmod.leaf_values_with_nulls(values)
                leaf_w = None if weights is None else colmod.leaf_weights(values, weights)
                if leaf.null_count:
                    present = np.asarray(pc.is_valid(leaf).to_numpy(zero_copy_only=False),
                                         dtype=bool)
                    leaf = leaf.filter(pa.array(present))
                    leaf_w = None if leaf_w is None else leaf_w[present]
                numeric[f.name].add(
                    np.asarray(leaf.to_numpy(zero_copy_only=False), dtype=np.float64),
                    n_missing, leaf_w)
            elif f.name not in vocab:
                pass  # a family replaces its vocabulary (labels)
            elif f.kind == "text":
                documents, terms = self._add_text(f, values, vocab[f.name], weights)
            else:
                # Counting skips nulls: no need to copy the column without them.
                vocab[f.name].add_values(
                    colmod.leaf_values_with_nulls(values),
                    None if weights is None else colmod.leaf_weights(values, weights))
            if states_of[f.name]:
                view = FeatureBatch(f, filled, batch)
                for state in states_of[f.name]:
                    state.add(view)
            return n_missing, documents, terms

        results = read_split(split, self._columns, batch_size=self._batch_size,
                             csv_delimiter=self._csv_delimiter,
                             skip_corrupt_tail=self._skip_corrupt_tail, strict_columns=True,
                             list_columns=self._lists)
        for result in (_prefetched(results) if self._pool is not None else results):
            # a scalar feature's column holding lists: one value per row, as transform and
            # the layers take it; rows with several values are rejected (multiple_values)
            batch, multi = scalar_rows(result.batch, self._lists, split.path)
            rejected = [*result.rejected, *multi]
            meta["rows_read"] += result.rows_seen
            meta["rows_rejected"] += len(rejected)
            self._rows.inc(result.rows_seen)
            self._bad.inc(len(rejected))
            for r in rejected:
                reasons = meta["rejected_by_reason"]
                reasons[r.reason] = reasons.get(r.reason, 0) + 1
                if (tail := skipped_tail(r)) is not None:
                    meta.setdefault("skipped_tails", []).append(tail)
                key = f"{r.source}\x00{(r.row if r.row is not None else -1):020d}"
                yield beam.pvalue.TaggedOutput(REJECTED, (key, r.to_json()))
            added = self._map(add_feature, [
                (f, feature_column(f, batch),
                 feature_weights(f, batch) if is_weighted(f) else None, batch)
                for f in self._features])
            for f, (n_missing, documents, terms) in zip(self._features, added):
                meta["missing"][f.name] += n_missing
                if f.kind == "text":
                    meta["documents"][f.name] += documents
                    hist = meta["terms_per_document"][f.name]
                    hist[:] = [a + b for a, b in zip(hist, terms)]

        def finish(state: SplitVocabulary) -> list[tuple[tuple[str, int], Any]]:
            return state.result()

        for outputs in self._map(finish, list(vocab.values())):
            yield from outputs
        for family in registry.FAMILIES:
            for name, state in family_states[family.tag].items():
                for item in family.elements(name, state.result(), self._num_partitions):
                    yield beam.pvalue.TaggedOutput(family.tag, item)
        partials = {name: acc.result() for name, acc in numeric.items()}
        if partials:
            yield beam.pvalue.TaggedOutput(
                NUMERIC, (numeric_group(split.split_id), (split.split_id, partials)))
        yield beam.pvalue.TaggedOutput(META, meta)
        progress.record_unit(split.split_id, rows=meta["rows_read"],
                             rejected=meta["rows_rejected"])
        _LOG.info("analyzed %s: %d rows (%d rejected) in %.1fs", split.split_id,
                  meta["rows_read"], meta["rows_rejected"], time.monotonic() - started)

    @staticmethod
    def _add_text(f: Feature, arr: pa.Array, acc: SplitVocabulary,
                  weights: np.ndarray | None) -> tuple[int, list[int]]:
        """Counts a text column into ``acc``; returns its number of documents (non-null
        cells) and the log2 histogram of terms per document.

        Counted :data:`TEXT_CHUNK_BYTES` of text at a time, so the n-gram arrays stay small
        whatever the batch size; document counts add up because a document is in one chunk.
        With ``weights`` (one per row) every term of a document, n-grams included, counts
        its document's weight.
        """
        from beam_prep.analyzers import text, text_counts

        flat = colmod.leaf_values_with_nulls(arr)
        w = None if weights is None else colmod.leaf_weights(arr, weights)
        if pa.types.is_dictionary(flat.type):
            flat = flat.dictionary_decode()
        present = np.asarray(pc.is_valid(flat).to_numpy(zero_copy_only=False), dtype=bool)
        documents = int(present.sum())
        if documents < len(flat):
            flat = flat.filter(pa.array(present))
            w = None if w is None else w[present]
        with_df = f.output_mode == "tf_idf"
        terms = np.zeros(TERMS_BUCKETS, np.int64)
        for start, end in text_ranges(flat, TEXT_CHUNK_BYTES):
            chunk = flat.slice(start, end - start)
            if w is None:
                st = text_counts.text_statistics(chunk, f, documents=with_df)
                acc.add_table(voc.table_from_counts(st.tokens, st.counts, st.document_counts))
                terms += st.terms_histogram
            else:
                grams = text.grams(chunk, f)
                terms += text_counts.log2_histogram(text_counts.terms_per_document(grams))
                acc.add_values(grams.values(), w[start:end][grams.rows()])
        return documents, terms.tolist()
