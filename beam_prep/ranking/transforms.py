"""Beam transforms of the ELWC job: files → per-query chunks → GroupByKey → ELWC → shards.

Graph (stable step labels)::

    files ─ ParseFiles ─┬─ chunks ─ GroupByQuery ─ BuildLists ─┬─ lists ─ GroupByShard ─ WriteShards
                        ├─ rejected ──────────── WriteRejected  └─ stats ─ SumListStats
                        ├─ counts ── SumCounts
                        └─ layouts ─ MergeLayouts (side input of BuildLists)
                                          WriteReport (stats.json, feature_spec.json)

Inside a shard, lists are sorted by (query id, part index); the shard and the split of a query
come from a BLAKE2b hash of its id, so the output bytes do not depend on the runner, the number
of workers or the order in which files are read.

Example:
    >>> opts = ElwcOptions(input_format="letor")
    >>> files = list_input_files(["/work/shared/data/letor/lightgbm/rank.train"], opts)
    >>> [(i, rel) for i, _, rel in files]
    [(0, 'rank.train')]
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Sequence
from typing import Any

import apache_beam as beam
from apache_beam import pvalue

from beam_prep.errors import InputError
from beam_prep.io import filesystem
from beam_prep.ranking.build import ListBuilder, feature_spec_from_layout
from beam_prep.ranking.feature_spec import FILENAME as FEATURE_SPEC_FILENAME
from beam_prep.ranking.lists import CountsCombineFn, merge_chunks, shard_of
from beam_prep.ranking.options import ElwcOptions
from beam_prep.ranking.sources import LayoutCombineFn, read_file
from beam_prep.ranking.tfrecord import write_tfrecords

STATS_FILENAME = "stats.json"
REJECTED_PATH = "rejected/rejected.jsonl"


def list_input_files(patterns: Sequence[str], opts: ElwcOptions) -> list[tuple[int, str, str]]:
    """Sorted ``(index, path, relative name)`` of every file matching the patterns.

    ``.query`` group files are skipped for LETOR input. The relative name (path below the
    deepest common directory) is what ``rejected/`` and LightGBM query ids refer to.
    """
    paths: set[str] = set()
    for pattern in patterns:
        matched = filesystem.match(pattern)
        if not matched:
            raise InputError(f"input pattern {pattern!r} matches no file. Check --input.")
        paths.update(matched)
    if opts.is_letor:
        paths = {p for p in paths if not p.endswith(".query")}
    ordered = sorted(paths)
    if not ordered:
        raise InputError(f"no data file among {list(patterns)} (only .query files?). "
                         "Check --input.")
    common = posixpath.dirname(ordered[0]) if len(ordered) == 1 else \
        posixpath.commonpath([posixpath.dirname(p) for p in ordered])
    rel = [p[len(common):].lstrip("/") if common else p for p in ordered]
    return [(i, p, r) for i, (p, r) in enumerate(zip(ordered, rel))]


def bad_fraction_error(counts: dict[str, Any], max_bad_fraction: float) -> str | None:
    """Message when too many lines were rejected, else None."""
    lines = counts.get("lines", 0)
    bad = counts.get("lines_rejected", 0)
    if lines and bad / lines > max_bad_fraction:
        return (f"{bad} of {lines} input lines were rejected ({bad / lines:.2%}), more than "
                f"--max_bad_fraction={max_bad_fraction}. See {REJECTED_PATH} in the output "
                "directory, fix the input, or raise --max_bad_fraction.")
    return None


class _ParseFile(beam.DoFn):
    def __init__(self, opts: ElwcOptions) -> None:
        self.opts = opts

    def process(self, element: tuple[int, str, str, int | None]) -> Iterable[Any]:
        index, path, rel, row_group = element
        r = read_file(path, rel, index, self.opts, row_group)
        for c in r.chunks:
            yield (c.qid, c)
        for rej in r.rejected:
            yield pvalue.TaggedOutput("rejected", rej)
        yield pvalue.TaggedOutput("counts", r.counts)
        yield pvalue.TaggedOutput("layouts", r.layout)


class _ExpandRowGroups(beam.DoFn):
    """Parquet: one element per row group; other formats pass through."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt

    def process(self, element: tuple[int, str, str]) -> Iterable[tuple[int, str, str, int | None]]:
        index, path, rel = element
        if self.fmt != "parquet":
            yield (index, path, rel, None)
            return
        import pyarrow.parquet as pq
        from apache_beam.io.filesystems import FileSystems

        with FileSystems.open(path) as f:
            n = pq.ParquetFile(f).metadata.num_row_groups
        for rg in range(max(n, 1)):
            yield (index, path, rel, rg)


