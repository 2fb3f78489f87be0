"""The on-disk format of the analysis cache: one folder per split result, no pickle.

Layout (``DIR`` is ``--cache_dir``; any Beam filesystem, ``gs://`` included)::

    DIR/entries/<key[:2]>/<key>/index.json      written last (atomic), lists the files below
    DIR/entries/<key[:2]>/<key>/vocab-NNN.arrow one feature's count tables, Arrow IPC stream
                                                (token, count, df, hash: the token's uint64
                                                partition hash, so replay never re-hashes)
    DIR/entries/<key[:2]>/<key>/sketch-NNN.bin  one numeric feature's QuantilesSketch state
    DIR/entries/<key[:2]>/<key>/numeric.json    moments and counts of every numeric feature
    DIR/entries/<key[:2]>/<key>/<tag>-NNN.<suffix> one feature's value of an analysis family
                                                (analyzers.families), in the family's own
                                                form: labels-NNN.arrow (label table),
                                                target-NNN.jsonl ((token, fold) rows and
                                                exact label sums), per_key-NNN.arrow
                                                (KeyStats), per_key_buckets-NNN.arrow (KeyHist)
    DIR/entries/<key[:2]>/<key>/meta.json       row, reject, missing and document counts
    DIR/entries/<key[:2]>/<key>/rejected.jsonl  [sort key, json line] per rejected row
    DIR/plans/<key[:2]>/<key>.json              the byte-range splits of one CSV/JSONL file
    DIR/runs/<utc time>-<id>.json               the keys one run used (for pruning)

``index.json`` holds :data:`FORMAT_NAME`, the cache format version, the key, the split,
its content identity, the analysis key and per-feature keys, and the sha256 and size of
every payload file. An entry is used only when its index parses, names this format version
and key, and every payload file has the recorded size and sha256; otherwise it is a miss
with a warning and is rewritten. The index is written after the payloads (locally: a
temporary file renamed into place; on object stores an object write is atomic), so a
half-written entry is never used.

Floats are stored as ``float.hex`` strings (exact, and ``inf`` is representable); the
sketch as its own serialized state (``QuantilesSketch.__getstate__``, a protocol buffer).

Example:
    >>> write_entry("cache", key, result, info)                    # doctest: +SKIP
    >>> index = load_index("cache", key)                           # doctest: +SKIP
    >>> meta = load_meta(entry_dir("cache", key))                  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import pickle
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beam_prep.analyzers import families as registry
from beam_prep.analyzers import numeric as num
from beam_prep.analyzers.cache.key import CACHE_FORMAT_VERSION
from beam_prep.analyzers.family import AnalysisFamily
from beam_prep.analyzers.spill import SpillRef, materialize
from beam_prep.analyzers.vocab.count import SCHEMA
from beam_prep.analyzers.vocab.partition import token_hashes
from beam_prep.analyzers.weighted_moments import WeightedMoments
from beam_prep.io import filesystem as fs
from beam_prep.io.inputs.readers import Split

FORMAT_NAME = "beam_prep.analysis_cache"
ENTRIES_DIR = "entries"
PLANS_DIR = "plans"
RUNS_DIR = "runs"
INDEX = "index.json"
ENTRY_SCHEMA = SCHEMA.append(pa.field("hash", pa.uint64()))
"""A stored count table: the counts plus each token's partition hash (``token_hashes``)."""

_LOG = logging.getLogger("beam_prep.analyze")


class CacheFormatError(ValueError):
    """A stored family value that the entry's checksums accept but that does not parse,
    or an index whose family files do not match the spec (the split is analysed again)."""
_PLAIN = CompressionTypes.UNCOMPRESSED


@dataclasses.dataclass(frozen=True)
class SplitResult:
    """Everything the split analysis emits for one split.

    Attributes:
        vocab: Feature → its count tables (in memory or spilled), in emission order.
        numeric: Feature → partial, or None when the spec has no numeric feature.
        meta: Row, reject, missing and document counts.
        rejected: ``(sort key, json line)`` per rejected row.
        families: Family tag → feature → the split's value of that analysis family
            (:data:`~beam_prep.analyzers.families.FAMILIES`; unpartitioned).
    """

    vocab: dict[str, list[pa.Table | SpillRef]]
    numeric: dict[str, num.NumericPartial] | None
    meta: dict
    rejected: list[tuple[str, str]]
    families: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)


