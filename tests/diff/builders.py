"""Artifact directories for the diff tests, made by the real analyzer from small CSVs.

The raw rows are returned with each directory so that tests compute their oracles from the
data (collections.Counter, numpy), never from the diff's own output.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass

import numpy as np
from beam_prep.pipelines import analyze

SPEC = """
features:
  - {name: country, kind: string}
  - {name: price, kind: numeric, num_buckets: 4}
  - {name: user, kind: hashed, num_bins: 8}
"""
SPEC_WITH_CITY = SPEC + "  - {name: city, kind: string}\n"

POOL = ["US", "DE", "FR", "日本", "a b", "x,y"]
WEIGHTS = [0.40, 0.25, 0.15, 0.10, 0.06, 0.04]


@dataclass
class Raw:
    """Rows an artifact directory was analysed from (None = empty CSV field)."""

    country: list[str | None]
    price: list[float | None]
    path: str = ""


def make_rows(n: int, seed: int, *, dominant: str | None = None, dominant_share: float = 0.0,
              mean: float = 10.0, std: float = 2.0, drop: tuple[str, ...] = ()) -> Raw:
    """``n`` rows; ``dominant`` replaces a share of the countries; ``drop`` removes tokens."""
    rng = np.random.default_rng(seed)
    pool = [t for t in POOL if t not in drop]
    w = np.array([wt for t, wt in zip(POOL, WEIGHTS) if t not in drop])
    country: list[str | None] = [str(c) for c in rng.choice(pool, n, p=w / w.sum())]
    if dominant is not None:
        for i in np.flatnonzero(rng.random(n) < dominant_share):
            country[int(i)] = dominant
    price: list[float | None] = [round(float(v), 6) for v in rng.normal(mean, std, n)]
    return Raw(country, price)


def analyze_rows(root: str, name: str, raw: Raw, *, spec: str = SPEC,
                 city: list[str] | None = None) -> Raw:
    """Writes ``<root>/<name>.csv`` and analyses it into ``<root>/<name>``."""
    data = os.path.join(root, f"{name}.csv")
    with open(data, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["country", "price", "user"] + (["city"] if city is not None else []))
        for i, (c, p) in enumerate(zip(raw.country, raw.price)):
            row = ["" if c is None else c, "" if p is None else repr(p), f"u{i % 13}"]
            w.writerow(row + ([city[i]] if city is not None else []))
    spec_path = os.path.join(root, f"{name}.yaml")
    with open(spec_path, "w", encoding="utf-8") as f:
        f.write(spec)
    out = os.path.join(root, name)
    analyze.run(["--spec", spec_path, "--input", data, "--output", out])
    raw.path = out
    return raw
