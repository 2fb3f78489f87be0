"""A/B of two (or more) code trees on one analysis: CPU and wall of `beam-prep analyze`.

Each tree (a checkout or a ``git worktree`` of some revision) runs ``python -m beam_prep.cli
analyze`` as a child process with ``PYTHONPATH=<tree>`` (checked: the child writes where
``beam_prep`` was imported from, and a tree that is not the one asked for is an error),
default in-process runner, the trees alternating within each repetition. Per run: wall
seconds, CPU seconds of the child and its descendants (``getrusage(RUSAGE_CHILDREN)`` user +
sys, the difference around that one child) and the 1-minute load average before and after
(the machine is shared: CPU time is the fair number, wall time is only indicative).
Also checks that the trees' vocabularies are byte-identical and prints the largest relative
difference of the numeric manifest entries (mean, variance), which may differ in the last bits
between the float64 and the exact moments.

Example:
    git worktree add /tmp/wt_old 5cc4d82^
    python benchmarks/bench_code_ab.py --trees /tmp/wt_old,. \\
        --data /data/criteo_2000000 --repeats 3 --out /tmp/ab
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

_CHILD = ("import os, sys, beam_prep; "
          "open(os.environ['AB_WHERE'], 'w').write(os.path.dirname(beam_prep.__file__)); "
          "from beam_prep.cli import main; sys.exit(main())")


def run_once(tree: str, data: str, out: str, log_path: str) -> dict[str, Any]:
    """Runs one analysis of ``data`` with the code of ``tree``; its wall, CPU and load."""
    where = log_path + ".where"
    env = dict(os.environ, PYTHONPATH=tree, AB_WHERE=where, TF_CPP_MIN_LOG_LEVEL="2")
    cmd = [sys.executable, "-c", _CHILD, "analyze", "--spec", os.path.join(data, "spec.yaml"),
           "--input", os.path.join(data, "parquet", "*.parquet"), "--output", out]
    load_before = os.getloadavg()[0]
    before = os.times()
    start = time.perf_counter()
    with open(log_path, "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            cwd=os.path.dirname(log_path)).returncode
    wall = time.perf_counter() - start
    after = os.times()
    if rc:
        raise SystemExit(f"{tree}: exit code {rc}; see {log_path}")
    with open(where) as f:
        imported = f.read()
    if os.path.realpath(imported) != os.path.realpath(os.path.join(tree, "beam_prep")):
        raise SystemExit(f"{tree}: beam_prep was imported from {imported}")
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    return {"tree": tree, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}


def _files(root: str, suffix: str) -> dict[str, bytes]:
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(suffix):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    found[os.path.relpath(path, root)] = f.read()
    return found


def _numbers(node: Any, path: str = "") -> dict[str, float]:
    if isinstance(node, dict):
        return {k: v for key, child in node.items()
                for k, v in _numbers(child, f"{path}/{key}").items()}
    if isinstance(node, float):
        return {path: node}
    return {}


def compare(left: str, right: str) -> dict[str, Any]:
    """Vocabulary files identical? Largest relative difference of manifest means/variances."""
    vocab_same = _files(left, ".txt") == _files(right, ".txt")
    with open(os.path.join(left, "manifest.json")) as f:
        a = _numbers(json.load(f))
    with open(os.path.join(right, "manifest.json")) as f:
        b = _numbers(json.load(f))
    worst = 0.0
    for key in a.keys() & b.keys():
        if key.endswith(("/mean", "/variance")) and a[key] != b[key]:
            worst = max(worst, abs(a[key] - b[key]) / max(abs(a[key]), abs(b[key])))
    return {"vocabularies_identical": vocab_same, "max_rel_diff_mean_variance": worst}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trees", required=True, help="Comma-separated code trees (A,B,...).")
    p.add_argument("--data", required=True, help="A gen_criteo.py folder with parquet/.")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", required=True, help="Scratch folder (logs, outputs, results.json).")
    args = p.parse_args(argv)
    trees = [os.path.abspath(t) for t in args.trees.split(",")]
    os.makedirs(args.out, exist_ok=True)
    runs = []
    for rep in range(args.repeats):
        order = trees if rep % 2 == 0 else trees[::-1]
        for tree in order:
            tag = f"r{rep}_t{trees.index(tree)}"
            out = os.path.join(args.out, tag)
            shutil.rmtree(out, ignore_errors=True)
            result = run_once(tree, args.data, out, os.path.join(args.out, tag + ".log"))
            result["repeat"] = rep
            runs.append(result)
            print(json.dumps(result), flush=True)
    summary = {"runs": runs, "agreement": compare(os.path.join(args.out, "r0_t0"),
                                                   os.path.join(args.out, "r0_t1"))}
    for tree in trees:
        mine = [r for r in runs if r["tree"] == tree]
        summary[tree] = {"cpu_s": sorted(r["cpu_s"] for r in mine),
                         "wall_s": sorted(r["wall_s"] for r in mine)}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main()