def entry_dir(cache_dir: str, key: str) -> str:
    """The folder of one entry."""
    return fs.join(cache_dir, ENTRIES_DIR, key[:2], key)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=1).encode("utf-8")


def _unlink_local(path: str) -> None:
    """Removes an existing local file or symlink first, so a write never goes *through* a
    symlink planted in the cache into its target."""
    if "://" not in path and os.path.lexists(path):
        os.remove(path)


def _write_tables(path: str, tables: list[pa.Table | SpillRef]) -> dict:
    """Writes a feature's tables (spilled ones read back one at a time) as one IPC stream."""
    fs.makedirs(FileSystems.split(path)[0])
    _unlink_local(path)
    with FileSystems.create(path, compression_type=_PLAIN) as f:
        sink = fs.HashingWriter(f)
        with pa.ipc.new_stream(sink, ENTRY_SCHEMA) as writer:
            for item in tables:
                t = materialize(item)
                hashes = token_hashes(t.column("token").combine_chunks())
                writer.write_table(t.append_column("hash", pa.array(hashes, pa.uint64())))
    return {"sha256": sink.hexdigest(), "bytes": sink.size}


def _write_file(path: str, data: bytes) -> dict:
    _unlink_local(path)
    fs.write_bytes(path, data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def write_atomic(path: str, data: bytes) -> None:
    """Writes a file so that readers see the old state or the whole new file."""
    if "://" in path:  # an object write is atomic
        fs.write_bytes(path, data)
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temp = f"{path}.tmp-{uuid.uuid4().hex}"
    with open(temp, "wb") as f:
        f.write(data)
    os.replace(temp, path)


def _moments_json(m: num.Moments | WeightedMoments) -> dict:
    # the exact sums are integers of up to ~4,300 bits: hex strings, exact and compact
    out = {"count": m.count, "total": hex(m.total), "total_sq": hex(m.total_sq),
           "minimum": m.minimum.hex(), "maximum": m.maximum.hex()}
    if isinstance(m, WeightedMoments):  # spec.weights: Σw too (total: Σwx, total_sq: Σwx²)
        out["weight"] = hex(m.weight)
    return out


def _moments_of(d: dict) -> num.Moments | WeightedMoments:
    if "weight" in d:
        return WeightedMoments(int(d["count"]), int(d["weight"], 16), int(d["total"], 16),
                               int(d["total_sq"], 16), float.fromhex(d["minimum"]),
                               float.fromhex(d["maximum"]))
    return num.Moments(int(d["count"]), int(d["total"], 16), int(d["total_sq"], 16),
                       float.fromhex(d["minimum"]), float.fromhex(d["maximum"]))


def write_entry(cache_dir: str, key: str, result: SplitResult, info: dict) -> None:
    """Stores one split's result; the index (with ``info`` and checksums) is written last.

    Args:
        cache_dir: The cache folder.
        key: The entry key (:func:`~beam_prep.analyzers.cache.key.entry_key`).
        result: What the split analysis emitted.
        info: Plain data recorded in the index (split, content identity, analysis keys).
    """
    folder = entry_dir(cache_dir, key)
    index_path = fs.join(folder, INDEX)
    if fs.exists(index_path):  # a stale or corrupt entry: never pair its index with new files
        FileSystems.delete([index_path])
    files: dict[str, dict] = {}
    vocab: dict[str, str] = {}
    for i, (name, tables) in enumerate(result.vocab.items()):
        vocab[name] = f"vocab-{i:03d}.arrow"
        files[vocab[name]] = _write_tables(fs.join(folder, vocab[name]), tables)
    numeric = None
    if result.numeric is not None:
        numeric = {}
        for i, (name, p) in enumerate(result.numeric.items()):
            sketch = None
            if p.sketch is not None:
                sketch = f"sketch-{i:03d}.bin"
                state = pickle.loads(p.sketch).__getstate__()  # our own in-memory bytes
                files[sketch] = _write_file(fs.join(folder, sketch), state)
            numeric[name] = {"moments": _moments_json(p.moments), "missing": p.missing,
                             "nan": p.nan, "infinite": p.infinite, "sketch": sketch}
        files["numeric.json"] = _write_file(fs.join(folder, "numeric.json"), _json(numeric))
    stored: dict[str, dict[str, str]] = {}  # family tag -> feature -> file
    for family in registry.FAMILIES:
        for i, (name, value) in enumerate(result.families.get(family.tag, {}).items()):
            rel = f"{family.tag}-{i:03d}.{family.suffix}"
            stored.setdefault(family.tag, {})[name] = rel
            files[rel] = _write_file(fs.join(folder, rel), family.to_bytes(value))
    files["meta.json"] = _write_file(fs.join(folder, "meta.json"), _json(result.meta))
    lines = "".join(json.dumps([k, line], ensure_ascii=False) + "\n"
                    for k, line in result.rejected)
    files["rejected.jsonl"] = _write_file(fs.join(folder, "rejected.jsonl"),
                                          lines.encode("utf-8"))
    index = {"format": FORMAT_NAME, "format_version": CACHE_FORMAT_VERSION, "key": key,
             **info, "vocab": vocab, "numeric": numeric is not None, "files": files,
             **stored}
    write_atomic(index_path, _json(index))


def _reject(key: str, why: str) -> None:
    _LOG.warning("analysis cache: entry %s is not used (%s); the split is analysed again "
                 "and the entry rewritten.", key, why)


def load_index(cache_dir: str, key: str) -> dict | None:
    """The checked index of an entry, or None (a miss; a damaged entry also warns).

    Every payload file is re-hashed before the entry is trusted.
    """
    folder = entry_dir(cache_dir, key)
    path = fs.join(folder, INDEX)
    if not fs.exists(path):
        return None
    try:
        index = json.loads(fs.read_bytes(path))
    except (ValueError, UnicodeDecodeError, OSError) as e:
        _reject(key, f"unreadable index: {e}")
        return None
    if not isinstance(index, dict) or index.get("format") != FORMAT_NAME:
        _reject(key, "not an analysis cache index")
        return None
    if index.get("format_version") != CACHE_FORMAT_VERSION:
        _reject(key, f"format_version {index.get('format_version')!r}, this version reads "
                     f"{CACHE_FORMAT_VERSION}")
        return None
    if index.get("key") != key or not isinstance(index.get("files"), dict):
        _reject(key, "the index belongs to another key")
        return None
    for rel, want in sorted(index["files"].items()):
        try:
            sha, size = fs.sha256_of(fs.join(folder, rel))
        except Exception as e:  # noqa: BLE001 - missing or unreadable: not usable
            _reject(key, f"{rel} cannot be read: {type(e).__name__}")
            return None
        if (sha, size) != (want.get("sha256"), want.get("bytes")):
            _reject(key, f"{rel} has sha256 {sha[:12]}… and {size} bytes, the index says "
                         f"{str(want.get('sha256'))[:12]}… and {want.get('bytes')}")
            return None
    return index


def plan_path(cache_dir: str, key: str) -> str:
    """The file of one split plan."""
    return fs.join(cache_dir, PLANS_DIR, key[:2], f"{key}.json")


def write_plan(cache_dir: str, key: str, splits: list[Split]) -> None:
    """Stores the splits of one file (one JSON object, written atomically)."""
    body = {"format": FORMAT_NAME, "format_version": CACHE_FORMAT_VERSION, "key": key,
            "splits": [[s.first_row, s.start, s.end] for s in splits]}
    write_atomic(plan_path(cache_dir, key), _json(body))


def load_plan(cache_dir: str, key: str, path: str, fmt: str) -> list[Split] | None:
    """The stored splits of a file, or None (a miss; a damaged plan also warns)."""
    target = plan_path(cache_dir, key)
    if not fs.exists(target):
        return None
    try:
        body = json.loads(fs.read_bytes(target))
        if (body["format"], body["format_version"], body["key"]) != (
                FORMAT_NAME, CACHE_FORMAT_VERSION, key):
            raise ValueError("another format, version or key")
        splits = [Split(path, fmt, None, int(first), int(start),
                        None if end is None else int(end))
                  for first, start, end in body["splits"]]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        _reject(key, f"damaged split plan: {e}")
        return None
    return splits or None


def vocab_tables(folder: str, relname: str) -> Iterator[pa.Table]:
    """The stored count tables of one feature (:data:`ENTRY_SCHEMA`), one batch at a time."""
    with FileSystems.open(fs.join(folder, relname), compression_type=_PLAIN) as f:
        reader = pa.ipc.open_stream(f)
        for batch in reader:
            yield pa.Table.from_batches([batch], schema=ENTRY_SCHEMA)


def partitions_of(table: pa.Table, num_partitions: int) -> list[tuple[int, pa.Table]]:
    """Splits a stored table (:data:`ENTRY_SCHEMA`) into per-partition count tables
    (:data:`SCHEMA`, empty partitions omitted) from its hash column: ``hash % n``, no
    re-hashing; a table all in one partition (stored with the same partition count) is
    returned whole, without a ``take``. Same rows in the same order as
    ``vocab.partition.split_by_partition``.

    Example:
        >>> table = next(vocab_tables(folder, "vocab-000.arrow"))   # doctest: +SKIP
        >>> parts = partitions_of(table, 8)                         # doctest: +SKIP
    """
    if table.num_rows == 0:
        return []
    counts = table.drop_columns(["hash"])
    if num_partitions == 1:
        return [(0, counts.combine_chunks())]
    hashes = table.column("hash").combine_chunks().to_numpy(zero_copy_only=False)
    part = (hashes % np.uint64(num_partitions)).astype(np.int64)
    if (part == part[0]).all():  # the usual case: stored per partition, same partition count
        return [(int(part[0]), counts)]
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(num_partitions + 1))
    return [(p, counts.take(pa.array(order[bounds[p]:bounds[p + 1]])))
            for p in range(num_partitions) if bounds[p + 1] > bounds[p]]


