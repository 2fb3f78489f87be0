#!/usr/bin/env bash
# The install step of the worker / Flex Template image (Dockerfile), kept in one script so that it
# can be run and tested outside Docker too: `bash install.sh PYTHON WHEEL`.
#   PYTHON  the interpreter to install into (in the image: the SDK image's python)
#   WHEEL   the beam_prep wheel built by `pip wheel --no-deps .` from the same checkout
set -euo pipefail
python=${1:?usage: install.sh PYTHON WHEEL}
wheel=${2:?usage: install.sh PYTHON WHEEL}
# The Dockerfile passes dist/beam_prep-*.whl: with an old wheel left in dist/ the glob gives two,
# and installing "the first" would silently pick 0.1.0 over 0.2.0. Exactly one, or stop.
if [ "$#" -ne 2 ]; then
  echo "install.sh: expected exactly one beam_prep wheel, got $(($# - 1)): ${*:2}." \
    "Keep one wheel in dist/ (rm -f dist/beam_prep-*.whl; pip wheel --no-deps --wheel-dir dist .)" \
    "and build again." >&2
  exit 2
fi
if [ ! -f "$wheel" ]; then
  echo "install.sh: no wheel at $wheel. Build it first: pip wheel --no-deps --wheel-dir dist ." >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
# Dependencies first, exactly as locked (the versions of the launching environment), then the
# wheel without resolving anything again: the image can never drift from the lock.
"$python" -m pip install --no-cache-dir --quiet -r "$here/requirements.txt"
"$python" -m pip install --no-cache-dir --quiet --no-deps "$wheel"
# Fail the build now, not on the first worker: the package imports, finds its templates and its
# C extension, and pip sees no conflict.
"$python" -m pip check
"$python" -I - <<'PY'  # -I: a source checkout in the working directory must not shadow the install
import beam_prep
from beam_prep.io.inputs import example_decoder
from beam_prep.pipelines import analyze, make_elwc  # noqa: F401
assert example_decoder.native_available(), "the C tf.Example decoder was not built"
print("beam_prep", beam_prep.__version__, "installed")
PY
