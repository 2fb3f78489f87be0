"""Shared data and the numpy group-by oracle of the per-key tests."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from beam_prep.pipelines import analyze

HOSTILE_KEYS = ["plain", 'quo"te', "tab\there", "new\nline", "cr\rlf", "back\\slash",
                "ünïcødé ✓", "\u2028sep", "nul\x00byte", "[UNK]", "  spaced  ", "😀",
                "\x00beam_prep:no_key\x00"]


def make_rows(n: int = 3000, keys: int = 40, seed: int = 0) -> dict[str, list]:
    """Rows with a value column ``price``, a text key ``store``, an int ``sid`` and gaps."""
    rng = np.random.default_rng(seed)
    names = HOSTILE_KEYS + [f"store_{i:03d}" for i in range(keys - len(HOSTILE_KEYS))]
    pick = rng.integers(0, len(names), n)
    price = np.round(rng.lognormal(2.0, 1.0, n), 2).tolist()
    store: list = [names[i] for i in pick]
    for i in range(0, n, 97):
        price[i] = None  # missing value
    for i in range(5, n, 89):
        store[i] = None  # missing key
    sid = rng.integers(0, 7, n).tolist()
    return {"price": price, "store": store, "sid": sid}


def write_jsonl(rows: dict[str, list], path: str) -> None:
    names = list(rows)
    with open(path, "w", encoding="utf-8") as f:
        for values in zip(*(rows[c] for c in names)):
            f.write(json.dumps(dict(zip(names, values)), ensure_ascii=False) + "\n")


def write_csv(rows: dict[str, list], path: str) -> None:
    pacsv.write_csv(pa.table(rows), path)


def run(tmp_path, spec_text: str, data: str, *extra: str, name: str = "out") -> str:
    spec = tmp_path / f"{name}.spec.yaml"
    spec.write_text(spec_text, encoding="utf-8")
    out = tmp_path / name
    analyze.run(["--spec", str(spec), "--input", data, "--output", str(out), *extra])
    return str(out)


def oracle(keys: list, values: list) -> dict[str, tuple]:
    """key -> (count, mean, variance, min, max) from numpy group-by + exact Fractions.

    Rows with a missing/empty key or a missing/non-finite value are skipped; mean and
    population variance are the float64 nearest to the exact values.
    """
    groups: dict[str, list[float]] = {}
    for k, v in zip(keys, values):
        if k is None or k == "" or v is None or not np.isfinite(v):
            continue
        groups.setdefault(k, []).append(float(v))
    out = {}
    for k, vs in groups.items():
        a = np.array(vs)
        n = len(vs)
        s = sum(Fraction(x) for x in vs)
        s2 = sum(Fraction(x) ** 2 for x in vs)
        mean = float(s / n)
        var = float((n * s2 - s * s) / (n * n))
        assert abs(mean - a.mean()) <= 1e-9 * max(1.0, abs(a.mean()))  # numpy agrees
        assert abs(var - a.var()) <= 1e-7 * max(1.0, a.var())
        out[k] = (n, mean, var, float(a.min()), float(a.max()))
    return out
