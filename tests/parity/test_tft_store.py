"""The stored TF Transform outputs (``tft_store.py``) equal a live TFT run on the same inputs.

Slow: it runs the five TFT references (about a minute of CPU each). The default suite checks
on every run that the store was made from the inputs the tests generate (their sha256).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parity import tft_store

ROOT = Path(__file__).resolve().parents[2]
PARITY = ["tests/parity/test_tft_parity.py", "tests/parity/test_tft_labels.py",
          "tests/parity/test_tft_weighted.py", "tests/per_key/test_per_key_tft_parity.py",
          "tests/per_key/test_per_key_buckets_tft_parity.py"]


def test_every_store_holds_its_inputs_digest_and_assets():
    for name in ("parity", "labels", "weighted"):
        folder = tft_store.STORE / name
        digest = (folder / "inputs.sha256").read_text(encoding="ascii").strip()
        assert len(digest) == 64 and int(digest, 16) >= 0
        assert any((folder / "assets").iterdir())
    for name in ("per_key", "per_key_buckets"):  # transformed values, no transform_fn
        folder = tft_store.STORE / name
        assert len((folder / "inputs.sha256").read_text(encoding="ascii").strip()) == 64
        assert json.loads((folder / "tft.json").read_text(encoding="utf-8"))


def test_an_unknown_mode_is_refused(monkeypatch):
    monkeypatch.setenv("BEAM_PREP_TFT", "sometimes")
    with pytest.raises(ValueError, match="BEAM_PREP_TFT='sometimes': use one of stored"):
        tft_store.mode()


@pytest.mark.slow
def test_stored_outputs_equal_a_live_tft_run():
    env = dict(os.environ, BEAM_PREP_TFT="check")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-m", "not runners", *PARITY], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, proc.stdout[-6000:]


def test_a_store_made_from_other_inputs_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("BEAM_PREP_TFT", raising=False)
    changed = tmp_path / "rows.json"
    changed.write_text('{"s": ["a"]}', encoding="utf-8")
    with pytest.raises(pytest.fail.Exception, match="does not match this test's inputs"):
        tft_store.reference("weighted", "tft_weighted_reference.py", [], inputs=[changed],
                            root=tmp_path, assets=lambda live, _: live)
