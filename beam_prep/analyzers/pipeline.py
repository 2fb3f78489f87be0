"""The analysis as Beam transforms: splits in, artifact directory out.

Graph (every step labelled)::

    Splits ─ AnalyzeSplits ─┬─ vocab ─ CountTokens (CombinePerKey, key=(feature, partition))
                            │          ─ PrunePartitions ─ GroupByFeature ─ WriteVocabularies ─┐
                            ├─ numeric ─ MergeNumericGroups ─ MergeNumericAll ─────────────────┤
                            ├─ meta ─ SumCounts ──────────────────────────────────────────────┤
                            ├─ <family tag> ─ <family label> (one branch per analysis family ─┤
                            │    with features: LabelVocabularies, TargetStats, PerKey, ...)   │
                            ├─ rejected ─ WriteRejected (sorted chunks → shards) ─────────────┤
                            └─ cache ─ RecordCacheUse (only with cache_dir) ──────────────────┤
                                                               WriteManifest (side inputs) ◄──┘

With ``cache_dir``, AnalyzeSplits is :class:`~beam_prep.analyzers.cache.fn.CachedAnalyzeSplitFn`:
a split whose result is in the cache is replayed from it instead of read (same outputs).

All vocabularies share one keyed combine; all numeric features share one canonical merge.
The manifest is written by a DoFn that consumes every other output as a side input, so it
is always the last file written. That step also checks the summed row counts (no row read,
or more than ``max_bad_fraction`` rejected): then it writes :data:`FAILED_REPORT` instead of
the manifest and raises nothing (a runner would retry a raising bundle); the driver calls
:func:`raise_if_failed` and raises one :class:`~beam_prep.errors.InputError`.

Example:
    >>> with beam.Pipeline() as p:                                   # doctest: +SKIP
    ...     _ = p | AnalyzeToArtifacts(spec, ["data/*.csv"], "csv", "artifacts/")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beam_prep.analyzers import families as registry
from beam_prep.analyzers import numeric as num
from beam_prep.analyzers import spill, split_fn
from beam_prep.analyzers import vocab as voc
from beam_prep.analyzers.cache import fn as cache_fn
from beam_prep.analyzers.cache.key import ReaderSettings
from beam_prep.analyzers.family import merged_entries
from beam_prep.analyzers.manifest import build_manifest
from beam_prep.analyzers.rejected import SHARD_GLOB, WriteRejected
from beam_prep.analyzers.summary import summarize  # noqa: F401  (re-exported)
from beam_prep.analyzers.vocab import merge as vmerge
from beam_prep.analyzers.vocab.partition import auto_partitions
from beam_prep.analyzers.weighted.pipeline import WeightedVocabularies, is_band_element
from beam_prep.errors import InputError
from beam_prep.io import filesystem as fs
from beam_prep.io.commit import output
from beam_prep.io.contract import artifacts as layout
from beam_prep.io.contract.run_record import RUN_FILE
from beam_prep.io.inputs.byte_ranges import DEFAULT_SPLIT_BYTES
from beam_prep.io.inputs.content_id import content_identities
from beam_prep.io.inputs.readers import Split, list_splits
from beam_prep.spec import Spec
from beam_prep.spec.weights import is_weighted

TEXT_RESERVED_TOKENS = ("[UNK]",)


class _ListSplits(beam.DoFn):
    def __init__(self, fmt: str, parquet_rows_per_split: int, split_bytes: int) -> None:
        self._fmt = fmt
        self._rows = parquet_rows_per_split
        self._bytes = split_bytes

    def process(self, path: str) -> Iterable[Split]:
        yield from list_splits(path, self._fmt, parquet_rows_per_split=self._rows,
                               split_bytes=self._bytes)


def _total_bytes(files: Sequence[str]) -> int:
    """Summed size of the input files (one listing call per 100 files)."""
    total = 0
    for start in range(0, len(files), 100):
        for result in FileSystems.match(list(files[start:start + 100])):
            total += sum(m.size_in_bytes for m in result.metadata_list)
    return total


def _prune(kv: tuple[tuple[str, int], Any],
           limits: dict[str, tuple[int, int | None, tuple[str, ...]]], temp_dir: str,
           spill_rows: int):
    """Prunes one partition and returns it as a sorted run (spilled when large)."""
    (name, part), table = kv
    min_count, top_k, reserved = limits[name]
    pruned, drops = voc.prune(table, min_count=min_count, top_k=top_k, reserved=reserved)
    pruned = voc.sort_vocabulary(pruned)
    if pruned.num_rows >= spill_rows:
        pruned = vmerge.write_run(pruned, f"{temp_dir}/pruned/{name}/p{part:05d}.arrow")
    return name, (part, pruned, drops)


class _WriteVocabulary(beam.DoFn):
    """Streams a feature's sorted partition runs through a k-way merge into .txt and sidecar.

    Memory is a few batches per run, not the vocabulary (see :mod:`vocab.merge`); the
    global top_k is the first top_k lines of the merged order.
    """

    def __init__(self, output_dir: str, spec_dict: dict, temp_dir: str) -> None:
        self._out = output_dir
        self._spec_dict = spec_dict
        self._temp = temp_dir

    def setup(self) -> None:
        self._spec = Spec.from_dict(self._spec_dict)

    def process(self, kv: tuple[str, Iterable[tuple[int, Any, dict]]]):
        name, parts = kv
        feature = self._spec.feature(name)
        parts = sorted(parts, key=lambda p: p[0])
        drops: dict = {}
        for _, _, d in parts:
            drops = voc.add_drop_stats(drops, d) if d else drops
        top_k = (feature.max_vocabulary_tokens() if feature.kind == "text"
                 else feature.top_k)
        rels = {"vocabulary": layout.vocabulary_relpath(name),
                "counts": layout.counts_relpath(name)}
        written = vmerge.write_vocabulary_files(
            [run for _, run, _ in parts], fs.join(self._out, rels["vocabulary"]),
            fs.join(self._out, rels["counts"]), top_k=top_k,
            with_df=feature.kind == "text" and feature.output_mode == "tf_idf",
            temp_dir=f"{self._temp}/merge/{name}")
        drops = voc.add_drop_stats(drops, {"dropped_top_k": written["dropped_top_k"]})
        files = {role: {"path": rel, "sha256": written[role][0], "bytes": written[role][1]}
                 for role, rel in rels.items()}
        kept = written["kept"]
        yield name, {"files": files, "vocabulary_size": kept["tokens"],
                     "kept_count": kept["count"], "drops": drops, "first": written["first"]}


def _sum_meta(metas: Iterable[dict]) -> dict:
    out: dict = {"rows_read": 0, "rows_rejected": 0, "rejected_by_reason": {},
                 "missing": {}, "documents": {}, "splits": 0}
    for m in metas:
        out["splits"] += m.get("splits", 1)
        out["rows_read"] += m["rows_read"]
        out["rows_rejected"] += m["rows_rejected"]
        for key in ("rejected_by_reason", "missing", "documents", "invalid_weights"):
            if key == "invalid_weights" and key in m:  # only with weighted features
                out.setdefault(key, {})
            for k, v in m.get(key, {}).items():
                out[key][k] = out[key].get(k, 0) + v
        if m.get("skipped_tails"):  # TFRecord remainders skipped (--skip_corrupt_tail)
            out.setdefault("skipped_tails", []).extend(m["skipped_tails"])
        # log2 buckets (text_counts.log2_histogram); absent in cache entries of older versions
        for k, hist in m.get("terms_per_document", {}).items():
            acc = out.setdefault("terms_per_document", {}).setdefault(k, [0] * len(hist))
            acc[:] = [a + b for a, b in zip(acc, hist)]
    return out


class _WriteManifest(beam.DoFn):
    def __init__(self, output_dir: str, spec_dict: dict, input_info: dict,
                 max_bad_fraction: float) -> None:
        self._out = output_dir
        self._spec_dict = spec_dict
        self._input = input_info
        self._max_bad = max_bad_fraction

    def process(self, _unused, entries, numeric_partials, meta, rejected):
        # Never raises on bad input (a runner would retry the bundle): a failed check
        # writes FAILED_REPORT instead of the manifest; the driver raises from it.
        output.delete_tree(spill.tmp_dir(self._out))  # a prefix on object stores
        if wrote_failed_report(self._out, meta, self._input["patterns"], self._max_bad,
                               rejected):
            return
        manifest = build_manifest(Spec.from_dict(self._spec_dict), self._input,
                                  merged_entries(entries), numeric_partials, meta, rejected)
        fs.write_bytes(fs.join(self._out, layout.MANIFEST), layout.canonical_json(manifest))
        yield manifest


def input_error(meta: dict, patterns: Sequence[str], max_bad_fraction: float,
                rejected_dir: str) -> str | None:
    """Why the summed counts fail the run (no row, or too many rejects), or None.

    Example:
        >>> meta = {"rows_read": 100, "rows_rejected": 2, "rejected_by_reason": {"x": 2}}
        >>> input_error(meta, ["a.csv"], 0.05, "out/rejected") is None
        True
        >>> input_error(meta, ["a.csv"], 0.01, "out/rejected")[:44]
        '2 of 100 rows (2.00%) could not be read (by '
    """
    read, bad = meta["rows_read"], meta["rows_rejected"]
    if read == 0:
        return (f"No rows were read from {list(patterns)}: the input files are empty. "
                "Nothing to analyse.")
    if bad / read > max_bad_fraction:
        return (f"{bad} of {read} rows ({bad / read:.2%}) could not be read (by reason: "
                f"{dict(sorted(meta['rejected_by_reason'].items()))}), more than "
                f"max_bad_fraction={max_bad_fraction}. The rows and reasons are in "
                f"{rejected_dir}/. Fix the input or raise --max_bad_fraction.")
    return None


FAILED_REPORT = "_failed.json"
"""Written instead of ``manifest.json`` when the input check fails (see :func:`raise_if_failed`)."""


def wrote_failed_report(staging: str, meta: dict, patterns: Sequence[str],
                        max_bad_fraction: float, rejected: list) -> bool:
    """Writes :data:`FAILED_REPORT` into ``staging`` if :func:`input_error` fails the run.

    The jobs' last step calls it instead of raising (a runner would retry a raising bundle).

    Example:
        >>> if wrote_failed_report(out, meta, ["a.csv"], 0.05, []):  # doctest: +SKIP
        ...     return  # no manifest
    """
    error = input_error(meta, patterns, max_bad_fraction, fs.join(staging, layout.REJECTED_DIR))
    if error is None:
        return False
    report = {"error": error, "rows_read": meta["rows_read"],
              "rows_rejected": meta["rows_rejected"],
              "rejected_by_reason": meta["rejected_by_reason"], "rejected_files": rejected}
    fs.write_bytes(fs.join(staging, FAILED_REPORT), layout.canonical_json(report))
    return True


def raise_if_failed(staging: str, output_dir: str) -> None:
    """Driver side of the end-of-run input check: raises the run's InputError, if any.

    Call after the pipeline finished and before committing ``staging``.

    Raises:
        InputError: The run wrote :data:`FAILED_REPORT` (no rows, or too many rejects); the
            message ends by naming the staging folder that keeps the rejected rows.
    """
    path = fs.join(staging, FAILED_REPORT)
    if fs.exists(path):
        report = json.loads(fs.read_text(path))
        raise InputError(f"{report['error']} {output_dir} was left as it was; this run's "
                         f"rejected rows stay in {staging} until the next run.")


class AnalyzeToArtifacts(beam.PTransform):
    """Reads the input files and writes a complete artifact directory.

    Args:
        spec: The feature spec.
        files: Input file paths (already expanded and sorted).
        fmt: Input format.
        output_dir: Artifact directory, best a fresh staging folder (the job uses
            :class:`beam_prep.io.commit.output.OutputRun` with :data:`ARTIFACT_OUTPUT`).
        patterns: The user's input globs, recorded in the manifest.
        batch_size: Rows per Arrow batch.
        num_partitions: Hash partitions per vocabulary (None = chosen from the input
            bytes, :func:`~beam_prep.analyzers.vocab.partition.auto_partitions`);
            artifacts are byte-identical for every count.
        max_bad_fraction: Fail when more than this fraction of rows is rejected.
        parquet_rows_per_split: Rows per Parquet read split.
        csv_delimiter: CSV field delimiter.
        spill_rows: Vocabulary tables of this many rows or more go through files under
            ``<output_dir>/_tmp`` instead of the shuffle (removed before the manifest).
        split_threads: Threads per split analysis (results do not depend on it).
        skip_corrupt_tail: TFRecord: the unframeable rest of a file is one rejected row
            (recorded in the manifest's ``input.skipped_tails``) instead of an InputError.
        input_split_bytes: Uncompressed CSV/JSONL files larger than this are read as
            record-aligned byte ranges of about this size (0 = one file, one split).
        cache_dir: Analysis cache folder (None = no cache): split results found there are
            replayed instead of read, new ones are stored (see
            :mod:`~beam_prep.analyzers.cache.fn`); the artifacts, manifest included, are
            the same bytes as without it. Hits and misses go to
            ``<cache_dir>/runs/<cache_run_id>.json``
            (:func:`~beam_prep.analyzers.cache.fn.read_run`).
        cache_run_id: Names this run's record in the cache (None = a new
            :func:`~beam_prep.analyzers.cache.fn.new_run_id`).

    Returns:
        A PCollection with the manifest dict (one element).
    """

    def __init__(self, spec: Spec, files: Sequence[str], fmt: str, output_dir: str, *,
                 patterns: Sequence[str] | None = None, batch_size: int = 65536,
                 num_partitions: int | None = None, max_bad_fraction: float = 0.01,
                 parquet_rows_per_split: int = 1 << 20, csv_delimiter: str = ",",
                 spill_rows: int = spill.DEFAULT_SPILL_ROWS, split_threads: int = 1,
                 skip_corrupt_tail: bool = False,
                 input_split_bytes: int = DEFAULT_SPLIT_BYTES,
                 cache_dir: str | None = None, cache_run_id: str | None = None) -> None:
        super().__init__()
        self._cache_dir = cache_dir
        self.cache_run_id = cache_run_id or cache_fn.new_run_id()
        self._split_bytes = input_split_bytes
        self._skip_corrupt_tail = skip_corrupt_tail
        self._spec = spec
        self._files = list(files)
        self._fmt = fmt
        self._out = output_dir
        self._patterns = list(patterns or files)
        self._batch_size = batch_size
        self._partitions = (num_partitions if num_partitions is not None
                            else auto_partitions(_total_bytes(self._files)))
        self._max_bad = max_bad_fraction
        self._rows_per_split = parquet_rows_per_split
        self._delimiter = csv_delimiter
        self._spill_rows = spill_rows
        self._threads = split_threads

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection:
        spec_dict = self._spec.to_dict()
        temp = spill.tmp_dir(self._out)
        own_vocabularies = registry.own_vocabularies(self._spec)  # labels: their own path
        vocab_features = [f for f in self._spec.of_kind("string", "integer", "text")
                          if f.name not in own_vocabularies
                          and not is_weighted(f)]  # those: weighted_pipeline
        weighted_names = [f.name for f in self._spec.of_kind("string", "integer", "text")
                          if is_weighted(f)]
        # TextVectorization refuses its OOV token "[UNK]" inside a vocabulary ("" is
        # already unwritable); StringLookup/IntegerLookup read such a token from a file.
        limits = {f.name: (getattr(f, "min_count", 1),
                           f.max_vocabulary_tokens() if f.kind == "text" else f.top_k,
                           TEXT_RESERVED_TOKENS if f.kind == "text" else ())
                  for f in vocab_features}
        p = pbegin.pipeline
        identities = (content_identities(self._files, pipeline_options=p.options)
                      if self._cache_dir is not None else {})
        lister: beam.DoFn = _ListSplits(self._fmt, self._rows_per_split, self._split_bytes)
        if self._cache_dir is not None:  # CSV/JSONL byte-range plans come from the cache
            lister = cache_fn.CachedListSplits(self._fmt, self._rows_per_split,
                                               self._split_bytes, self._cache_dir, identities)
        # Small Creates skip their own Reshuffle (4 ParDos each at graph build): the splits are
        # spread by SpreadSplits, the seeds meet the counts in GroupByFeature.
        listed = (pbegin
                  | "InputFiles" >> beam.Create(self._files, reshuffle=False)
                  | "ListSplits" >> beam.ParDo(lister).with_outputs(cache_fn.CACHE,
                                                                    main="splits"))
        splits = listed.splits | "SpreadSplits" >> beam.Reshuffle()
        analyze: beam.DoFn = split_fn.AnalyzeSplitFn(
            spec_dict, batch_size=self._batch_size, num_partitions=self._partitions,
            csv_delimiter=self._delimiter, temp_dir=temp, spill_rows=self._spill_rows,
            threads=self._threads, skip_corrupt_tail=self._skip_corrupt_tail)
        tags = split_fn.output_tags()
        if self._cache_dir is not None:
            reader = ReaderSettings(self._fmt, self._batch_size, self._delimiter,
                                    self._skip_corrupt_tail)
            analyze = cache_fn.CachedAnalyzeSplitFn(
                analyze, spec_dict, self._cache_dir, reader,
                num_partitions=self._partitions, temp_dir=temp, spill_rows=self._spill_rows,
                identities=identities)
            tags.append(cache_fn.CACHE)
        outputs = splits | "AnalyzeSplits" >> beam.ParDo(analyze).with_outputs(
            *tags, main="vocab")

        seeds = p | "EveryVocabulary" >> beam.Create(
            [(f.name, (-1, voc.empty_table(), {})) for f in vocab_features], reshuffle=False)
        counted = outputs.vocab | "CountTokens" >> beam.CombinePerKey(
            voc.VocabularyCombineFn(temp, 4 * self._spill_rows))
        if weighted_names:  # band tables of weighted vocabularies go their own way
            counted, bands = counted | "SplitWeighted" >> beam.Partition(
                lambda kv, _: int(is_band_element(kv)), 2)
            weighted_meta = bands | "WeightedVocabularies" >> WeightedVocabularies(
                spec_dict, self._out, temp, weighted_names, self._spill_rows)
        pruned = counted | "PrunePartitions" >> beam.Map(_prune, limits, temp,
                                                         self._spill_rows)
        vocab_meta = ((pruned, seeds)
                      | "WithEmptyVocabularies" >> beam.Flatten()
                      | "GroupByFeature" >> beam.GroupByKey()
                      | "WriteVocabularies" >> beam.ParDo(
                          _WriteVocabulary(self._out, spec_dict, temp)))
        entries = [vocab_meta, *([weighted_meta] if weighted_names else [])]
        for family in registry.FAMILIES:  # each family's branch: (feature, entry) per feature
            if family.features(self._spec):
                entries.append(outputs[family.tag] | family.label
                               >> family.transform(self._spec, self._out))
        all_entries = (tuple(entries) | "AllEntries" >> beam.Flatten() if len(entries) > 1
                       else vocab_meta)
        numeric = (outputs.numeric
                   | "MergeNumericGroups" >> beam.CombinePerKey(num.CanonicalMergeFn())
                   | "GroupOrderKey" >> beam.MapTuple(lambda g, parts: (f"{g:05d}", parts))
                   | "MergeNumericAll" >> beam.CombineGlobally(num.CanonicalMergeFn()))
        meta = outputs.meta | "SumCounts" >> beam.CombineGlobally(_sum_meta)
        rejected = outputs.rejected | "WriteRejected" >> WriteRejected(self._out, temp)
        input_info = {"patterns": self._patterns, "format": self._fmt,
                      "files": len(self._files)}
        if self._cache_dir is not None:
            _ = ((outputs[cache_fn.CACHE], listed[cache_fn.CACHE])
                 | "AllCacheUse" >> beam.Flatten()
                 | "RecordCacheUse" >> cache_fn.RecordCacheUse(self._cache_dir,
                                                               self.cache_run_id))
        return (p
                | "ManifestTrigger" >> beam.Create([None])
                | "WriteManifest" >> beam.ParDo(
                    _WriteManifest(self._out, spec_dict, input_info, self._max_bad),
                    entries=beam.pvalue.AsList(all_entries),
                    numeric_partials=beam.pvalue.AsSingleton(numeric),
                    meta=beam.pvalue.AsSingleton(meta),
                    rejected=beam.pvalue.AsSingleton(rejected)))


ARTIFACT_OUTPUT = output.OutputPolicy(
    job="analyze", signatures=((layout.MANIFEST,),),
    owned=(layout.MANIFEST,
           *dict.fromkeys(f"{folder}/**" for folder in (  # the families' folders too
               layout.VOCAB_DIR, *(f for family in registry.FAMILIES for f in family.folders))),
           SHARD_GLOB,
           layout.REJECTED_FILE,  # the single file of outputs written before the shards
           f"{spill.TMP_DIR}/**", FAILED_REPORT, "report.html",  # the job's HTML report
           RUN_FILE),  # run metadata (beam_prep.io.contract.run_record)
    last=layout.MANIFEST)
"""The analyze job's output folder (see :mod:`beam_prep.io.commit.output`): a folder holding
``manifest.json`` is a finished artifact directory; only ``manifest.json``, ``vocab/``,
the analysis families' folders (``per_key/``),
the rejected-row shards (and the older ``rejected/rejected.jsonl``), ``_tmp/`` and
``_failed.json``, ``report.html`` and ``run.json`` are ever replaced in it."""
