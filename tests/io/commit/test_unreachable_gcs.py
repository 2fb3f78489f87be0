"""An unreachable ``gs://`` location is one line within seconds (issue 21 item 5).

Beam's GCS client retries a refused connection for 120 s and ends in a ``RetryError``
traceback. Here the GCS endpoint is a closed port on 127.0.0.1 (``STORAGE_EMULATOR_HOST``, as
tests/io/commit/test_output_gcs.py uses for its emulator; no external network), with offline
credentials so that no credential probing adds its own delay; every command must exit 1 with
one ``error:`` line, well inside a 30 s timeout.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

LIMIT_SECONDS = 30


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    with socket.socket() as s:  # a port that was free a moment ago: nobody listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cred = tmp_path_factory.mktemp("gcs") / "fake_credentials.json"
    cred.write_text(json.dumps({"type": "authorized_user", "client_id": "test",
                                "client_secret": "test", "refresh_token": "test",
                                "token": "test", "expiry": "2999-01-01T00:00:00Z"}))
    out = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    out.update({"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}",
                "GOOGLE_APPLICATION_CREDENTIALS": str(cred), "GOOGLE_CLOUD_PROJECT": "test"})
    return out


@pytest.mark.parametrize("argv", [
    ["diff", "gs://beam-prep-test/old", "gs://beam-prep-test/new"],
    ["generate", "--artifacts", "gs://beam-prep-test/art", "--output", "{tmp}/pp.py"],
    ["report", "gs://beam-prep-test/art", "--output", "{tmp}/r.html"],
], ids=["diff", "generate", "report"])
def test_unreachable_gcs_is_one_line_within_seconds(env, tmp_path, argv) -> None:
    argv = [a.format(tmp=tmp_path) for a in argv]
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "beam_prep.cli", *argv], env=env,
                          capture_output=True, text=True, timeout=LIMIT_SECONDS)
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith(f"beam-prep {argv[0]}: error:")
    assert "gs://beam-prep-test/" in lines[0] and "127.0.0.1" in lines[0]
    assert elapsed < LIMIT_SECONDS
