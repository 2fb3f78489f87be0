"""`beam-prep analyze --cache_dir`: the artifacts are the bytes of a run without the cache.

The oracle of every test is an independent run of the job without ``--cache_dir`` over the
same files: every file of the artifact directory (manifest included) must be byte-identical.
Hit and miss counts come from the run records the job writes into the cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from beam_prep.pipelines import analyze

SPEC = """
features:
  - {name: city, kind: string, top_k: 4}
  - {name: item, kind: integer, column: item_id}
  - {name: price, kind: numeric, num_buckets: 4}
  - {name: words, kind: text, column: note, output_mode: tf_idf, ngrams: 2}
  - {name: twice, kind: numeric, expr: "price * 2"}
  - {name: user, kind: hashed, num_bins: 8}
"""
CITIES = ["Paris", "Berlin", "Oslo", "Rome", "Lima", "Kyiv", "Quito"]
WORDS = ["red", "green", "blue", "Fast", "slow", "cat", "dog", "the"]


def write_day(path: Path, day: int, rows: int = 120) -> Path:
    """One CSV file of ``rows`` rows (one of them rejected: a price that is not a number)."""
    rng = np.random.default_rng(day)
    lines = ["city,item_id,price,note,user"]
    for i in range(rows):
        city = CITIES[int(rng.integers(0, len(CITIES) - day % 3))]
        price = "oops" if i == 7 else ("" if i % 11 == 0 else f"{rng.lognormal(1, 1):.4f}")
        note = " ".join(rng.choice(WORDS, int(rng.integers(0, 5))))
        lines.append(f"{city},{int(rng.integers(0, 30))},{price},{note},u{i % 5}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def days(folder: Path, numbers) -> list[Path]:
    folder.mkdir(exist_ok=True)
    return [p if p.exists() else write_day(p, n)
            for n, p in ((n, folder / f"d{n}.csv") for n in numbers)]


def run(tmp: Path, files: list[Path], out: str, *extra: str, spec: str = SPEC) -> Path:
    spec_path = tmp / f"spec-{abs(hash(spec))}.yaml"
    spec_path.write_text(spec, encoding="utf-8")
    inputs = [a for f in files for a in ("--input", str(f))]
    analyze.run(["--spec", str(spec_path), *inputs, "--output", out,
                 "--max_bad_fraction", "0.05", "--batch_size", "50", "--vocab_partitions", "3",
                 *extra])
    return Path(out)


def assert_same_bytes(a: Path, b: Path) -> None:
    files = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert files == sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    assert "manifest.json" in files
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def last_run(cache: Path) -> dict:
    records = sorted((cache / "runs").glob("*.json"))
    return json.loads(records[-1].read_text())


def test_cold_and_warm_cache_give_the_bytes_of_a_run_without_cache(tmp_path):
    files = days(tmp_path / "data", [1, 2, 3])
    cache = tmp_path / "cache"
    plain = run(tmp_path, files, str(tmp_path / "plain"))
    cold = run(tmp_path, files, str(tmp_path / "cold"), "--cache_dir", str(cache))
    assert last_run(cache)["hits"] == 0 and last_run(cache)["misses"] == 3
    assert_same_bytes(plain, cold)
    warm = run(tmp_path, files, str(tmp_path / "warm"), "--cache_dir", str(cache))
    assert (last_run(cache)["hits"], last_run(cache)["misses"]) == (3, 0)
    assert_same_bytes(plain, warm)
    manifest = json.loads((warm / "manifest.json").read_text())
    assert manifest["input"]["rows_rejected"] == 3  # one per file, replayed from the cache
    assert len(list((cache / "entries").glob("*/*/index.json"))) == 3
