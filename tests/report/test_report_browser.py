"""Slow tests: real outputs of `beam-prep analyze` / `make-elwc` rendered by headless Chromium,
and `beam-prep report --help` importing no TensorFlow.

Chromium: Debian's package (`apt-get install -y chromium`); the test is skipped without it.
Screenshots are kept under pytest's tmp_path and their paths printed (run with -s to see them).
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys

import pytest

from beam_prep.report import write_report
from tests.report.builders import make_analysis_dir, make_elwc_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
BAR_BLUE = (0x4C, 0x8B, 0xF5)  # svg .bar fill in page.py


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return exe


def _screenshot(exe: str, html_path: str, png: str) -> None:
    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--hide-scrollbars",
                    f"--screenshot={png}", "--window-size=1200,2000",
                    f"file://{html_path}"], check=True, capture_output=True, timeout=180)


def _check_not_blank(png: str) -> None:
    image = pytest.importorskip("PIL.Image")
    im = image.open(png).convert("RGB")
    counts = collections.Counter(im.getdata())
    total = sum(counts.values())
    background, bg_pixels = counts.most_common(1)[0]
    colours, non_bg, blue = len(counts), 1 - bg_pixels / total, counts.get(BAR_BLUE, 0)
    print(f"{png}: {colours} colours, {non_bg:.1%} non-background, {blue} bar pixels")
    assert colours >= 20 and non_bg > 0.05 and blue > 500


def _run(*args: str, out: str) -> None:
    subprocess.run([os.path.join(BIN, "beam-prep"), *args, "--output", out], cwd=REPO,
                   check=True, capture_output=True, timeout=900)


@pytest.mark.slow
def test_real_job_outputs_render_in_chromium(tmp_path):
    exe = _chromium()
    art, elwc = str(tmp_path / "art"), str(tmp_path / "elwc")
    _run("analyze", "--spec", "examples/spec.yaml", "--input", "examples/data/sample.csv",
         out=art)
    _run("make-elwc", "--input", "examples/data/letor/lightgbm/rank.train", "--input_format",
         "lightgbm", out=elwc)
    for d in (art, elwc):
        page = write_report(d)
        png = os.path.join(str(tmp_path), os.path.basename(d) + ".png")
        _screenshot(exe, page, png)
        _check_not_blank(png)


@pytest.mark.slow
def test_hostile_synthetic_pages_render_in_chromium(tmp_path):
    exe = _chromium()
    for name, make in (("syn_art", make_analysis_dir), ("syn_elwc", make_elwc_dir)):
        root = str(tmp_path / name)
        os.makedirs(root)
        make(root)
        png = os.path.join(str(tmp_path), name + ".png")
        _screenshot(exe, write_report(root), png)
        _check_not_blank(png)


@pytest.mark.slow
def test_help_imports_no_tensorflow():
    code = ("import sys\nfrom beam_prep import cli\ntry:\n    cli.main(['report', '--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'keras', 'tensorflow_transform')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    assert "usage: beam-prep report" in out and out.strip().endswith("[]")