def load_numeric(folder: str) -> dict[str, num.NumericPartial]:
    """The numeric partials of an entry (sketches rebuilt from their own state)."""
    from tfx_bsl.sketches import QuantilesSketch

    out: dict[str, num.NumericPartial] = {}
    for name, d in json.loads(fs.read_bytes(fs.join(folder, "numeric.json"))).items():
        sketch = None
        if d["sketch"] is not None:
            s = QuantilesSketch.__new__(QuantilesSketch)
            s.__setstate__(fs.read_bytes(fs.join(folder, d["sketch"])))
            sketch = pickle.dumps(s)  # the pipeline's in-memory form, as AnalyzeSplitFn's
        out[name] = num.NumericPartial(_moments_of(d["moments"]), int(d["missing"]),
                                       int(d["nan"]), int(d["infinite"]), sketch)
    return out


def load_family_values(folder: str, index: dict, family: AnalysisFamily,
                       features: dict[str, Any]) -> dict[str, Any]:
    """One family's stored values of an entry: feature → value (in ``features``' order).

    Args:
        folder: The entry's folder.
        index: Its checked index (:func:`load_index`).
        family: The family.
        features: The spec's features of the family, by name.

    Raises:
        CacheFormatError: The index lists other features than the spec's (or, for a family
            whose every split emits every feature, not all of them), a file outside the
            entry's checksummed ones, or a file that does not parse.
    """
    stored = index.get(family.tag, {})
    expected = set(features)
    if not isinstance(stored, dict):  # index.json is text; its payloads are checksummed
        raise CacheFormatError(f"the entry's {family.tag} field is not an object")
    if not set(stored) <= expected or (family.every_feature and set(stored) != expected) or any(
            not isinstance(rel, str) or "/" in rel or rel not in index["files"]
            for rel in stored.values()):  # only checksummed files of the entry itself
        raise CacheFormatError(f"the entry lists {family.tag} tables {sorted(stored)[:5]}, "
                               f"the spec has {sorted(expected)[:5]}")
    out = {}
    for name, feature in features.items():
        if name in stored:
            rel = stored[name]
            try:
                out[name] = family.from_bytes(fs.read_bytes(fs.join(folder, rel)), feature, rel)
            except OSError:
                raise
            except Exception as e:  # noqa: BLE001 - any parse failure of a payload is a miss
                raise CacheFormatError(f"{rel} does not parse: {type(e).__name__}: {e}") from e
    return out


def load_meta(folder: str) -> dict:
    """The counts of an entry."""
    return json.loads(fs.read_bytes(fs.join(folder, "meta.json")))


def load_rejected(folder: str) -> Iterator[tuple[str, str]]:
    """The rejected rows of an entry, as ``(sort key, json line)``."""
    body = fs.read_bytes(fs.join(folder, "rejected.jsonl")).decode("utf-8")
    for line in body.split("\n"):  # not splitlines(): JSON leaves U+2028 unescaped
        if line:
            key, text = json.loads(line)
            yield key, text
