"""Peak memory of text analysis (``ngrams: 2, output_mode: tf_idf``) against input size.

Writes a deterministic text CSV (Zipf-distributed words, so distinct bigrams keep growing
with the input, as in real text), runs ``beam-prep analyze`` on it under
``/usr/bin/time -v`` and reports the peak resident set size. Issue 13 item 12: before the
fix, peak RSS grew with the number of rows even with ``max_tokens: 1000``.

Example:
    $ python benchmarks/text_memory.py --mb 20 --mb 80 --workdir /tmp/text_memory
    mb=20 rows=... csv_bytes=... peak_rss_mb=... seconds=...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

SPEC = """version: 1
features:
  - {name: text, kind: text, ngrams: 2, max_tokens: 1000, output_mode: tf_idf}
"""

WORDS = 200_000
WORDS_PER_ROW = 40
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


def vocabulary(n: int, seed: int) -> np.ndarray:
    """``n`` distinct lowercase words of 3 to 9 letters (deterministic)."""
    rng = np.random.default_rng(seed)
    words: dict[str, None] = {}
    while len(words) < n:
        lengths = rng.integers(3, 10, size=n)
        letters = _LETTERS[rng.integers(0, 26, size=int(lengths.sum()))]
        ends = np.cumsum(lengths)
        text = "".join(letters.tolist())
        for start, end in zip((ends - lengths).tolist(), ends.tolist()):
            words.setdefault(text[start:end])
            if len(words) == n:
                break
    return np.array(list(words), dtype=object)


def generate(path: str, megabytes: float, *, seed: int = 0) -> int:
    """Writes ``id,text`` rows until the file holds ``megabytes`` MB; returns the rows.

    Words follow a Zipf law (exponent 1.05) over :data:`WORDS` words; each row has
    :data:`WORDS_PER_ROW` words. The same arguments always give the same bytes.
    """
    words = vocabulary(WORDS, seed)
    weights = 1.0 / np.arange(1, WORDS + 1) ** 1.05
    cumulative = np.cumsum(weights / weights.sum())
    rng = np.random.default_rng(seed + 1)
    target = int(megabytes * 1_000_000)
    written = rows = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("id,text\n")
        while written < target:
            block = 10_000
            ids = np.searchsorted(cumulative, rng.random(block * WORDS_PER_ROW))
            chosen = words[np.minimum(ids, WORDS - 1)].reshape(block, WORDS_PER_ROW)
            lines = [f"{rows + i},{' '.join(r)}\n" for i, r in enumerate(chosen.tolist())]
            body = "".join(lines)
            if written + len(body) > target:
                keep, size = [], written
                for line in lines:
                    if size >= target:
                        break
                    keep.append(line)
                    size += len(line)
                lines, body = keep, "".join(keep)
            f.write(body)
            written += len(body)
            rows += len(lines)
    return rows


def measure(csv_path: str, out_dir: str, spec_path: str) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of ``beam-prep analyze`` on ``csv_path``."""
    beam_prep = os.path.join(os.path.dirname(sys.executable), "beam-prep")
    cmd = ["/usr/bin/time", "-v", beam_prep, "analyze", "--spec", spec_path, "--input",
           csv_path, "--output", out_dir, "--overwrite", "--quiet"]
    started = time.monotonic()
    run = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if run.returncode != 0:
        raise SystemExit(f"beam-prep analyze failed:\n{run.stderr[-4000:]}")
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    if match is None:
        raise SystemExit(f"/usr/bin/time gave no peak RSS:\n{run.stderr[-2000:]}")
    return int(match.group(1)) / 1024, seconds


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, action="append", required=True,
                   help="CSV size in MB (repeat for several sizes).")
    p.add_argument("--workdir", default="/tmp/text_memory")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--generate_only", action="store_true")
    args = p.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    spec_path = os.path.join(args.workdir, "spec.yaml")
    with open(spec_path, "w") as f:
        f.write(SPEC)
    for mb in args.mb:
        csv_path = os.path.join(args.workdir, f"text_{mb:g}mb_seed{args.seed}.csv")
        if not os.path.exists(csv_path):
            rows = generate(csv_path, mb, seed=args.seed)
        else:
            with open(csv_path, "rb") as f:
                rows = sum(1 for _ in f) - 1
        size = os.path.getsize(csv_path)
        if args.generate_only:
            print(f"mb={mb:g} rows={rows} csv_bytes={size}", flush=True)
            continue
        out_dir = os.path.join(args.workdir, f"out_{mb:g}mb")
        peak, seconds = measure(csv_path, out_dir, spec_path)
        print(f"mb={mb:g} rows={rows} csv_bytes={size} peak_rss_mb={peak:.0f} "
              f"ratio={peak * 1024 * 1024 / size:.1f}x seconds={seconds:.1f}", flush=True)


if __name__ == "__main__":
    main()
