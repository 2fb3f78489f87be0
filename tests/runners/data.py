"""Small inputs that exercise every feature family, for the runner-equality tests.

The files are written from a seeded generator, a few rows are deliberately bad (so rejected
rows and per-reason counts are compared too), and the spec covers every analysis family:
vocabularies (string, integer, text with tf-idf), numeric with quantiles and robust scaling,
per-key statistics and buckets, weights, labels (mutual information), target encoding,
derived expressions and list features. Sizes are small: the equality tests run each job on
three engines on a 2-core machine.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

SPEC = """\
features:
  - {name: country, kind: string, top_k: 6, min_count: 2}
  - {name: item, kind: integer, column: item_id}
  - {name: title, kind: text, ngrams: 2, output_mode: tf_idf}
  - {name: price, kind: numeric, num_buckets: 8}
  - {name: amount, kind: numeric, scaling: robust, impute: median, missing_indicator: true}
  - {name: sales, kind: numeric, per_key: store, per_key_count: true, num_buckets: 4}
  - {name: query, kind: string, weights: w, min_count: 0.5}
  - {name: ad, kind: string, labels: clicked, top_k: 20}
  - {name: city, kind: string, target_encoding: {labels: clicked, fold_column: user_id, folds: 3}}
  - {name: log_price, kind: numeric, expr: "log1p(price)", num_buckets: 4}
  - {name: tags, kind: string, expr: "split(tags_raw, '|')", shape: list}
  - {name: user, kind: hashed, column: user_id, num_bins: 64}
"""

COLUMNS = ["country", "item_id", "title", "price", "amount", "sales", "store", "query", "w",
           "ad", "clicked", "city", "user_id", "tags_raw"]

_WORDS = ["red", "blue", "shoe", "boot", "fast", "cheap", "new", "old", "big", "tiny"]
_COUNTRIES = ["US", "DE", "FR", "Ξένος", "日本", "x,y", "rare"]


def _row(rng: random.Random, i: int) -> list[str]:
    title = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 5)))
    amount = "" if i % 17 == 0 else f"{rng.lognormvariate(2.0, 1.0):.6g}"
    return [rng.choice(_COUNTRIES), str(rng.randint(-5, 60)), title,
            f"{rng.lognormvariate(1.0, 0.8):.6g}", amount, f"{rng.gauss(100, 30):.6g}",
            f"s{rng.randint(0, 11)}", f"q{rng.randint(0, 40)}", f"{rng.random() * 3:.4g}",
            f"ad{rng.randint(0, 30)}", str(int(rng.random() < 0.3)),
            rng.choice(["paris", "berlin", "rome", "oslo", "lima"]), f"u{rng.randint(0, 99)}",
            "|".join(rng.sample(_WORDS, rng.randint(0, 3)))]


def write_events(folder: Path, *, files: int = 3, rows_per_file: int = 700,
                 seed: int = 7) -> list[Path]:
    """Writes ``files`` CSV files of events (with a few bad rows) and returns their paths."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in range(files):
        path = folder / f"events-{f}.csv"
        with open(path, "w", encoding="utf-8", newline="") as out:
            w = csv.writer(out)
            w.writerow(COLUMNS)
            for i in range(rows_per_file):
                row = _row(rng, i)
                if i == 50 + f:
                    row[3] = "not_a_number"  # unparsable_number
                if i == 90 + f:
                    row = row[:5]  # wrong_column_count
                w.writerow(row)
        paths.append(path)
    return paths


def write_letor(path: Path, *, queries: int = 120, seed: int = 11) -> Path:
    """Writes a LETOR file of ``queries`` queries (2-9 documents each, 6 features, 2 bad lines)."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for q in range(queries):
        for _ in range(rng.randint(2, 9)):
            feats = " ".join(f"{j}:{rng.random():.5f}" for j in range(1, 7) if rng.random() < 0.9)
            lines.append(f"{rng.randint(0, 4)} qid:{q} {feats}")
        if q in (13, 77):
            lines.append(f"2 qid:{q} 3:abc")  # a bad feature value
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_spec(path: Path) -> Path:
    """Writes :data:`SPEC` to ``path``."""
    path.write_text(SPEC, encoding="utf-8")
    return path
