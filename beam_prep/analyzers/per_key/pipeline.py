"""Per-key statistics in the analysis: combine per (feature, partition), write sorted files.

Graph (labels as in the pipeline)::

    AnalyzeSplits ─ per_key ((feature, partition), KeyStats)
        ─ CombineKeyStats (CombinePerKey: exact merge, any order)
        ─ KeyLines (each partition's keys sorted, one JSON line per key: a sorted run,
          spilled under ``_tmp/`` when large; :mod:`~beam_prep.analyzers.per_key.runs`)
        ─ WithEmptyPerKey (Flatten with one seed per feature) ─ GroupPerKeyByFeature
        ─ WritePerKeyFiles (per feature: block-wise merge of the runs into the file)

A key lives in one hash partition (``token_hashes(key) % partitions``), so partitions are
combined in parallel and hold disjoint keys; the file is sorted by key over all of them,
so its bytes do not depend on the partition count. Memory: the combiner merges a
partition's pending KeyStats as soon as they hold as many rows as the merged ones (and
before its accumulator leaves the worker), so a partition is held about once, as columns
(about 100 bytes per key with short keys); the writer holds a batch of lines per run.

Example:
    >>> meta = per_key_outputs | PerKeyFiles(spec.to_dict(), "artifacts/")  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
import pyarrow as pa

from beam_prep.analyzers.key_lines import json_key, write_chunks
from beam_prep.analyzers.per_key import stats as pks
from beam_prep.analyzers.per_key.runs import make_run, merged_bytes
from beam_prep.analyzers.spill import stable_id, tmp_dir
from beam_prep.io import filesystem as fs
from beam_prep.io.contract.per_key_file import per_key_relpath


class KeyStatsCombineFn(beam.CombineFn):
    """Merges :class:`~beam_prep.analyzers.per_key.stats.KeyStats` exactly (order-free).

    The accumulator is ``[merged, pending...]``: pending inputs are merged in once they
    hold as many rows as the merged stats (or 16 of them wait), so a partition of many
    splits is held about once (amortised: each row is re-merged O(log splits) times), and
    :meth:`compact` merges before an accumulator is shuffled. The empty input gives
    :func:`~beam_prep.analyzers.per_key.stats.empty`.
    """

    def create_accumulator(self) -> list[pks.KeyStats]:
        return []

    def add_input(self, acc: list[pks.KeyStats], element: pks.KeyStats) -> list[pks.KeyStats]:
        acc.append(element)
        pending = sum(len(s) for s in acc[1:])
        return [pks.merge(acc)] if len(acc) >= 16 or pending >= len(acc[0]) else acc

    def merge_accumulators(self, accs: Iterable[list[pks.KeyStats]]) -> list[pks.KeyStats]:
        return [pks.merge([s for a in accs for s in a])]

    def compact(self, acc: list[pks.KeyStats]) -> list[pks.KeyStats]:
        return [pks.merge(acc)] if len(acc) > 1 else acc

    def extract_output(self, acc: list[pks.KeyStats]) -> pks.KeyStats:
        return pks.merge(acc)


def _number(x: float) -> str:
    # repr is the shortest round-trip form, as json.dumps writes a finite float
    return repr(x) if math.isfinite(x) else "null"


def key_lines(stats: pks.KeyStats) -> pa.Array:
    """One line (``[key, count, mean, variance, min, max]\\n``) per key of merged stats."""
    means, variances = pks.means_and_variances(stats)
    rows = zip(stats.keys.to_pylist(), stats.count.tolist(), means, variances,
               (stats.minimum + 0.0).tolist(), (stats.maximum + 0.0).tolist())
    return pa.array([f"[{json_key(k)},{c},{_number(m)},{_number(v)},{_number(lo)},"
                     f"{_number(hi)}]\n" for k, c, m, v, lo, hi in rows], pa.large_string())


def _finalize(kv: tuple[tuple[str, int], pks.KeyStats], temp_dir: str) -> tuple[str, Any]:
    """``(feature, (partition, run))``: the partition's lines as a sorted run."""
    (name, part), stats = kv
    path = f"{temp_dir}/per_key/{stable_id(name)}/p{part:05d}.arrow"
    return name, (part, make_run(stats.keys, key_lines(stats), path))


def write_runs(runs: list[Any], path: str) -> dict[str, Any]:
    """Merges sorted runs (:mod:`~beam_prep.analyzers.per_key.runs`) into the file.

    Returns:
        ``{"sha256": ..., "bytes": ..., "keys": ...}``.
    """
    return write_chunks(merged_bytes(runs), path, sum(r.num_rows if isinstance(
        r, pa.Table) else r.rows for r in runs))


class _WritePerKey(beam.DoFn):
    def __init__(self, output_dir: str) -> None:
        self._out = output_dir

    def process(self, kv: tuple[str, Iterable[Any]]) -> Iterator[tuple[str, dict]]:
        name, items = kv
        runs = [run for _, run in sorted((p for p in items if p is not None),
                                         key=lambda p: p[0])]
        rel = per_key_relpath(name)
        written = write_runs(runs, fs.join(self._out, rel))
        yield name, {"files": {"per_key": {"path": rel, "sha256": written["sha256"],
                                           "bytes": written["bytes"]}},
                     "key_count": written["keys"]}


class PerKeyFiles(beam.PTransform):
    """``((feature, partition), KeyStats)`` in, ``(feature, {files, key_count})`` out.

    Args:
        names: The features with ``per_key`` (each gets a file, empty without keys).
        output_dir: Artifact directory.
        temp_dir: Scratch directory for spilled runs (default: the artifacts' ``_tmp``,
            removed before the manifest is written).
    """

    def __init__(self, names: list[str], output_dir: str, temp_dir: str | None = None
                 ) -> None:
        super().__init__()
        self._names = list(names)
        self._out = output_dir
        self._temp = temp_dir if temp_dir is not None else tmp_dir(output_dir)

    def expand(self, pcoll: beam.PCollection) -> beam.PCollection:
        seeds = pcoll.pipeline | "EveryPerKeyFeature" >> beam.Create(
            [(n, None) for n in self._names], reshuffle=False)
        lines = (pcoll
                 | "CombineKeyStats" >> beam.CombinePerKey(KeyStatsCombineFn())
                 | "KeyLines" >> beam.Map(_finalize, self._temp))
        return ((lines, seeds)
                | "WithEmptyPerKey" >> beam.Flatten()
                | "GroupPerKeyByFeature" >> beam.GroupByKey()
                | "WritePerKeyFiles" >> beam.ParDo(_WritePerKey(self._out)))
