#!/usr/bin/env bash
# The GPU rows of BENCHMARKS.md §15 (issue 31) in one run of under 5 minutes: the launcher's
# JAX feeds device_cache (one step per call), device_loop (32 steps per jitted program over the
# device-resident set) and stream_loop (32 streamed steps per program, one transfer each) on
# the cases dnn, dnn_b1024, dasalc, dasalc_l128 and synthetic of bench_train_step.py.
#
# For a machine with jax (GPU) and no TensorFlow. keras and keras-rs come from WHEELS: a
# folder of wheels (installed with --no-deps into OUT/site, then put on PYTHONPATH) or of
# unpacked packages (put on PYTHONPATH as it is). Nothing is downloaded.
#
#   WHEELS=shared/wheels bash benchmarks/gpu_train_step.sh [OUT]   # OUT: default $OUT or /tmp/gpu_train_step
#
# Writes OUT/<case>.json (bench_train_step's JSON) and OUT/summary.md (the rows for §15), and
# prints the summary. Each case has its own time limit (CASE_S, default 55 s); a case that
# runs out is listed as such and the others still run. FEEDS overrides the feeds
# (default device_cache,device_loop,stream_loop), CASES the cases (default all five), STEPS the
# steps per epoch (default 32; validation runs after each epoch, so its cost is spread over
# STEPS steps) and PER_CALL the steps per jitted program (default 32). ALLOW_CPU=1 runs it on
# CPU (a dry run of the script: the cases then run out of time).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-${OUT:-/tmp/gpu_train_step}}
WHEELS=${WHEELS:-$ROOT/shared/wheels}
CASE_S=${CASE_S:-55}
FEEDS=${FEEDS:-device_cache,device_loop,stream_loop}
CASES=${CASES:-dnn dnn_b1024 dasalc dasalc_l128 synthetic}
STEPS=${STEPS:-32}
PER_CALL=${PER_CALL:-32}
PY=${PYTHON:-python3}
mkdir -p "$OUT"

SITE=""
if compgen -G "$WHEELS/*.whl" > /dev/null; then
  SITE="$OUT/site"
  "$PY" -m pip install --quiet --no-deps --no-index --target "$SITE" "$WHEELS"/*.whl \
    || { echo "installing the wheels of $WHEELS failed" >&2; exit 2; }
elif [ -d "$WHEELS" ]; then
  SITE="$WHEELS"
fi
export PYTHONPATH="$ROOT${SITE:+:$SITE}${PYTHONPATH:+:$PYTHONPATH}"
export KERAS_BACKEND=jax

"$PY" - <<'EOF' || exit 2
import importlib.util, os, sys
import jax, keras
print(f"jax {jax.__version__} ({jax.default_backend()}: {jax.devices()[0].device_kind}), "
      f"keras {keras.__version__}, tensorflow importable: "
      f"{importlib.util.find_spec('tensorflow') is not None}")
if jax.default_backend() == "cpu" and os.environ.get("ALLOW_CPU") != "1":
    sys.exit("no accelerator: jax runs on CPU (BENCHMARKS §15 has the CPU rows)")
EOF

start=$SECONDS
for case in ${CASES//,/ }; do
  timeout --signal=KILL "$CASE_S" "$PY" "$ROOT/benchmarks/bench_train_step.py" --backend jax \
    --cases "$case" --feeds "$FEEDS" --steps "$STEPS" --epochs 3 --per_call "$PER_CALL" \
    --device_steps 32 --out "$OUT/$case.json" > "$OUT/$case.log" 2>&1
  echo "$case: exit $? after $((SECONDS - start)) s"
done

"$PY" - "$OUT" "$CASES" <<'EOF'
import glob, json, os, sys
out, cases = sys.argv[1], sys.argv[2].replace(",", " ").split()
cols = ("case", "feed", "per_call", "wall_ms", "device_ms", "host_ms", "busy",
        "train_compiles", "eval_compiles", "docs_per_s", "compile_s")
lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
info = None
for case in cases:
    path = os.path.join(out, f"{case}.json")
    if not os.path.exists(path):
        lines.append(f"| {case} | did not finish (see {case}.log) |" + " |" * (len(cols) - 2))
        continue
    with open(path, encoding="utf-8") as f:
        res = json.load(f)
    jax_res = res["backends"]["jax"]
    info = info or dict(jax_res.get("info", {}), date=res["date"], machine=res["machine"])
    for row in jax_res.get("rows", []):
        lines.append("| " + " | ".join(str(row.get(c, "-")) for c in cols) + " |")
text = "\n".join([f"{info}" if info else "no case finished", "", *lines])
with open(os.path.join(out, "summary.md"), "w", encoding="utf-8") as f:
    f.write(text + "\n")
print(text)
EOF
