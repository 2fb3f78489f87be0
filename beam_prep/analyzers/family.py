"""An analysis family: one kind of per-feature state, from a batch to the manifest.

A family is one object (an :class:`AnalysisFamily`) that owns, for the features it applies
to, every step of its state's life:

1. **split** — an accumulator per feature and split: ``add`` one batch, ``result`` the
   split's merged value; :meth:`~AnalysisFamily.elements` partitions that value into the
   split DoFn's output under the family's tag;
2. **cache** — the value of a split as bytes in a cache entry, and back
   (:meth:`~AnalysisFamily.to_bytes`, :meth:`~AnalysisFamily.from_bytes`); the entry
   stores partition outputs merged again (:meth:`~AnalysisFamily.merge`);
3. **pipeline** — a PTransform from the tagged outputs of every split to one
   ``(feature, entry)`` per feature, writing the artifact files on the way
   (:meth:`~AnalysisFamily.transform`);
4. **manifest** — the entry's statistics in the feature's manifest entry
   (:meth:`~AnalysisFamily.manifest`; the entries' ``files`` are merged by the manifest).

The split DoFn, the cache, the pipeline graph and the manifest loop over the registry
(:data:`beam_prep.analyzers.families.FAMILIES`) instead of naming the families; adding
one is a subpackage with its object and one line in the registry. The core analyses
(vocabularies, numeric moments and sketches, weighted analysis) are the shared trunk the
families branch from.

Example:
    >>> from beam_prep.analyzers.families import FAMILIES
    >>> [family.tag for family in FAMILIES]
    ['labels', 'target', 'per_key', 'per_key_buckets']
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.vocab.partition import token_hashes


class FeatureBatch:
    """One feature's view of one batch, as the families read it.

    Args:
        feature: The spec feature.
        values: The feature's values in the batch, missing cells filled with its
            ``default_value`` (``split_fn.feature_column``).
        batch: The whole batch (label, target and key columns live there).

    Derived columns that several families read (the per-key keys, the values as floats)
    are computed once per batch and feature, without a lock: a view is used by the one
    thread that adds its feature (``functools.cached_property`` would serialise every
    view of every thread on one lock before Python 3.12).

    Example:
        >>> view = FeatureBatch(feature, values, batch)          # doctest: +SKIP
        >>> view.float_rows                                      # doctest: +SKIP
    """

    def __init__(self, feature: Any, values: pa.Array, batch: pa.RecordBatch) -> None:
        self.feature = feature
        self.values = values
        self.batch = batch
        self._keys: pa.Array | None = None
        self._float_rows: Any = None

    @property
    def keys(self) -> pa.Array:
        """The per-key key of every row: the ``per_key`` column, or its expression."""
        if self._keys is None:
            from beam_prep.expr import arrow as expr_arrow
            from beam_prep.spec.per_key import key_expression

            tree = key_expression(self.feature)
            self._keys = (self.batch.column(self.feature.per_key) if tree is None
                          else expr_arrow.evaluate(tree, self.batch))
        return self._keys

    @property
    def float_rows(self) -> Any:
        """The values as float64, one per row, missing as NaN (a numpy array)."""
        if self._float_rows is None:
            self._float_rows = pc.fill_null(self.values.cast(pa.float64()),
                                            math.nan).to_numpy(False)
        return self._float_rows


class BatchMerging:
    """An accumulator that turns each batch into a partial and merges the partials every
    ``every`` batches (the per-key families' shape: exact, order-free merges).

    Args:
        of_batch: The partial of one batch, from the feature's view of it.
        merge: Merges a list of partials into one (``merge([])`` is the empty partial).
        every: Partials held before they are merged.

    Example:
        >>> acc = BatchMerging(lambda view: view, sum, every=2)
        >>> for n in (1, 2, 3):
        ...     acc.add(n)
        >>> acc.result()
        6
    """

    def __init__(self, of_batch: Callable[[FeatureBatch], Any],
                 merge: Callable[[list[Any]], Any], every: int = 16) -> None:
        self._of_batch = of_batch
        self._merge = merge
        self._every = every
        self._parts: list[Any] = []

    def add(self, view: FeatureBatch) -> None:
        """Adds one batch's partial."""
        self._parts.append(self._of_batch(view))
        if len(self._parts) >= self._every:
            self._parts[:] = [self._merge(self._parts)]

    def result(self) -> Any:
        """The partials merged."""
        return self._merge(self._parts)


def key_partitions(value: Any, split: Callable[[Any, Any, int], list[tuple[int, Any]]],
                   num_partitions: int) -> list[tuple[int, Any]]:
    """A per-key value (``.keys`` and ``len``) split by its keys' hash partition, as
    vocabularies are (:func:`~beam_prep.analyzers.vocab.partition.token_hashes`); nothing
    for an empty value.

    Args:
        value: Per-key stats or histograms.
        split: Their ``split_by_partition(value, hashes, n)``.
        num_partitions: The run's partition count.
    """
    if not len(value):
        return []
    return split(value, token_hashes(value.keys), num_partitions)


class Accumulator(Protocol):
    """A family's state of one feature in one split."""

    def add(self, view: FeatureBatch) -> None:
        """Adds one batch."""

    def result(self) -> Any:
        """The split's merged value (what the cache stores)."""


class AnalysisFamily(abc.ABC):
    """The steps of one family (see the module docstring). Subclasses are stateless.

    Attributes:
        label: The Beam label of the family's branch of the graph.
        folders: The artifact folders its files go to (the analyze job owns them).
        tag: The split DoFn's output tag, the cache index's key and the cache files' stem.
        suffix: The cache files' extension.
        every_feature: Each split emits a value for every feature of the family (the
            cache then refuses an entry missing one).
        replaces_vocabulary: The family's features get their vocabulary from it, not from
            the count-ranked vocabulary analysis.
    """

    tag: ClassVar[str]
    label: ClassVar[str]
    folders: ClassVar[tuple[str, ...]]
    suffix: ClassVar[str] = "arrow"
    every_feature: ClassVar[bool] = False
    replaces_vocabulary: ClassVar[bool] = False

    @abc.abstractmethod
    def applies(self, feature: Any) -> bool:
        """Whether the family analyses ``feature``."""

    def features(self, spec: Any) -> list[Any]:
        """The spec's features the family analyses, in spec order."""
        return [f for f in spec.features if self.applies(f)]

    def feature_key(self, feature: Any) -> dict[str, Any]:
        """Fields this family adds to a feature's analysis-cache key
        (:func:`~beam_prep.analyzers.cache.key.feature_key`) when it applies: whatever
        changes what a split accumulates and is not a field of the feature already."""
        return {}

    @abc.abstractmethod
    def accumulator(self, feature: Any) -> Accumulator:
        """A new accumulator of ``feature`` for one split."""

    @abc.abstractmethod
    def elements(self, name: str, value: Any, num_partitions: int) -> list[tuple[Any, Any]]:
        """The split DoFn's output elements of one feature's split value."""

    def name_and_value(self, element: tuple[Any, Any]) -> tuple[str, Any]:
        """The feature and value of one output element (keys are ``(feature, part)``)."""
        (name, _), value = element
        return name, value

    @abc.abstractmethod
    def merge(self, values: list[Any]) -> Any:
        """One feature's output values of a split merged back into one (for the cache)."""

    @abc.abstractmethod
    def to_bytes(self, value: Any) -> bytes:
        """A split value as the bytes of its cache file (no pickle)."""

    @abc.abstractmethod
    def from_bytes(self, data: bytes, feature: Any, relname: str) -> Any:
        """The split value of a cache file (raises ValueError, TypeError or the family's
        own format error when it does not parse)."""

    @abc.abstractmethod
    def transform(self, spec: Any, output_dir: str) -> Any:
        """The family's branch of the graph (a PTransform, applied as :attr:`label`): the
        tagged outputs of every split in, ``(feature, entry)`` out, one per feature of the
        family, its files written."""

    @abc.abstractmethod
    def manifest(self, out: dict, entry: dict) -> None:
        """Adds the family's part of one feature's merged entry to the feature's manifest
        entry ``out`` (``{"kind", "files", "stats"}``; the entries' ``files`` are already
        in it)."""


def merged_entries(items: Iterable[tuple[str, dict]]) -> dict[str, dict]:
    """Feature → the entries of every branch that wrote for it, merged (``files`` united).

    Example:
        >>> merged_entries([("a", {"files": {"x": 1}, "key_count": 2}),
        ...                 ("a", {"files": {"y": 3}, "bucket_key_count": 2})])
        {'a': {'files': {'x': 1, 'y': 3}, 'key_count': 2, 'bucket_key_count': 2}}
    """
    out: dict[str, dict] = {}
    for name, entry in items:
        acc = out.setdefault(name, {})
        if "files" in entry:
            acc.setdefault("files", {}).update(entry["files"])
        acc.update({k: v for k, v in entry.items() if k != "files"})
    return out


def ipc_bytes(table: pa.Table) -> bytes:
    """A table as the bytes of an Arrow IPC stream (the cache files' form; no pickle).

    Example:
        >>> ipc_table(ipc_bytes(pa.table({"a": [1]}))).to_pydict()
        {'a': [1]}
    """
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def ipc_table(data: bytes) -> pa.Table:
    """The table of Arrow IPC stream bytes (:func:`ipc_bytes`)."""
    return pa.ipc.open_stream(data).read_all()


@dataclasses.dataclass(frozen=True)
class KeyedKernel:
    """The functions of a per-key value type (per-key stats, per-key histograms).

    Attributes:
        of_batch: ``(keys, float values) -> value`` of one batch.
        merge: Exact, order-free merge of a list of values (``[]`` gives the empty one).
        split_by_partition: ``(value, key hashes, n) -> [(partition, value)]``.
        to_table: The value as an Arrow table (its cache file form, as IPC bytes).
        from_table: Its inverse.
    """

    of_batch: Callable[[pa.Array, Any], Any]
    merge: Callable[[list[Any]], Any]
    split_by_partition: Callable[[Any, Any, int], list[tuple[int, Any]]]
    to_table: Callable[[Any], pa.Table]
    from_table: Callable[[pa.Table], Any]


class KeyedFamily(AnalysisFamily):
    """A family whose value is keyed by the feature's ``per_key`` key: batches merged in
    bounded memory, outputs hash-partitioned by key, Arrow IPC in the cache. Subclasses
    give the :class:`KeyedKernel` and what :class:`AnalysisFamily` leaves open (``applies``,
    ``transform``, ``manifest``)."""

    kernel: ClassVar[KeyedKernel]

    def accumulator(self, feature: Any) -> BatchMerging:
        kernel = self.kernel
        return BatchMerging(lambda view: kernel.of_batch(view.keys, view.float_rows),
                            kernel.merge)

    def elements(self, name: str, value: Any, num_partitions: int) -> list:
        parts = key_partitions(value, self.kernel.split_by_partition, num_partitions)
        return [((name, part), part_value) for part, part_value in parts]

    def merge(self, values: list[Any]) -> Any:
        return self.kernel.merge(values)

    def to_bytes(self, value: Any) -> bytes:
        return ipc_bytes(self.kernel.to_table(value))

    def from_bytes(self, data: bytes, feature: Any, relname: str) -> Any:
        return self.kernel.from_table(ipc_table(data))