class _BuildLists(beam.DoFn):
    def __init__(self, opts: ElwcOptions) -> None:
        self.opts = opts
        self._builder: ListBuilder | None = None

    def process(self, element: tuple[str, Iterable[Any]], layout: dict[str, Any]) -> Iterable[Any]:
        if self._builder is None:
            self._builder = ListBuilder(self.opts, layout)
        qid, chunks = element
        merged = merge_chunks(chunks)
        lists, stats = self._builder.build(merged)
        shard = shard_of(qid, self.opts.num_shards)
        for split, part, data in lists:
            yield ((split, shard), (qid, part, data))
        yield pvalue.TaggedOutput("stats", stats)


class ConvertToELWC(beam.PTransform):
    """Input files → serialized ELWC lists keyed by ``(split, shard)``, plus side results.

    Input: ``PBegin``. Output: a dict of PCollections:
    ``lists`` (``((split, shard), (qid, part, elwc_bytes))``), ``stats`` (one dict: list
    statistics), ``counts`` (one dict: input totals), ``layout`` (one dict: merged feature layout)
    and ``rejected`` (one dict per rejected line: file, line, reason, text).

    Args:
        files: ``(index, path, relative name)`` from :func:`list_input_files`.
        opts: conversion options.
    """

    def __init__(self, files: Sequence[tuple[int, str, str]], opts: ElwcOptions) -> None:
        super().__init__()
        self.files = list(files)
        self.opts = opts

    def expand(self, pbegin: beam.pvalue.PBegin) -> dict[str, beam.PCollection]:
        parsed = (
            pbegin
            | "ListFiles" >> beam.Create(self.files)
            | "ExpandRowGroups" >> beam.ParDo(_ExpandRowGroups(self.opts.input_format))
            | "SpreadFiles" >> beam.Reshuffle()
            | "ParseFiles" >> beam.ParDo(_ParseFile(self.opts)).with_outputs(
                "rejected", "counts", "layouts", main="chunks")
        )
        layout = parsed.layouts | "MergeLayouts" >> beam.CombineGlobally(LayoutCombineFn())
        counts = parsed.counts | "SumCounts" >> beam.CombineGlobally(CountsCombineFn())
        built = (
            parsed.chunks
            | "GroupByQuery" >> beam.GroupByKey()
            | "BuildLists" >> beam.ParDo(_BuildLists(self.opts), pvalue.AsSingleton(layout))
            .with_outputs("stats", main="lists")
        )
        stats = built.stats | "SumListStats" >> beam.CombineGlobally(CountsCombineFn())
        return {"lists": built.lists, "stats": stats, "counts": counts, "layout": layout,
                "rejected": parsed.rejected}


def shard_path(output: str, split: str, shard: int, num_shards: int, gzip: bool) -> str:
    """``<output>/<split>-SSSSS-of-NNNNN.tfrecord[.gz]``."""
    name = f"{split}-{shard:05d}-of-{num_shards:05d}.tfrecord" + (".gz" if gzip else "")
    return filesystem.join(output, name)


class _WriteShard(beam.DoFn):
    def __init__(self, output: str, opts: ElwcOptions) -> None:
        self.output = output
        self.opts = opts

    def process(self, element: tuple[tuple[str, int], Iterable[Any]],
                counts: dict[str, Any]) -> Iterable[dict[str, Any]]:
        if bad_fraction_error(counts, self.opts.max_bad_fraction):
            return
        (split, shard), items = element
        lists = sorted((x for x in items if x is not None), key=lambda x: (x[0], x[1]))
        gzip = self.opts.compression == "gzip"
        path = shard_path(self.output, split, shard, self.opts.num_shards, gzip)
        n = write_tfrecords(path, (x[2] for x in lists), gzip=gzip)
        yield {"split": split, "path": path, "lists": n}


