"""Ctrl-C in analyze, transform and make-elwc: one line, exit 130, no traceback, no harness logs.

A real SIGINT is sent to the job's whole process group (what a terminal's Ctrl-C does, so the
SDK workers of ``--direct_running_mode=multi_processing`` get it too) once the job has taken
its output folder and staged into it; the folder is then left as it was (no manifest, no lock,
no staging folder).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

SPEC = """
features:
  - {name: country, kind: string}
  - {name: review, kind: text, ngrams: 2}
  - {name: price, kind: numeric, num_buckets: 8}
"""
ROWS = 600_000  # enough that the job is still running a few seconds after it staged


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("interrupt")
    block = "".join(f"c{i % 50},good item {i % 77} of {i % 13},{(i * 7919) % 10000 / 100}\n"
                    for i in range(10_000))
    with open(root / "big.csv", "w") as f:
        f.write("country,review,price\n" + block * (ROWS // 10_000))
    (root / "small.csv").write_text("country,review,price\n" + block)
    (root / "spec.yaml").write_text(SPEC)
    lines = "".join(f"{i % 3} qid:{i // 10} 1:{i % 7} 2:{(i * 13) % 100 / 10}\n"
                    for i in range(20_000))
    with open(root / "big.txt", "w") as f:
        f.write(lines * 15)
    return root


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "beam_prep.cli", *args]


def _interrupt(argv: list[str], output: str) -> tuple[int, str, str]:
    """Runs ``argv``, sends SIGINT to its process group once it staged; (code, out, err)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.isdir(output) and any(n.startswith("_staging-") for n in os.listdir(output)):
            break
        time.sleep(0.02)
    time.sleep(0.5)  # into the pipeline (the workers started, in multi_processing mode)
    assert proc.poll() is None, "the job ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _assert_quiet_and_unchanged(command: str, code: int, out: str, err: str,
                                output: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 130, (code, err[-3000:])
    assert len(lines) == 1 and lines[0].startswith(f"beam-prep {command}: interrupted; "), \
        err[-3000:]
    assert "Rerun the command to finish." in lines[0]
    assert "Traceback" not in err + out and "CRITICAL" not in err + out
    assert sorted(os.listdir(output)) == [], os.listdir(output)  # no lock, staging, manifest


@pytest.mark.parametrize("mode", [
    [],
    pytest.param(["--direct_running_mode=multi_processing", "--direct_num_workers=2"],
                 marks=pytest.mark.slow),
], ids=["in_process", "multi_processing"])
def test_ctrl_c_in_analyze(data, tmp_path, mode):
    output, summary = str(tmp_path / "art"), tmp_path / "summary.json"
    code, out, err = _interrupt(_cli("analyze", "--spec", str(data / "spec.yaml"), "--input",
                                     str(data / "big.csv"), "--output", output,
                                     "--input_split_bytes", "2000000", "--summary_json",
                                     str(summary), *mode), output)
    _assert_quiet_and_unchanged("analyze", code, out, err, output)
    got = json.loads(summary.read_text())
    assert (got["status"], got["error"], got["error_type"]) == (
        "failed", "interrupted (SIGINT)", "KeyboardInterrupt")


@pytest.mark.slow
def test_ctrl_c_in_transform(data, tmp_path):
    art = str(tmp_path / "art")
    subprocess.run(_cli("analyze", "--spec", str(data / "spec.yaml"), "--input",
                        str(data / "small.csv"), "--output", art, "--quiet", "--no_report"),
                   check=True, capture_output=True)
    output = str(tmp_path / "enc")
    code, out, err = _interrupt(_cli("transform", "--artifacts", art, "--input",
                                     str(data / "big.csv"), "--output", output), output)
    _assert_quiet_and_unchanged("transform", code, out, err, output)


@pytest.mark.slow
def test_ctrl_c_in_make_elwc(data, tmp_path):
    output = str(tmp_path / "elwc")
    code, out, err = _interrupt(_cli("make-elwc", "--input", str(data / "big.txt"),
                                     "--output", output), output)
    _assert_quiet_and_unchanged("make-elwc", code, out, err, output)


STUCK = """
import sys, threading
from beam_prep import interrupts
if sys.argv[1] == "interrupted":
    interrupts._state["interrupted"] = True        # what the first Ctrl-C does
    threading.Thread(target=threading.Event().wait).start()   # never ends, not a daemon
else:
    threading.Thread(target=threading.Event().wait, args=(0.2,)).start()
print("the one line", file=sys.stderr)
interrupts.exit_process(int(sys.argv[2]), grace=0.3)
"""


@pytest.mark.parametrize("state,code", [("interrupted", 130), ("running", 0)])
def test_the_command_ends_even_when_a_pipeline_thread_is_stuck(state, code):
    """After a Ctrl-C a thread of the abandoned pipeline may wait forever; Python's exit
    waits for it, so the command printed its line and never returned to the shell."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", STUCK, state, str(code)], cwd=root,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == code and proc.stderr == "the one line\n", proc.stderr[-2000:]
    assert time.monotonic() - start < 30


def test_the_console_command_ends_through_exit_process():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "setup.py")) as f:
        assert '"beam-prep=beam_prep.cli:run"' in f.read()   # not main: see exit_process
