"""The split analysis behind the analysis cache: replay a stored result, or compute and store it.

:class:`CachedAnalyzeSplitFn` wraps :class:`~beam_prep.analyzers.split_fn.AnalyzeSplitFn`
and has the same outputs, plus ``cache`` (``("hit" | "miss", key)`` per split). On a hit
it emits what the wrapped DoFn emitted when the entry was written: the same count tables
(re-partitioned for this run's partition count, and spilled under ``_tmp`` when large, as
a fresh run would), numeric partials keyed by the split id (the canonical merge order
depends only on split ids), counts and rejected rows. The downstream combines are exact
or merge in that canonical order, so the artifacts are byte-identical to a run without the
cache. :class:`RecordCacheUse` sums hits and misses and writes the run's record of the
keys it used (``<cache_dir>/runs/<run id>.json``), read by ``beam-prep cache prune``.

Example:
    >>> inner = split_fn.AnalyzeSplitFn(spec.to_dict(), batch_size=65536,
    ...                                 num_partitions=16)          # doctest: +SKIP
    >>> fn = CachedAnalyzeSplitFn(inner, spec.to_dict(), "cache/",
    ...                           ReaderSettings("csv", 65536))     # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter

from beam_prep import progress
from beam_prep.analyzers import families as registry
from beam_prep.analyzers import spill, split_fn
from beam_prep.analyzers.cache import store
from beam_prep.analyzers.cache.key import (
    ReaderSettings,
    analysis_key,
    entry_key,
    plan_key,
    split_identity,
)
from beam_prep.errors import InputError
from beam_prep.io import filesystem as fs
from beam_prep.io.inputs.content_id import content_identity
from beam_prep.io.inputs.readers import Split, list_splits
from beam_prep.spec import Spec

CACHE = "cache"
#: The cache-use tag of a split analysed whose entry could not be written (a miss too).
NOT_STORED = "miss_not_stored"
#: Namespace and names of the Beam counters of the cache use (:func:`record_run`).
METRICS = "beam_prep"
USE_COUNTERS = {"hits": "cache_hits", "misses": "cache_misses",
                "not_stored": "cache_entries_not_stored", "written": "cache_run_written"}
#: Formats whose split plan reads the whole file (record-aligned byte ranges): cached too.
PLANNED_FORMATS = ("csv", "jsonl")
_LOG = logging.getLogger("beam_prep.analyze")


def new_run_id() -> str:
    """``<UTC time to the microsecond>-<random>``: names a run's record; sorts by start time.

    Example:
        >>> len(new_run_id())
        31
    """
    now = time.time_ns() // 1000
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 1_000_000))
    return f"{stamp}{now % 1_000_000:06d}Z-{uuid.uuid4().hex[:8]}"


class CachedAnalyzeSplitFn(beam.DoFn):
    """:class:`~beam_prep.analyzers.split_fn.AnalyzeSplitFn` with a cache of split results.

    Args:
        inner: The split analysis (its settings must match ``spec_dict`` and ``reader``).
        spec_dict: ``Spec.to_dict()``.
        cache_dir: The cache folder (any Beam filesystem).
        reader: The reader options the results depend on.
        num_partitions: Hash partitions per vocabulary in this run.
        temp_dir: Spill folder of this run (None = never spill).
        spill_rows: Spill threshold of this run.
        identities: Content identity of the input files, measured once by the launcher
            (:func:`~beam_prep.io.inputs.content_id.content_identities`); a file not in it is
            identified by the worker.
    """

    def __init__(self, inner: split_fn.AnalyzeSplitFn, spec_dict: dict, cache_dir: str,
                 reader: ReaderSettings, *, num_partitions: int = 1,
                 temp_dir: str | None = None,
                 spill_rows: int = spill.DEFAULT_SPILL_ROWS,
                 identities: dict[str, str] | None = None) -> None:
        self._inner = inner
        self._identities = dict(identities or {})
        self._spec_dict = spec_dict
        self._cache = cache_dir
        self._reader = reader
        self._partitions = num_partitions
        self._temp = temp_dir
        self._spill_rows = spill_rows
        self._rows = beam.metrics.Metrics.counter("beam_prep", "rows_read")
        self._bad = beam.metrics.Metrics.counter("beam_prep", "rows_rejected")

    def setup(self) -> None:
        self._inner.setup()
        spec = Spec.from_dict(self._spec_dict)
        self._analysis, self._per_feature = analysis_key(spec, self._reader)
        self._family_features = {family.tag: {f.name: f for f in family.features(spec)}
                                 for family in registry.FAMILIES}
        own_vocabularies = registry.own_vocabularies(spec)
        self._vocab_names = [f.name for f in spec.of_kind("string", "integer", "text")
                             if f.name not in own_vocabularies]

    def teardown(self) -> None:
        self._inner.teardown()

    def process(self, split: Split) -> Iterator[Any]:
        try:
            content = self._identities.get(split.path) or content_identity(split.path)
        except Exception as e:  # noqa: BLE001 - the read reports a real problem
            _LOG.warning("analysis cache: cannot identify %s (%s); analysed without cache",
                         split.path, e)
            yield from self._inner.process(split)
            return
        key = entry_key(split, content, self._analysis)
        try:
            index = store.load_index(self._cache, key)
        except Exception as e:  # noqa: BLE001 - an unreachable cache is a miss
            _LOG.warning("analysis cache: cannot read entry %s (%s)", key, e)
            index = None
        expected = {"split": split_identity(split), "content": content,
                    "analysis_key": self._analysis}
        if index is not None and any(index.get(k) != v for k, v in expected.items()):
            _LOG.warning("analysis cache: entry %s describes another split, file version or "
                         "analysis than its key; the split is analysed again", key)
            index = None
        families = None if index is None else self._load_families(key, index)
        if families is not None:
            yield from self._replay(split, store.entry_dir(self._cache, key), index, families)
            yield beam.pvalue.TaggedOutput(CACHE, ("hit", key))
            return
        result, outputs = self._compute(split)
        info = {**expected, "feature_keys": self._per_feature}
        use = "miss"
        try:
            store.write_entry(self._cache, key, result, info)
        except Exception as e:  # noqa: BLE001 - a read-only cache still gives results
            _LOG.warning("analysis cache: cannot write entry %s (%s)", key, e)
            use = NOT_STORED
        yield from outputs
        yield beam.pvalue.TaggedOutput(CACHE, (use, key))

    def _load_families(self, key: str, index: dict) -> dict[str, dict[str, Any]] | None:
        """The entry's values of every analysis family (tag → feature → value), or None:
        the entry is not used (a warning says why) and the split is analysed again."""
        folder = store.entry_dir(self._cache, key)
        out: dict[str, dict[str, Any]] = {}
        for family in registry.FAMILIES:
            try:
                out[family.tag] = store.load_family_values(folder, index, family,
                                                           self._family_features[family.tag])
            except (store.CacheFormatError, OSError) as e:
                _LOG.warning("analysis cache: entry %s is not used (%s); the split is "
                             "analysed again and the entry rewritten", key, e)
                return None
        return out

    def _compute(self, split: Split) -> tuple[store.SplitResult, list[Any]]:
        """Runs the wrapped DoFn; returns its outputs as a result and as the list to emit."""
        vocab: dict[str, list] = {name: [] for name in self._vocab_names}
        numeric = None
        meta: dict = {}
        rejected: list[tuple[str, str]] = []
        families: dict[str, dict[str, list]] = {family.tag: {} for family in registry.FAMILIES}
        outputs = list(self._inner.process(split))
        for out in outputs:
            tag = getattr(out, "tag", None)
            value = out.value if tag is not None else out
            if tag is None:
                (name, _), table = value
                vocab.setdefault(name, []).append(table)
            elif tag == split_fn.NUMERIC:
                numeric = value[1][1]
            elif tag == split_fn.META:
                meta = value
            elif tag == split_fn.REJECTED:
                rejected.append(value)
            else:  # an analysis family's: stored unpartitioned, like the count tables
                name, part = registry.by_tag(tag).name_and_value(value)
                families[tag].setdefault(name, []).append(part)
        merged = {tag: {name: registry.by_tag(tag).merge(parts)
                        for name, parts in values.items()} for tag, values in families.items()}
        return store.SplitResult(vocab, numeric, meta, rejected, merged), outputs

    def _replay(self, split: Split, folder: str, index: dict,
                families: dict[str, dict[str, Any]]) -> Iterator[Any]:
        stem = spill.stable_id(split.split_id)
        n = 0
        for name, relname in index["vocab"].items():
            for table in store.vocab_tables(folder, relname):
                for part, t in store.partitions_of(table, self._partitions):
                    item: Any = t
                    if self._temp is not None and t.num_rows >= self._spill_rows:
                        item = spill.spill(
                            t, f"{self._temp}/counts/{name}/p{part:03d}/{stem}-c{n:05d}.arrow")
                        n += 1
                    yield (name, part), item
        if index["numeric"]:
            partials = store.load_numeric(folder)
            yield beam.pvalue.TaggedOutput(
                split_fn.NUMERIC,
                (split_fn.numeric_group(split.split_id), (split.split_id, partials)))
        for family in registry.FAMILIES:
            for name, value in families[family.tag].items():
                for item in family.elements(name, value, self._partitions):
                    yield beam.pvalue.TaggedOutput(family.tag, item)
        for row in store.load_rejected(folder):
            yield beam.pvalue.TaggedOutput(split_fn.REJECTED, row)
        meta = store.load_meta(folder)
        self._rows.inc(meta["rows_read"])
        self._bad.inc(meta["rows_rejected"])
        yield beam.pvalue.TaggedOutput(split_fn.META, meta)
        progress.record_unit(split.split_id, rows=meta["rows_read"],
                             rejected=meta["rows_rejected"])
        _LOG.info("analysis cache: %s from entry %s", split.split_id, index["key"])


class CachedListSplits(beam.DoFn):
    """Lists the splits of a file; the byte-range plans of CSV/JSONL files (one pass over the
    file) are kept in the cache under ``plans/``, keyed by path, content identity and split
    size. Emits the splits, and ``("plan", key)`` on the ``cache`` output.

    Args:
        fmt: Input format.
        parquet_rows_per_split: Rows per Parquet split.
        split_bytes: Byte-range size of CSV/JSONL files (0 = whole files).
        cache_dir: The cache folder.
        identities: Content identities measured by the launcher (else measured here).
    """

    def __init__(self, fmt: str, parquet_rows_per_split: int, split_bytes: int,
                 cache_dir: str, identities: dict[str, str] | None = None) -> None:
        self._fmt = fmt
        self._rows = parquet_rows_per_split
        self._bytes = split_bytes
        self._cache = cache_dir
        self._identities = dict(identities or {})

    def process(self, path: str) -> Iterator[Any]:
        if self._fmt not in PLANNED_FORMATS or self._bytes <= 0:
            yield from list_splits(path, self._fmt, parquet_rows_per_split=self._rows,
                                   split_bytes=self._bytes)
            return
        content = self._identities.get(path) or content_identity(path)
        key = plan_key(path, self._fmt, content, self._bytes)
        splits = store.load_plan(self._cache, key, path, self._fmt)
        if splits is None:
            splits = list_splits(path, self._fmt, split_bytes=self._bytes)
            try:
                store.write_plan(self._cache, key, splits)
            except Exception as e:  # noqa: BLE001 - a read-only cache still gives results
                _LOG.warning("analysis cache: cannot write plan %s (%s)", key, e)
        yield from splits
        yield beam.pvalue.TaggedOutput(CACHE, ("plan", key))


class CacheUseFn(beam.CombineFn):
    """Counts hits, misses (splits analysed) and the misses whose entry could not be
    stored, and collects the keys used (the empty input: zeros).

    Example:
        >>> fn = CacheUseFn()
        >>> acc = fn.add_input(fn.create_accumulator(), ("hit", "k1"))
        >>> fn.extract_output(fn.merge_accumulators([acc, fn.add_input(
        ...     fn.create_accumulator(), (NOT_STORED, "k2"))]))
        {'hits': 1, 'misses': 1, 'not_stored': 1, 'keys': ['k1', 'k2']}
    """

    def create_accumulator(self) -> tuple[int, int, int, set]:
        return 0, 0, 0, set()

    def add_input(self, acc: tuple[int, int, int, set], item: tuple[str, str]):
        hits, misses, lost, keys = acc
        keys.add(item[1])
        return (hits + (item[0] == "hit"), misses + (item[0] in ("miss", NOT_STORED)),
                lost + (item[0] == NOT_STORED), keys)

    def merge_accumulators(self, accs: Iterable[tuple[int, int, int, set]]):
        hits, misses, lost, keys = 0, 0, 0, set()
        for h, m, n, k in accs:
            hits, misses, lost = hits + h, misses + m, lost + n
            keys |= k
        return hits, misses, lost, keys

    def extract_output(self, acc: tuple[int, int, int, set]) -> dict:
        return {"hits": acc[0], "misses": acc[1], "not_stored": acc[2],
                "keys": sorted(acc[3])}


def run_record_path(cache_dir: str, run_id: str) -> str:
    """``<cache_dir>/runs/<run_id>.json``."""
    return fs.join(cache_dir, store.RUNS_DIR, f"{run_id}.json")


def record_run(use: dict, cache_dir: str, run_id: str) -> dict:
    """Writes the run's record (``{"run", "hits", "misses", "not_stored", "keys"}``);
    returns it. The counts are also Beam counters (:data:`USE_COUNTERS`), so the job can
    report them when the record cannot be written (:func:`cache_use`).

    A cache that cannot be written (read-only or full) only warns: the artifacts do not
    depend on the record; a prune then keeps nothing for this run.
    """
    record = {"run": run_id, "hits": use["hits"], "misses": use["misses"],
              "not_stored": use.get("not_stored", 0), "keys": use["keys"]}
    written = True
    try:
        store.write_atomic(run_record_path(cache_dir, run_id),
                           json.dumps(record, indent=1).encode("utf-8"))
    except Exception as e:  # noqa: BLE001 - a read-only cache still gives results
        written = False
        _LOG.warning("analysis cache: cannot write the run record %s (%s)",
                     run_record_path(cache_dir, run_id), e)
    for name, value in (("hits", record["hits"]), ("misses", record["misses"]),
                        ("not_stored", record["not_stored"]), ("written", int(written))):
        beam.metrics.Metrics.counter(METRICS, USE_COUNTERS[name]).inc(value)
    return record


def cache_use(result: Any, cache_dir: str, run_id: str) -> dict:
    """What a finished run did with the cache: ``{"hits", "misses", "not_stored",
    "written"}`` (``written``: the run record is in the cache).

    Read from the record, or, when it could not be written (or read), from the Beam
    counters :func:`record_run` set, so the numbers are true either way.
    """
    try:
        record = read_run(cache_dir, run_id)
    except Exception:  # noqa: BLE001 - an unreadable record: the counters tell the same
        record = None
    if record is not None:
        return {"hits": record["hits"], "misses": record["misses"],
                "not_stored": record.get("not_stored", 0), "written": True}
    counts = dict.fromkeys(USE_COUNTERS, 0)
    try:
        found = result.metrics().query(MetricsFilter().with_namespace(METRICS))["counters"]
    except Exception:  # noqa: BLE001 - a runner without metrics: zeros, said unwritten
        found = []
    names = {v: k for k, v in USE_COUNTERS.items()}
    for m in found:
        if m.key.metric.name in names:
            value = m.committed if m.committed is not None else m.attempted
            counts[names[m.key.metric.name]] += int(value or 0)
    return {"hits": counts["hits"], "misses": counts["misses"],
            "not_stored": counts["not_stored"], "written": False}


def check_cache_dir(cache_dir: str, output_dir: str) -> None:
    """Refuses a cache folder equal to or inside the artifact folder (the output policy
    owns that folder and would refuse to commit over foreign files).

    Example:
        >>> check_cache_dir("cache", "artifacts")
        >>> try:
        ...     check_cache_dir("artifacts/cache", "artifacts")
        ... except InputError as e:
        ...     print(str(e)[:60])
        --cache_dir must not be the --output folder or inside it. Re
    """
    def norm(path: str) -> str:
        return path.rstrip("/") if "://" in path else os.path.realpath(path)

    cache, out = norm(cache_dir), norm(output_dir)
    if cache == out or cache.startswith(out.rstrip("/") + "/"):
        raise InputError(
            f"--cache_dir must not be the --output folder or inside it. Received: cache_dir="
            f"{cache_dir!r}, output={output_dir!r}. Use a folder beside the artifacts, e.g. "
            f"{output_dir.rstrip('/')}-cache.")


def read_run(cache_dir: str, run_id: str) -> dict | None:
    """A run's record (``{"run", "hits", "misses", "keys"}``), None when it has none."""
    path = run_record_path(cache_dir, run_id)
    return json.loads(fs.read_bytes(path)) if fs.exists(path) else None


class RecordCacheUse(beam.PTransform):
    """``("hit" | "miss", key)`` elements → the run's record, written to the cache (the
    keys the run used, for pruning, and its hits and misses).

    Args:
        cache_dir: The cache folder.
        run_id: Names the run's record (:func:`new_run_id`, chosen when the pipeline is
            built so a retried step rewrites the same file).
    """

    def __init__(self, cache_dir: str, run_id: str) -> None:
        super().__init__()
        self._cache, self._run = cache_dir, run_id

    def expand(self, uses: beam.PCollection) -> beam.PCollection:
        return (uses
                | "CountCacheUse" >> beam.CombineGlobally(CacheUseFn())
                | "WriteCacheRun" >> beam.Map(record_run, self._cache, self._run))
