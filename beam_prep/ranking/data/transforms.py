"""Beam transforms of the ELWC job: files → pieces → blocks by (split, shard) → ELWC → shards.

Graph (stable step labels)::

    files ─ PlanPieces ─ SpreadPieces ─ ParsePieces ─┬─ blocks ─ GroupByShard ─ BuildLists ─┐
                                                     ├─ meta ─ MergeMeta (side input) ──────┤
                                                     └─ rejected ─ NumberRejected ─┐        │
          ┌────────────────────────────────────────────────────────────────────────┼────────┘
          ├─ lists ─ WriteShards (fused with BuildLists: no second shuffle)        │
          │          GroupRejected ─ WriteRejectedShards ◄──────────────────────────┘
          └─ stats ─ SumListStats ─ WriteReport (empty shards, stats.json, spec)

Why this shape (measured, see docs/ranking_data.md): a query's split and shard are a hash of its
id, so parsing can already cut its documents by output ``(split, shard)``; the only shuffle moves
compact columnar blocks (CSR numpy arrays, a few per piece and shard) instead of one element per
query or the encoded protos (which are about 6x larger than the sparse input). The writer of a
shard merges its blocks in input order, groups documents by query (stable sort), applies the
list policy and encodes whole batches with numpy. Large LETOR files are parsed in byte-range
pieces by several workers. Counters, feature layout and piece line counts (small: one entry per
piece) travel in one combined ``meta`` value, so the job has few stages (each stage costs a round
trip to every worker). Rejected lines never go through a side input: they are numbered with the
piece offsets of ``meta``, keyed by their range shard and written sharded (see
:mod:`beam_prep.ranking.data.rejected`); only their count and their count per reason code
(``rejected_by_reason``) are in ``meta``. The bad-fraction
check reads the counts once: the report says ``"status": "failed"`` and the launcher raises
:class:`~beam_prep.errors.InputError` (no exception inside a DoFn, which a runner would retry).

Inside a shard, lists are sorted by (query id, part index); the shard and the split of a query
come from a BLAKE2b hash of its id, so the output bytes do not depend on the runner, the number
of workers, the piece size or the order in which files are read.

Example:
    >>> opts = ElwcOptions(input_format="letor")
    >>> files = list_input_files(["examples/data/letor/lightgbm/rank.train"], opts)
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

from beam_prep import progress
from beam_prep.errors import InputError, SpecError
from beam_prep.io import filesystem
from beam_prep.io.commit.output import OutputPolicy
from beam_prep.io.inputs.patterns import distinct_files
from beam_prep.io.tfrecord_framing import write_tfrecords
from beam_prep.ranking.data.build import ListBuilder, feature_spec_from_layout
from beam_prep.ranking.data.list_stats import LIST_STATS_FIELDS
from beam_prep.ranking.data.lists import CountsCombineFn
from beam_prep.ranking.data.options import ElwcOptions
from beam_prep.ranking.data.rejected import (
    REJECTED_GLOB,
    LineIndex,
    NumberRejected,
    WriteRejected,
    rejected_path,
)
from beam_prep.ranking.data.sources import LayoutCombineFn, Piece, plan_pieces, read_piece
from beam_prep.ranking.feature_spec import FILENAME as FEATURE_SPEC_FILENAME

STATS_FILENAME = "stats.json"
DEFAULT_SPLIT_BYTES = 4 << 20  # smaller pieces parse faster (less temporary memory)

ELWC_OUTPUT = OutputPolicy(
    job="make-elwc",
    signatures=((STATS_FILENAME, FEATURE_SPEC_FILENAME),),
    owned=(STATS_FILENAME, FEATURE_SPEC_FILENAME, REJECTED_GLOB, "rejected/rejected.jsonl",
           "*-?????-of-?????.tfrecord", "*-?????-of-?????.tfrecord.gz",
           "report.html"),  # the job's HTML report (beam_prep.pipelines.job_report)
    last=STATS_FILENAME)
"""The make-elwc output folder (see :mod:`beam_prep.io.commit.output`): finished when it holds
``stats.json`` and ``feature_spec.json`` (a run that fails on bad input is never moved into the
folder: its report stays in the staging folder); only shards, those files and the rejected
shards (and the ``rejected/rejected.jsonl`` of older versions) are replaced, so shards of an
older run with other splits or shard counts never survive an ``--overwrite``."""


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
        folders = [p for p in matched if filesystem.is_local_folder(p)]
        if folders:
            raise InputError(f"input pattern {pattern!r} names the folder {folders[0]!r}, not "
                             f"files. Pass a glob of its files, e.g. --input "
                             f"'{folders[0].rstrip('/')}/*'.")
        paths.update(matched)
    if opts.is_letor:
        paths = {p for p in paths if not p.endswith(".query")}
    ordered = distinct_files(paths)  # one file matched under two spellings is read once
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
                f"--max_bad_fraction={max_bad_fraction}. See {REJECTED_GLOB}, fix the input, or "
                "raise --max_bad_fraction.")
    return None


class _PlanPieces(beam.DoFn):
    """``(index, path, rel)`` → ``(index, path, rel, (piece, start, end))`` per input piece."""

    def __init__(self, opts: ElwcOptions, split_bytes: int) -> None:
        self.opts = opts
        self.split_bytes = split_bytes

    def process(self, element: tuple[int, str, str]) -> Iterable[tuple[int, str, str, Piece]]:
        index, path, rel = element
        for piece in plan_pieces(path, self.opts, self.split_bytes):
            yield (index, path, rel, piece)


class _ParsePiece(beam.DoFn):
    def __init__(self, opts: ElwcOptions) -> None:
        self.opts = opts

    def process(self, element: tuple[int, str, str, Piece]) -> Iterable[Any]:
        index, path, rel, piece = element
        r = read_piece(path, rel, index, piece, self.opts)
        progress.record_unit(f"{index}:{piece[0]}", rows=r.physical_lines,
                             rejected=len(r.rejected))
        yield from r.blocks
        yield pvalue.TaggedOutput("meta", {
            "counts": r.counts, "layout": r.layout,
            "piece_lines": {(index, piece[0]): r.physical_lines}})
        if r.rejected:
            yield pvalue.TaggedOutput("rejected", ((index, piece[0]), r.rejected))


class MetaCombineFn(beam.CombineFn):
    """Everything small the pieces report, in one accumulator (one side input, few stages).

    Input: one dict per piece (``counts``, ``layout``, ``piece_lines``: ``{(file, piece):
    physical lines}``). Output: ``{"counts": summed counters, "layout": merged layout,
    "line_index": LineIndex}`` (where each piece's lines start, see
    :class:`~beam_prep.ranking.data.rejected.LineIndex`). Adding a piece costs O(its entries);
    the line index is one sort of the pieces. The empty input gives empty counts and layout
    and a line index of no piece.
    """

    def __init__(self) -> None:
        self._counts = CountsCombineFn()
        self._layout = LayoutCombineFn()

    def create_accumulator(self) -> dict[str, Any]:
        return {"counts": {}, "layout": {}, "piece_lines": {}}

    def add_input(self, acc: dict[str, Any], element: dict[str, Any]) -> dict[str, Any]:
        acc["counts"] = self._counts.add_input(acc["counts"], element["counts"])
        acc["layout"] = self._layout.add_input(acc["layout"], element["layout"])
        acc["piece_lines"].update(element["piece_lines"])
        return acc

    def merge_accumulators(self, accs: Iterable[dict[str, Any]]) -> dict[str, Any]:
        out = self.create_accumulator()
        for a in accs:
            out = self.add_input(out, a)
        return out

    def extract_output(self, acc: dict[str, Any]) -> dict[str, Any]:
        return {"counts": self._counts.extract_output(acc["counts"]),
                "layout": acc["layout"],
                "line_index": LineIndex.from_piece_lines(acc["piece_lines"])}


class _BuildLists(beam.DoFn):
    def __init__(self, opts: ElwcOptions) -> None:
        self.opts = opts
        self._builder: ListBuilder | None = None

    def process(self, element: tuple[tuple[str, int], Iterable[Any]],
                meta: dict[str, Any]) -> Iterable[Any]:
        if self._builder is None:
            self._builder = ListBuilder(self.opts, meta["layout"])
        key, blocks = element
        records, stats = self._builder.build(key[0], blocks)
        yield (key, records)
        if stats:
            yield pvalue.TaggedOutput("stats", stats)


class ConvertToELWC(beam.PTransform):
    """Input files → serialized ELWC lists, one element per non-empty output ``(split, shard)``.

    Input: ``PBegin``. Output: a dict of PCollections: ``lists``
    (``((split, shard), [(qid, part, elwc_bytes), ...])``, the records in output order),
    ``stats`` (one dict: list statistics), ``meta`` (one dict, see :class:`MetaCombineFn`),
    derived from it ``counts`` (one dict: input totals) and ``layout`` (one dict: merged
    feature layout), and ``rejected``: ``(rejected shard, [(file index, line, JSON text),
    ...])`` batches (one per piece and shard; the JSON object has ``file``, ``line`` counted
    from the start of the file, ``code``, ``reason`` and ``text``), ``opts.num_shards``
    rejected shards range-partitioned by input position (see
    :mod:`beam_prep.ranking.data.rejected`).

    Args:
        files: ``(index, path, relative name)`` from :func:`list_input_files`.
        opts: conversion options; ``num_shards`` must be set (see
            :func:`beam_prep.ranking.data.sharding.resolve_num_shards`).
        split_bytes: uncompressed LETOR files are parsed in pieces of at most this many bytes
            (<= 0: whole files). The output does not depend on it.
    """

    def __init__(self, files: Sequence[tuple[int, str, str]], opts: ElwcOptions, *,
                 split_bytes: int = DEFAULT_SPLIT_BYTES) -> None:
        super().__init__()
        _require_num_shards(opts)
        self.files = list(files)
        self.opts = opts
        self.split_bytes = split_bytes

    def expand(self, pbegin: beam.pvalue.PBegin) -> dict[str, beam.PCollection]:
        o = self.opts
        parsed = (
            pbegin
            | "ListFiles" >> beam.Create(self.files)
            | "PlanPieces" >> beam.ParDo(_PlanPieces(o, self.split_bytes))
            | "SpreadPieces" >> beam.Reshuffle()
            | "ParsePieces" >> beam.ParDo(_ParsePiece(o)).with_outputs(
                "meta", "rejected", main="blocks")
        )
        meta = parsed.meta | "MergeMeta" >> beam.CombineGlobally(MetaCombineFn())
        built = (
            parsed.blocks
            | "GroupByShard" >> beam.GroupByKey()
            | "BuildLists" >> beam.ParDo(_BuildLists(o), pvalue.AsSingleton(meta))
            .with_outputs("stats", main="lists")
        )
        stats = built.stats | "SumListStats" >> beam.CombineGlobally(CountsCombineFn())
        return {"lists": built.lists, "stats": stats, "meta": meta,
                "counts": meta | "Counts" >> beam.Map(lambda m: m["counts"]),
                "layout": meta | "Layout" >> beam.Map(lambda m: m["layout"]),
                "rejected": parsed.rejected
                | "NumberRejected" >> NumberRejected(meta, o.num_shards)}


def _require_num_shards(opts: ElwcOptions) -> None:
    if opts.num_shards is None:
        raise SpecError("`num_shards` must be set before the transforms are built. Received: "
                        "num_shards=None; call beam_prep.ranking.data.sharding."
                        "resolve_num_shards(opts, patterns, files) first.")


def shard_path(output: str, split: str, shard: int, num_shards: int, gzip: bool) -> str:
    """``<output>/<split>-SSSSS-of-NNNNN.tfrecord[.gz]``."""
    name = f"{split}-{shard:05d}-of-{num_shards:05d}.tfrecord" + (".gz" if gzip else "")
    return filesystem.join(output, name)


class _WriteShard(beam.DoFn):
    def __init__(self, output: str, opts: ElwcOptions) -> None:
        self.output = output
        self.opts = opts

    def process(self, element: tuple[tuple[str, int], list[tuple[str, int, bytes]]],
                meta: dict[str, Any]) -> Iterable[dict[str, Any]]:
        if bad_fraction_error(meta["counts"], self.opts.max_bad_fraction):
            return
        (split, shard), records = element
        gzip = self.opts.compression == "gzip"
        path = shard_path(self.output, split, shard, self.opts.num_shards, gzip)
        n = write_tfrecords(path, (data for _, _, data in records), gzip=gzip)
        yield {"split": split, "path": path, "lists": n}


class _WriteReport(beam.DoFn):
    """Writes the empty output and rejected shards, ``stats.json``, the feature spec."""

    def __init__(self, output: str, opts: ElwcOptions) -> None:
        self.output = output
        self.opts = opts

    def process(self, _: Any, stats: dict[str, Any], meta: dict[str, Any],
                shards: list[dict[str, Any]], rejected: list[dict[str, Any]]
                ) -> Iterable[dict[str, Any]]:
        o = self.opts
        counts, layout = meta["counts"], meta["layout"]
        error = bad_fraction_error(counts, o.max_bad_fraction)
        gzip = o.compression == "gzip"
        shards = list(shards)
        if not error:
            written = {s["path"] for s in shards}
            for split, _ in o.splits:
                for shard in range(o.num_shards):
                    path = shard_path(self.output, split, shard, o.num_shards, gzip)
                    if path not in written:
                        write_tfrecords(path, [], gzip=gzip)
                        shards.append({"split": split, "path": path, "lists": 0})
        written_rejected = {r["path"] for r in rejected}
        # No rejected line: no rejected/ shard at all (empty files read as "something was
        # rejected"); otherwise the whole -of-N set, empty shards included.
        rejected_files = [rejected_path(s, o.num_shards) for s in range(o.num_shards)] \
            if written_rejected or counts.get("lines_rejected", 0) else []
        for rel in rejected_files:
            if rel not in written_rejected:
                filesystem.write_bytes(filesystem.join(self.output, rel), b"")
        files: dict[str, list[str]] = {}
        for s in sorted(shards, key=lambda s: s["path"]):
            files.setdefault(s["split"], []).append(posixpath.basename(s["path"]))
        lines = counts.get("lines", 0)
        report = {
            "format": "beam_prep.elwc_stats", "version": 1,
            "status": "failed" if error else "ok", "error": error,
            "input": {**counts, "bad_fraction": (counts.get("lines_rejected", 0) / lines)
                      if lines else 0.0,
                      # {code: lines}, summed with the counts (exact on any runner); sorted
                      "rejected_by_reason": dict(sorted(
                          counts.get("rejected_by_reason", {}).items()))},
            "queries": stats.get("queries", 0), "lists": stats.get("lists", 0),
            "documents": stats.get("documents", 0),
            "splits": stats.get("splits", {}),
            "list_size_histogram": stats.get("list_size_histogram", {}),
            "label_histogram": stats.get("label_histogram", {}),
            # per-list and per-document statistics (beam_prep.ranking.data.list_stats)
            **{k: stats.get(k, {}) for k in LIST_STATS_FIELDS},
            "events": stats.get("events", {}),
            "policy": {"input_format": o.input_format, "max_list_size": o.max_list_size,
                       "list_policy": o.list_policy, "min_list_size": o.min_list_size,
                       "drop_no_positive": o.drop_no_positive,
                       "splits": [list(s) for s in o.splits], "num_shards": o.num_shards},
            "output_files": files, "rejected_files": rejected_files,
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
    ``rejected/rejected-SSSSS-of-NNNNN.jsonl`` (every shard, possibly empty; in name order they
    are sorted by file and line), then ``stats.json`` and ``feature_spec.json`` last. When too
    many lines were rejected no shard and no feature spec is written and ``stats.json`` says
    ``"status": "failed"`` (the rejected shards are written). Output: one PCollection holding
    the stats.json dict.
    """

    def __init__(self, output: str, opts: ElwcOptions) -> None:
        super().__init__()
        _require_num_shards(opts)
        self.output = output
        self.opts = opts

    def expand(self, results: dict[str, beam.PCollection]) -> beam.PCollection:
        pipeline = results["lists"].pipeline
        meta_side = pvalue.AsSingleton(results["meta"])
        shards = results["lists"] | "WriteShards" >> beam.ParDo(
            _WriteShard(self.output, self.opts), meta_side)
        rejected = results["rejected"] | "WriteRejected" >> WriteRejected(
            self.output, self.opts.num_shards)
        return (
            pipeline
            | "ReportTrigger" >> beam.Create([None])
            | "WriteReport" >> beam.ParDo(
                _WriteReport(self.output, self.opts), pvalue.AsSingleton(results["stats"]),
                meta_side, pvalue.AsList(shards), pvalue.AsList(rejected))
        )
