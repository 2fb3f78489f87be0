"""The weighted vocabularies' part of the analysis graph (after the shared ``CountTokens``).

Graph (every step labelled)::

    summed band tables ((feature.wBAND, partition), table)
      ─ ByFeaturePartition ─ GroupBands ─ PruneWeighted ─┬─ GroupWeightedByFeature
    EveryWeightedVocabulary (empty seeds) ───────────────┘   ─ WriteWeightedVocabularies

The band tables of one token all land in one partition (the hash is the token's), so a
partition's bands give its tokens' exact weighted counts (:mod:`vocab.weights`); each
partition is pruned (``min_count`` on the weighted count, local ``top_k``) and sorted, and
the feature's sorted runs are merged into its files (:mod:`weighted.vocab`). Emits
``(feature, vocabulary meta)`` like the unweighted writer, with ``kept_count`` and the
drops' ``count`` as floats.

Example:
    >>> metas = summed | WeightedVocabularies(spec_dict, out, temp, names)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import apache_beam as beam

from beam_prep.analyzers.vocab import merge as vmerge
from beam_prep.analyzers.vocab.weights import WEIGHTED_SCHEMA, combine_bands, parse_band_key
from beam_prep.analyzers.weighted import vocab as wv
from beam_prep.io import filesystem as fs
from beam_prep.io.contract import artifacts as layout
from beam_prep.spec import Spec

__all__ = ["WeightedVocabularies", "is_band_element"]


def is_band_element(kv: tuple[tuple[str, int], Any]) -> bool:
    """Whether a counted element belongs to a weighted feature (a band key)."""
    return parse_band_key(kv[0][0]) is not None


def _by_feature(kv: tuple[tuple[str, int], Any]) -> tuple[tuple[str, int], tuple[int, Any]]:
    (key, part), table = kv
    name, band = parse_band_key(key)  # type: ignore[misc]
    return (name, part), (band, table)


def _limits(feature: Any) -> tuple[float, int | None, tuple[str, ...]]:
    if feature.kind == "text":  # TextVectorization reserves its OOV token (pipeline.py)
        return 0.0, feature.max_vocabulary_tokens(), ("[UNK]",)
    return float(feature.min_count), feature.top_k, ()


class _Prune(beam.DoFn):
    def __init__(self, spec_dict: dict, temp_dir: str, spill_rows: int) -> None:
        self._spec_dict, self._temp, self._spill_rows = spec_dict, temp_dir, spill_rows

    def setup(self) -> None:
        self._spec = Spec.from_dict(self._spec_dict)

    def process(self, kv: tuple[tuple[str, int], Iterable[tuple[int, Any]]]):
        (name, part), bands = kv
        table = combine_bands([{band: t} for band, t in bands])
        min_count, top_k, reserved = _limits(self._spec.feature(name))
        pruned, drops = wv.prune_weighted(table, min_count=min_count, top_k=top_k,
                                          reserved=reserved)
        run: Any = pruned
        if pruned.num_rows >= self._spill_rows:
            run = vmerge.write_run(pruned, f"{self._temp}/wpruned/{name}/p{part:05d}.arrow")
        yield name, (part, run, drops)


class _Write(beam.DoFn):
    def __init__(self, output_dir: str, spec_dict: dict, temp_dir: str) -> None:
        self._out, self._spec_dict, self._temp = output_dir, spec_dict, temp_dir

    def setup(self) -> None:
        self._spec = Spec.from_dict(self._spec_dict)

    def process(self, kv: tuple[str, Iterable[tuple[int, Any, dict]]]):
        name, parts = kv
        parts = sorted(parts, key=lambda p: p[0])
        drops: dict = {}
        for _, _, d in parts:
            drops = wv.add_stats(drops, d) if d else drops
        pruned = drops.pop("pruned", {"tokens": 0, "count": 0})
        _, top_k, _ = _limits(self._spec.feature(name))
        rels = {"vocabulary": layout.vocabulary_relpath(name),
                "counts": layout.counts_relpath(name)}
        written = wv.write_weighted_files(
            [run for _, run, _ in parts], fs.join(self._out, rels["vocabulary"]),
            fs.join(self._out, rels["counts"]), top_k=top_k,
            temp_dir=f"{self._temp}/wmerge/{name}")
        kept = written["kept"]
        cut = {k: pruned[k] - kept[k] for k in ("tokens", "count")}
        drops = wv.add_stats(drops, {"dropped_top_k": cut})
        files = {role: {"path": rel, "sha256": written[role][0], "bytes": written[role][1]}
                 for role, rel in rels.items()}
        yield name, {"files": files, "vocabulary_size": kept["tokens"],
                     "kept_count": wv.to_float(kept["count"]),
                     "drops": wv.finish_stats(drops), "first": written["first"]}


class WeightedVocabularies(beam.PTransform):
    """Summed band tables -> ``(feature, vocabulary meta)`` for every weighted vocabulary.

    Args:
        spec_dict: ``Spec.to_dict()``.
        output_dir: The artifact folder.
        temp_dir: Scratch folder (spilled runs, merge levels).
        names: The weighted vocabulary features (each gets files, even with no token).
        spill_rows: Pruned partitions of this many rows or more are spilled.
    """

    def __init__(self, spec_dict: dict, output_dir: str, temp_dir: str, names: Sequence[str],
                 spill_rows: int) -> None:
        super().__init__()
        self._spec_dict, self._out, self._temp = spec_dict, output_dir, temp_dir
        self._names, self._spill_rows = list(names), spill_rows

    def expand(self, summed: beam.PCollection) -> beam.PCollection:
        p = summed.pipeline
        seeds = p | "EveryWeightedVocabulary" >> beam.Create(
            [(n, (-1, WEIGHTED_SCHEMA.empty_table(), {})) for n in self._names],
            reshuffle=False)
        pruned = (summed
                  | "ByFeaturePartition" >> beam.Map(_by_feature)
                  | "GroupBands" >> beam.GroupByKey()
                  | "PruneWeighted" >> beam.ParDo(_Prune(self._spec_dict, self._temp,
                                                         self._spill_rows)))
        return ((pruned, seeds)
                | "WithEmptyWeighted" >> beam.Flatten()
                | "GroupWeightedByFeature" >> beam.GroupByKey()
                | "WriteWeightedVocabularies" >> beam.ParDo(
                    _Write(self._out, self._spec_dict, self._temp)))