def _write_rejected(element: tuple[int, Iterable[Any]], output: str) -> Iterable[int]:
    _, items = element
    rows = sorted((x for x in items if x is not None), key=lambda r: (r["file"], r["line"]))
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    filesystem.write_bytes(filesystem.join(output, REJECTED_PATH), text.encode("utf-8"))
    yield len(rows)


class _WriteReport(beam.DoFn):
    def __init__(self, output: str, opts: ElwcOptions) -> None:
        self.output = output
        self.opts = opts

    def process(self, _: Any, stats: dict[str, Any], counts: dict[str, Any],
                layout: dict[str, Any], shards: list[dict[str, Any]],
                rejected: list[int]) -> Iterable[dict[str, Any]]:
        o = self.opts
        error = bad_fraction_error(counts, o.max_bad_fraction)
        files: dict[str, list[str]] = {}
        for s in sorted(shards, key=lambda s: s["path"]):
            files.setdefault(s["split"], []).append(posixpath.basename(s["path"]))
        lines = counts.get("lines", 0)
        report = {
            "format": "beam_prep.elwc_stats", "version": 1,
            "status": "failed" if error else "ok", "error": error,
            "input": {**counts, "bad_fraction": (counts.get("lines_rejected", 0) / lines)
                      if lines else 0.0},
            "queries": stats.get("queries", 0), "lists": stats.get("lists", 0),
            "documents": stats.get("documents", 0),
            "splits": stats.get("splits", {}),
            "list_size_histogram": stats.get("list_size_histogram", {}),
            "label_histogram": stats.get("label_histogram", {}),
            "events": stats.get("events", {}),
            "policy": {"max_list_size": o.max_list_size, "list_policy": o.list_policy,
                       "min_list_size": o.min_list_size, "drop_no_positive": o.drop_no_positive,
                       "splits": [list(s) for s in o.splits], "num_shards": o.num_shards},
            "output_files": files, "rejected_file": REJECTED_PATH,
        }
        filesystem.write_bytes(filesystem.join(self.output, STATS_FILENAME),
                               (json.dumps(report, indent=1) + "\n").encode("utf-8"))
        if not error:
            spec = feature_spec_from_layout(layout, o)
            spec.save(filesystem.join(self.output, FEATURE_SPEC_FILENAME))
        yield report


class WriteELWC(beam.PTransform):
    """Writes the outputs of :class:`ConvertToELWC` under ``output``.

    Files: ``<split>-SSSSS-of-NNNNN.tfrecord[.gz]`` (every shard, possibly empty),
    ``rejected/rejected.jsonl``, then ``stats.json`` and ``feature_spec.json`` last. When too
    many lines were rejected no shard and no feature spec is written and ``stats.json`` says
    ``"status": "failed"``. Output: one PCollection holding the stats.json dict.
    """

    def __init__(self, output: str, opts: ElwcOptions) -> None:
        super().__init__()
        self.output = output
        self.opts = opts

    def expand(self, results: dict[str, beam.PCollection]) -> beam.PCollection:
        o = self.opts
        pipeline = results["lists"].pipeline
        counts_side = pvalue.AsSingleton(results["counts"])
        empty = [((split, s), None) for split, _ in o.splits for s in range(o.num_shards)]
        shards = (
            (results["lists"], pipeline | "AllShards" >> beam.Create(empty))
            | "WithEmptyShards" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShards" >> beam.ParDo(_WriteShard(self.output, o), counts_side)
        )
        rejected = (
            (results["rejected"] | "KeyRejected" >> beam.Map(lambda r: (0, r)),
             pipeline | "NoRejected" >> beam.Create([(0, None)]))
            | "FlattenRejected" >> beam.Flatten()
            | "GroupRejected" >> beam.GroupByKey()
            | "WriteRejected" >> beam.FlatMap(_write_rejected, self.output)
        )
        return (
            pipeline
            | "ReportTrigger" >> beam.Create([None])
            | "WriteReport" >> beam.ParDo(
                _WriteReport(self.output, o), pvalue.AsSingleton(results["stats"]),
                counts_side, pvalue.AsSingleton(results["layout"]), pvalue.AsList(shards),
                pvalue.AsList(rejected))
        )
