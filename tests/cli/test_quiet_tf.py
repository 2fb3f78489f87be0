"""beam_prep.quiet_tf: TensorFlow's start-up notices are hidden, anything else is kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from beam_prep.quiet_tf import is_startup_noise

# Lines TensorFlow 2.21 printed on this CPU machine at `import tensorflow`.
OBSERVED = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795435539.090068   21030 port.cc:153] oneDNN custom operations are on. You "
    "may see slightly different numerical results due to floating-point round-off errors "
    "from different computation orders. To turn them off, set the environment variable "
    "`TF_ENABLE_ONEDNN_OPTS=0`.",
    "I0000 00:00:1795435539.120071   21030 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.",
]


@pytest.mark.parametrize("line", OBSERVED)
def test_observed_startup_lines_are_noise(line):
    assert is_startup_noise(line)


@pytest.mark.parametrize("line", [
    "E0000 00:00:1 1 op_kernel.cc:1] OP_REQUIRES failed: out of memory",
    "UserWarning: something real",
    "W0000 00:00:1 1 loader.cc:1] SavedModel has no signature",
])
def test_other_lines_are_kept(line):
    assert not is_startup_noise(line)


FAKE_TF = """
import os
for line in {lines!r}:
    os.write(2, (line + "\\n").encode())
os.write(2, b"E0000 real error kept\\n")
"""


def test_capture_hides_notices_and_replays_the_rest(tmp_path):
    pkg = tmp_path / "tensorflow"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(FAKE_TF.format(lines=OBSERVED))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from beam_prep.quiet_tf import import_tensorflow_quietly as q; "
            "tf = q(); print(tf.__name__)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if k != "BEAM_PREP_TF_LOGS"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tensorflow"
    assert out.stderr == "E0000 real error kept\n"


FILTER_SCRIPT = """
import os, sys
from beam_prep.quiet_tf import native_stderr_filtered
lines = sys.argv[1:]
with native_stderr_filtered():
    for line in lines:
        os.write(2, (line + "\\n").encode())
    print("python warning kept", file=sys.stderr)
    os.write(2, b"E0000 real error kept\\n")
print("after", file=sys.stderr)
"""


def test_run_filter_drops_notices_written_at_any_time():
    later = ["E0000 00:00:1 1 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error",
             "I0000 00:00:1 2 tf_record_dataset_op.cc:390] TFRecordDataset `buffer_size` is "
             "unspecified, default to 262144"]
    out = subprocess.run([sys.executable, "-c", FILTER_SCRIPT, *OBSERVED, *later],
                         capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if k != "BEAM_PREP_TF_LOGS"})
    assert out.returncode == 0, out.stderr
    assert out.stderr == "python warning kept\nE0000 real error kept\nafter\n"


@pytest.mark.slow  # imports the real TensorFlow in a subprocess
def test_real_tensorflow_import_prints_no_startup_lines():
    code = "from beam_prep.quiet_tf import import_tensorflow_quietly as q; q()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert not [x for x in out.stderr.splitlines() if x.strip()], out.stderr
