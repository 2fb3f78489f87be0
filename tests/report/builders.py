"""Synthetic inputs for the report tests: an artifact directory and an ELWC directory.

The raw data (values, documents, lists) is generated here and returned with the
directory, so tests compute their oracles from the raw data, not from the files.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import statistics
from dataclasses import dataclass, field
from typing import Any

from beam_prep.io.contract.artifacts import canonical_json, manifest_fingerprint
from beam_prep.spec import (
    HashedFeature,
    IntegerFeature,
    NumericFeature,
    Spec,
    StringFeature,
    TextFeature,
)

HOSTILE = ["<script>alert(1)</script>", "a&b", "\"quoted'", "שלום עולם", "\u202eevil",
           "</svg><b>x", "x,1]", "<!--", "Ünïcödé 日本", "plain", "tail"]


@dataclass
class RawData:
    """The raw values each feature of the synthetic artifact directory was built from."""

    city: list[str] = field(default_factory=list)
    city_missing: int = 4
    store: list[int] = field(default_factory=list)
    docs: list[list[str]] = field(default_factory=list)
    price: list[float] = field(default_factory=list)
    age: list[float] = field(default_factory=list)
    rows: int = 0


def _sorted_vocab(counter: collections.Counter) -> list[tuple[str, int]]:
    # count descending, ties by UTF-8 bytes descending (docs/artifacts.md)
    return sorted(((str(t), c) for t, c in counter.items()),
                  key=lambda tc: (-tc[1], [-b for b in tc[0].encode("utf-8")]))


def _write_vocab(root: str, name: str, rows: list[list[Any]]) -> dict[str, Any]:
    os.makedirs(os.path.join(root, "vocab"), exist_ok=True)
    files = {}
    txt = "".join(f"{r[0]}\n" for r in rows).encode("utf-8")
    side = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    for role, rel, data in (("vocabulary", f"vocab/{name}.txt", txt),
                            ("counts", f"vocab/{name}.counts.jsonl", side)):
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
        files[role] = {"path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                       "bytes": len(data)}
    return files


def _drops(**kw: tuple[int, int]) -> dict[str, Any]:
    out = {k: {"tokens": 0, "count": 0} for k in
           ("dropped_top_k", "dropped_min_count", "excluded_unwritable", "excluded_reserved")}
    for k, (tokens, count) in kw.items():
        out[k] = {"tokens": tokens, "count": count}
    return out


def make_analysis_dir(root: str, *, big_vocab: int = 0, terms: bool = True) -> RawData:
    """Writes a complete artifact directory; ``big_vocab`` > 0 adds a feature with that
    many tokens (counts 1 each after a few frequent ones); ``terms=False`` leaves out
    ``terms_per_document_log2`` (a manifest of before that field)."""
    rng = random.Random(7)
    raw = RawData()
    reps = [41, 37, 31, 29, 23, 19, 17, 13, 11, 7, 5]
    for tok, n in zip(HOSTILE, reps):
        raw.city += [tok] * n
    rng.shuffle(raw.city)
    raw.store = [rng.choice([101, 102, 205, 999]) for _ in range(180)]
    words = ["good", "bad", "fast", "slow", "fit", "late", "<em>", "ok"]
    raw.docs = [[rng.choice(words) for _ in range(rng.randint(1, 6))] for _ in range(150)]
    raw.price = [round(rng.lognormvariate(3, 0.6), 2) for _ in range(400)]
    raw.age = [float(rng.randint(18, 80)) for _ in range(300)]
    raw.rows = 420

    spec_feats = [StringFeature("city", top_k=6), IntegerFeature("store"),
                  TextFeature("review", output_mode="tf_idf", max_tokens=20),
                  NumericFeature("price", num_buckets=4), NumericFeature("age"),
                  NumericFeature("empty"), HashedFeature("uid", num_bins=8)]
    if big_vocab:
        spec_feats.append(StringFeature("big"))
    spec = Spec(tuple(spec_feats))
    feats: dict[str, Any] = {}

    city = _sorted_vocab(collections.Counter(raw.city))
    kept, dropped = city[:6], city[6:]
    feats["city"] = {"kind": "string", "files": _write_vocab(root, "city", [list(r) for r in kept]),
                     "stats": {"vocabulary_size": 6, "distinct_values": len(city),
                               "total_count": len(raw.city), "missing_count": raw.city_missing,
                               **_drops(dropped_top_k=(len(dropped),
                                                       sum(c for _, c in dropped)))}}
    store = _sorted_vocab(collections.Counter(raw.store))
    feats["store"] = {"kind": "integer",
                      "files": _write_vocab(root, "store", [list(r) for r in store]),
                      "stats": {"vocabulary_size": len(store), "distinct_values": len(store),
                                "total_count": len(raw.store), "missing_count": 0, **_drops()}}
    tf = collections.Counter(w for d in raw.docs for w in d)
    df = collections.Counter(w for d in raw.docs for w in set(d))
    review = _sorted_vocab(tf)
    feats["review"] = {"kind": "text",
                       "files": _write_vocab(root, "review", [[t, c, df[t]] for t, c in review]),
                       "stats": {"vocabulary_size": len(review), "distinct_values": len(review),
                                 "total_count": sum(tf.values()), "missing_count": 3,
                                 "document_count": len(raw.docs), **_drops()}}
    if terms:  # documents by bit_length of their term count (log2 buckets)
        by_bits = collections.Counter(len(d).bit_length() for d in raw.docs)
        feats["review"]["stats"]["terms_per_document_log2"] = [
            by_bits.get(b, 0) for b in range(max(by_bits) + 1)]
    p = sorted(raw.price)
    bounds = [p[len(p) * k // 4] for k in (1, 2, 3)]
    feats["price"] = {"kind": "numeric", "files": {}, "stats": {
        "count": len(p), "missing_count": 2, "nan_count": 1, "infinite_count": 3,
        "mean": statistics.fmean(p), "variance": statistics.pvariance(p), "min": p[0],
        "max": p[-1], "null_reasons": {}, "boundaries": bounds, "epsilon": 0.01}}
    feats["age"] = {"kind": "numeric", "files": {}, "stats": {
        "count": len(raw.age), "missing_count": 0, "nan_count": 0, "infinite_count": 0,
        "mean": statistics.fmean(raw.age), "variance": statistics.pvariance(raw.age),
        "min": min(raw.age), "max": max(raw.age), "null_reasons": {}, "boundaries": None,
        "epsilon": None}}
    feats["empty"] = {"kind": "numeric", "files": {}, "stats": {
        "count": 0, "missing_count": 420, "nan_count": 0, "infinite_count": 0, "mean": None,
        "variance": None, "min": None, "max": None,
        "null_reasons": {"mean": "no finite value"}, "boundaries": None, "epsilon": None}}
    feats["uid"] = {"kind": "hashed", "files": {}, "stats": {}}
    if big_vocab:
        head = [[f"frequent{i}", 1000 - i] for i in range(5)]
        rows = head + [[f"t{i:08d}", 1] for i in range(big_vocab - 5)]
        feats["big"] = {"kind": "string", "files": _write_vocab(root, "big", rows),
                        "stats": {"vocabulary_size": big_vocab, "distinct_values": big_vocab,
                                  "total_count": sum(r[1] for r in rows), "missing_count": 0,
                                  **_drops()}}
    manifest: dict[str, Any] = {
        "format": "beam_prep.artifacts", "format_version": 1, "spec": spec.to_dict(),
        "versions": {"beam_prep": "test", "apache_beam": "x"},
        "input": {"patterns": ["gs://bucket/<odd>&path/*.csv"], "format": "csv", "files": 2,
                  "splits": 3, "rows_read": raw.rows + 5, "rows_rejected": 5,
                  "rejected_by_reason": {"wrong_column_count": 3, "bad <utf8>": 2},
                  "rejected_files": ["rejected/rejected-00000-of-00001.jsonl"]},
        "features": feats}
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(os.path.join(root, "manifest.json"), "wb") as f:
        f.write(canonical_json(manifest))
    return raw


@dataclass
class ElwcRaw:
    """The lists (label lists) and rejected reasons the ELWC directory was built from."""

    lists: list[list[int]]
    rejected: list[str]
    max_list_size: int
    present: list[list[set[str]]] = field(default_factory=list)


def _per_list_fields(lists: list[list[int]], present: list[list[set[str]]]) -> dict[str, Any]:
    """The per-list / per-document stats.json fields, counted here with plain Python."""
    relevant = collections.Counter(str(sum(v > 0 for v in x)) for x in lists)
    top = collections.Counter(str(max(x)) for x in lists)
    names = [f"f{i}" for i in range(1, 11)]
    carried = {n: sum(n in doc for docs in present for doc in docs) for n in names}
    return {"relevant_per_list_histogram": dict(relevant),
            "max_label_per_list_histogram": dict(top),
            "example_features_present": carried, "context_features_present": {}}


def make_elwc_dir(root: str, *, per_list: bool = True) -> ElwcRaw:
    """Writes stats.json, feature_spec.json and rejected/rejected.jsonl.

    ``per_list=False`` writes a stats.json of before the per-list fields (no
    ``relevant_per_list_histogram`` …, no ``policy.input_format``)."""
    rng = random.Random(3)
    cap = 120
    lists = [[rng.choice([0, 0, 1, 2, 3]) for _ in range(min(rng.randint(1, 150), cap))]
             for _ in range(300)]
    lists[5] = [0, 0, 0]  # some lists without a relevant label
    lists[9] = [0]
    odds = {f"f{i}": 1.0 if i <= 3 else (0.0 if i == 10 else i / 10) for i in range(1, 11)}
    present = [[{n for n, p in odds.items() if rng.random() < p} for _ in x] for x in lists]
    rejected = ["negative_label"] * 4 + ['<b>bad</b> & "x"'] * 2
    sizes = collections.Counter(str(len(x)) for x in lists)
    labels = collections.Counter(str(v) for x in lists for v in x)
    docs = sum(len(x) for x in lists)
    stats = {"format": "beam_prep.elwc_stats", "version": 1, "status": "ok", "error": None,
             "input": {"documents_read": docs, "files": 1, "lines": docs + 6,
                       "lines_rejected": 6, "bad_fraction": 6 / (docs + 6)},
             "queries": 280, "lists": len(lists), "documents": docs,
             "splits": {"train": {"documents": docs, "lists": len(lists)}},
             "list_size_histogram": dict(sizes), "label_histogram": dict(labels),
             "events": {"queries_truncated": 9, "documents_truncated": 211},
             "policy": {"max_list_size": cap, "list_policy": "truncate", "min_list_size": 1,
                        "drop_no_positive": False, "splits": [["train", 1.0]], "num_shards": 1},
             "output_files": {"train": ["train-00000-of-00001.tfrecord"]},
             "rejected_file": "rejected/rejected.jsonl"}
    if per_list:
        stats.update(_per_list_fields(lists, present))
        stats["policy"]["input_format"] = "letor"
    os.makedirs(os.path.join(root, "rejected"), exist_ok=True)
    with open(os.path.join(root, "stats.json"), "w") as f:
        json.dump(stats, f)
    with open(os.path.join(root, "rejected", "rejected.jsonl"), "w") as f:
        for i, r in enumerate(rejected):
            f.write(json.dumps({"file": "x", "line": i + 1, "reason": r,
                                "text": "<script>1</script>"}) + "\n")
    spec = {"format": "beam_prep.elwc_feature_spec", "version": 1,
            "context": [{"name": "query", "dtype": "string", "shape": [], "default": ""}],
            "example": [{"name": f"f{i}", "dtype": "float", "shape": [], "default": 0.0}
                        for i in range(1, 11)],
            "label": {"name": "relevance", "dtype": "float", "padding": -1.0}}
    with open(os.path.join(root, "feature_spec.json"), "w") as f:
        json.dump(spec, f)
    return ElwcRaw(lists=lists, rejected=rejected, max_list_size=cap, present=present)
