"""Benchmark: make-elwc on LETOR input with many rejected lines (the rejected-lines path).

Writes ``--lines`` LETOR lines (deterministic), every ``1/--bad_share``-th one malformed, and
times the job in-process with ``--max_bad_fraction`` above the bad share, for each
``--input_split_bytes`` given (more pieces = more numbering work per rejected line).

Usage:
    python benchmarks/bench_elwc_rejected.py --lines 1000000 --bad_share 0.1 \
        --split_bytes 4194304,262144 --workdir /tmp/bench_rej
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def generate(path: str, lines: int, bad_share: float) -> int:
    """Writes the input file; returns the number of malformed lines."""
    every = round(1 / bad_share)
    bad = 0
    with open(path, "w") as f:
        for i in range(lines):
            if i % every == every - 1:
                f.write(f"not a line {i}\n")
                bad += 1
            else:
                f.write(f"{i % 3} qid:q{i // 20} 1:{i % 7}.5 2:{i % 11} 5:0.25\n")
    return bad


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--bad_share", type=float, default=0.1)
    p.add_argument("--split_bytes", default="4194304")
    p.add_argument("--workdir", default="/tmp/bench_elwc_rejected")
    args = p.parse_args(argv)
    from beam_prep.pipelines import make_elwc

    os.makedirs(args.workdir, exist_ok=True)
    src = os.path.join(args.workdir, "in.txt")
    t = time.perf_counter()
    bad = generate(src, args.lines, args.bad_share)
    print(f"input: {args.lines} lines, {bad} malformed, {os.path.getsize(src) / 1e6:.1f} MB "
          f"({time.perf_counter() - t:.1f} s to write)", flush=True)
    for split in (int(x) for x in args.split_bytes.split(",")):
        out = os.path.join(args.workdir, f"out-{split}")
        shutil.rmtree(out, ignore_errors=True)
        t, cpu = time.perf_counter(), time.process_time()
        make_elwc.run(["--input", src, "--output", out, "--input_split_bytes", str(split),
                       "--max_bad_fraction", str(min(1.0, args.bad_share * 2))])
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        pieces = -(-os.path.getsize(src) // split) if split > 0 else 1
        print(f"split_bytes={split} (~{pieces} pieces): wall {wall:.1f} s, CPU {cpu:.1f} s",
              flush=True)


if __name__ == "__main__":
    main()
