"""Fixtures for ``make-elwc --artifacts``: artifacts, a JSONL ranking input, both ELWC runs.

The artifacts are written by the independent fixture writer of the codegen tests
(``write_artifacts``); the input has context and example features with unseen values,
missing cells, NaN and lists with missing elements.
"""

from __future__ import annotations

import json
import os
import random

from tests.codegen.artifact_fixtures import write_artifacts

SPEC = {"features": [
    {"name": "country", "kind": "string", "num_oov_indices": 2},
    {"name": "city", "kind": "string"},
    {"name": "store_id", "kind": "integer", "default_value": 99},
    {"name": "price", "kind": "numeric", "num_buckets": 3, "default_value": 20.0},
    {"name": "weight", "kind": "numeric"},
    {"name": "user_id", "kind": "hashed", "num_bins": 16, "salt": 7},
    {"name": "brand", "kind": "hashed", "num_bins": 8},
    {"name": "tags", "kind": "string", "shape": "list"},
    {"name": "strict", "kind": "string", "num_oov_indices": 0},
]}
DATA = {
    "country": ["US", "DE", "FR", "DE", "US", "JP", "DE", "US"],
    "city": ["Paris", "Rome", "Rome", "Paris", "Oslo", "Rome", "Paris", "Lima"],
    "store_id": [10, 20, None, 10, 30, None, 20, 10],
    "price": [10.0, 3.0, 7.5, 12.0, 20.0, 15.0, 4.0, 30.0],
    "weight": [1.5, 2.0, None, 0.5, 3.0, 1.0, 2.5, 1.0],
    "user_id": ["u1", "u2", "u3", "u1", "u4", "u5", "u2", "u6"],
    "brand": ["a", "b", "c", "a", "b", "c", "a", "b"],
    "tags": [["red", "big"], ["red"], [], ["blue", "red"], None, ["big"], ["red"], ["x"]],
    "strict": ["s1", "s2", "s1", "s1", "s2", "s1", "s2", "s1"],
}
BOUNDARIES = {"price": [5.0, 12.0]}
CONTEXT = ("country", "user_id")


def artifacts(path: str) -> str:
    """The artifact directory of :data:`SPEC` over :data:`DATA`."""
    return write_artifacts(path, SPEC, DATA, boundaries=BOUNDARIES)


def rows(n: int = 90, *, strict_oov: bool = False, seed: int = 0) -> list[dict]:
    """Input documents: 6 per query; unseen values, missing cells (None / absent), NaN."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        q = i // 6
        row = {"qid": f"q{q:03d}", "label": r.choice([0, 0, 1, 2]),
               "country": ["US", "DE", "ZZ", None, "FR"][q % 5],
               "user_id": [f"u{q % 7}", None][q % 4 == 3],
               "city": r.choice(["Paris", "Rome", "Nowhere", None, "", "Lima"]),
               "store_id": r.choice([10, 20, 30, 77, None, -5]),
               "price": r.choice([1.0, 12.5, None, 40.0, float("nan"), 5.0, -3.25]),
               "brand": r.choice(["a", "b", "zz", None]),
               "weight": r.choice([1.0, None, float("nan"), 2.25]),
               "tags": r.choice([["red", "big"], ["blue", None, "new"], [], None, ["x"]]),
               "strict": r.choice(["s1", "s2"]),
               "other": round(r.random(), 3)}
        if strict_oov and i % 11 == 4:
            row["strict"] = "unknown"
        if i % 9 == 0:
            del row["brand"]  # absent key: a missing cell
        out.append(row)
    return out


def write_jsonl(path: str, docs: list[dict]) -> str:
    """Writes one JSON object per line (NaN as the JSON extension ``NaN``)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    return path


def make_elwc_args(inp: str, out: str, *extra: str) -> list[str]:
    """make-elwc over the JSONL input (context columns :data:`CONTEXT`, int labels)."""
    return ["--input", inp, "--input_format", "jsonl", "--output", out,
            "--context_columns", ",".join(CONTEXT), "--label_dtype", "int64",
            "--splits", "train:0.7,validation:0.3", "--quiet", *extra]
