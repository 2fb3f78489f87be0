"""Quantile sketch feeding: per reader batch (before) vs fixed 16,384-value chunks (now).

Run: ``python benchmarks/sketch_chunks.py`` (CPU time, best of 3, 60 batches of 65,536
values: normal floats, and integers with repeats).
"""

from __future__ import annotations

import pickle
import time

import numpy as np

from beam_prep.analyzers.numeric import add_to_sketch, new_sketch
from beam_prep.analyzers.sketch_chunks import ChunkedSketch


def main() -> None:
    """Prints ms per 65,536 values for both ways of feeding the sketch."""
    rng = np.random.default_rng(0)
    data = {"normal": [rng.normal(size=65536) for _ in range(60)],
            "ints": [rng.integers(0, 1000, size=65536).astype(np.float64) for _ in range(60)]}
    for name, batches in data.items():
        best_old = best_new = float("inf")
        for _ in range(3):
            t = time.process_time()
            s = new_sketch(0.01)
            for b in batches:
                add_to_sketch(s, b)
            pickle.dumps(s)
            best_old = min(best_old, time.process_time() - t)
            t = time.process_time()
            c = ChunkedSketch(new_sketch(0.01), add_to_sketch)
            for b in batches:
                c.add(b)
            c.finish()
            best_new = min(best_new, time.process_time() - t)
        n = len(batches)
        print(f"{name}: per batch {best_old / n * 1e3:.2f} ms, "
              f"chunked {best_new / n * 1e3:.2f} ms per 65,536 values")


if __name__ == "__main__":
    main()
