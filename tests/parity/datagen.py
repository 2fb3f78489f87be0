"""Deterministic data shared by the parity tests (TFT and Keras).

The data is built to stress vocabulary ordering and numeric statistics:

* ``s`` (strings): ~2,100 distinct tokens with Zipf-like counts (count ``~ C / rank``), so the
  tail has large groups of tied counts. Tokens include Greek, CJK, accented and combining
  characters, emoji, inner/leading/trailing spaces, commas and double quotes (CSV quoting),
  digit strings such as ``"007"`` (must stay strings) and ``"[UNK]"``. No token is empty or
  contains a line break (both are excluded from vocabulary files by design and tested
  elsewhere).
* ``i`` (integers): ~700 distinct values in ``[-600, 1400)`` with Zipf-like counts and ties,
  so that decimal-string tie order (``"5" > "10" > "-3"``) differs from numeric order.
* ``x_pareto``, ``x_student``, ``x_zipf`` (numbers): heavy tailed (Pareto with shape 1.2,
  Student t with 2 degrees of freedom, Zipf integers with many repeated values). Every value
  is **exactly representable in float32** (generated in float64, rounded to float32, stored
  as the float64 of that float32), so a reader that parses FLOAT as float32 (TFT) and one
  that parses float64 (beam_prep) see the same numbers.

Example:
    >>> cols = generate(100)
    >>> len(cols["s"]) == len(cols["x_pareto"]) == 100
    True
"""

from __future__ import annotations

import csv
import json
from typing import Any

import numpy as np

NUM_ROWS = 20_000
SEED = 20240611
NUMERIC_COLUMNS = ("x_pareto", "x_student", "x_zipf")


def _string_tokens(n: int) -> list[str]:
    """``n`` distinct tokens cycling through awkward shapes."""
    makers = [
        lambda i: f"w{i}",
        lambda i: f"ξένος{i}",
        lambda i: f"日本{i}",
        lambda i: f"é{i}",
        lambda i: f"e\u0301{i}",           # combining acute accent
        lambda i: f"a {i} b",               # inner spaces
        lambda i: f" lead{i}",              # leading space
        lambda i: f"trail{i} ",             # trailing space
        lambda i: f'q"{i},x',               # quote and comma: CSV quoting
        lambda i: f"🙂{i}",
        lambda i: f"{i:03d}",               # digit string: must stay a string
        lambda i: f"Ω{i}\u00a0Ω",           # no-break space (not a line break)
        lambda i: f"Z{i}",                  # uppercase ASCII sorts below lowercase
    ]
    tokens = [makers[i % len(makers)](i) for i in range(n - 1)]
    tokens.append("[UNK]")
    assert len(set(tokens)) == n
    return tokens


def _zipf_column(values: list[Any], num_rows: int, scale: float,
                 rng: np.random.Generator) -> list[Any]:
    """Repeats ``values[r]`` about ``scale / (r + 1)`` times (at least once), shuffled.

    The total is trimmed or topped up (with the most frequent value) to ``num_rows``.
    """
    counts = np.maximum(1, np.floor(scale / np.arange(1, len(values) + 1))).astype(np.int64)
    column: list[Any] = []
    for v, c in zip(values, counts):
        column.extend([v] * int(c))
    if len(column) > num_rows:
        # Trim from the tail of the repeated list (the rarest values) to keep ties there.
        column = column[:num_rows]
    else:
        column.extend([values[0]] * (num_rows - len(column)))
    order = rng.permutation(len(column))
    return [column[k] for k in order]


def _float32_exact(x: np.ndarray) -> list[float]:
    return x.astype(np.float32).astype(np.float64).tolist()


def generate(num_rows: int = NUM_ROWS, seed: int = SEED) -> dict[str, list[Any]]:
    """The columns ``s``, ``i``, ``x_pareto``, ``x_student``, ``x_zipf`` (``num_rows`` each)."""
    rng = np.random.default_rng(seed)
    string_values = _string_tokens(2100)
    rng.shuffle(string_values)  # so that rank does not follow token shape
    int_values = [int(v) for v in rng.permutation(np.arange(-600, 1400))[:700]]
    # Make the decimal-string vs numeric tie order visibly different.
    for v in (5, 10, -3, 100, -20, 7):
        if v in int_values:
            int_values.remove(v)
    int_values[300:300] = [5, 10, -3, 100, -20, 7]
    pareto = (rng.pareto(1.2, num_rows) + 1.0) * 3.0
    student = rng.standard_t(2.0, num_rows) * 50.0 + 10.0
    zipf = np.minimum(rng.zipf(1.8, num_rows), 10**6).astype(np.float64) * 0.25
    return {
        "s": _zipf_column(string_values, num_rows, 2400.0, rng),
        "i": _zipf_column(int_values, num_rows, 2500.0, rng),
        "x_pareto": _float32_exact(pareto),
        "x_student": _float32_exact(student),
        "x_zipf": _float32_exact(zipf),
    }


def write_csv(columns: dict[str, list[Any]], path: str) -> None:
    """Writes a CSV with a header row; floats as ``repr`` (exact round trip)."""
    names = list(columns)
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_MINIMAL)
        w.writerow(names)
        for row in zip(*(columns[n] for n in names)):
            w.writerow([repr(v) if isinstance(v, float) else v for v in row])


def write_json(columns: dict[str, list[Any]], path: str) -> None:
    """Writes the columns as one JSON object (input of the TFT reference script)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(columns, f, ensure_ascii=False)


def write_jsonl(rows: list[dict[str, Any]], path: str) -> None:
    """Writes one JSON object per line."""
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
