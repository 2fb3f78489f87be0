"""Small label-aware artifact directories made by the real job, for reader tests.

Example:
    >>> path, rows = make_labeled_dir("/tmp/x", seed=1)           # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from beam_prep.pipelines import analyze

SPEC = ("features:\n"
        "  - {name: city, kind: string, labels: clicked, min_diff_from_avg: 0}\n"
        "  - {name: plain, column: city, kind: string}\n")
HOSTILE = "\u202eevil\x1b[31m<b>"  # bidi override, ESC, markup


def make_labeled_dir(path: str, *, seed: int = 0, positive: float = 0.3,
                     rows: int = 300) -> tuple[str, dict[str, list]]:
    """Runs ``beam-prep analyze`` on generated rows; returns the directory and the columns."""
    rng = np.random.default_rng(seed)
    cities = [f"c{k}" for k in range(12)] + [HOSTILE]
    city = [cities[int(rng.integers(0, len(cities)))] for _ in range(rows)]
    clicked = [int(rng.random() < positive + 0.5 * (c in ("c1", HOSTILE))) for c in city]
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    data = root.parent / f"{root.name}-data.jsonl"
    data.write_text("".join(json.dumps({"city": c, "clicked": y}) + "\n"
                            for c, y in zip(city, clicked)), encoding="utf-8")
    spec = root.parent / f"{root.name}-spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    analyze.run(["--spec", str(spec), "--input", str(data), "--output", str(root), "--quiet",
                 "--overwrite"])
    return str(root), {"city": city, "clicked": clicked}
