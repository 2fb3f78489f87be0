"""Writes examples/data/sample.csv: 2,000 deterministic, realistic-looking shop orders.

Columns: country (string), store_id (integer), review (text), price and age (numeric,
with missing cells and a few NaN), user_id (hashed), label (0/1, whether the order was
returned). Run: ``python examples/make_sample_data.py [--rows 2000] [--output PATH]``.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random

COUNTRIES = ["US", "DE", "FR", "GB", "JP", "BR", "IN", "ES", "IT", "CA", "MX", "NL"]
WEIGHTS = [30, 14, 10, 10, 8, 6, 6, 5, 4, 3, 2, 2]
GOOD = ["great", "perfect fit", "love it", "fast delivery", "good quality", "as described"]
BAD = ["too small", "broke after a week", "wrong colour", "late delivery", "poor quality"]
ITEMS = ["shoes", "jacket", "hat", "scarf", "bag", "shirt", "watch"]


def rows(n: int, seed: int = 7) -> list[dict[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        returned = rng.random() < 0.3
        words = rng.sample(BAD if returned else GOOD, 2)
        review = f"{words[0].capitalize()}, {rng.choice(ITEMS)} {words[1]}!"
        price = round(math.exp(rng.gauss(3.4, 0.6)), 2)
        age = rng.randint(18, 80)
        out.append({
            "country": rng.choices(COUNTRIES, WEIGHTS)[0] if rng.random() > 0.02 else "",
            "store_id": str(rng.choice([101, 102, 103, 205, 206, 310, 311, 312, 999])),
            "review": review if rng.random() > 0.05 else "",
            "price": "" if rng.random() < 0.02 else ("nan" if i % 397 == 0 else str(price)),
            "age": "" if rng.random() < 0.05 else str(age),
            "user_id": f"u{rng.randint(1, 400):04d}",
            "label": "1" if returned else "0",
        })
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "data",
                                                         "sample.csv"))
    args = parser.parse_args()
    data = rows(args.rows)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(data[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(data)


if __name__ == "__main__":
    main()
