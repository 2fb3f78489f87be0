"""The product as a user installs it: a built wheel, used from a folder outside the checkout.

``make test`` builds the wheel and installs it with ``pip install --no-deps --target`` into
``build/wheel-site`` (``BEAM_PREP_WHEEL_SITE``); without that variable this module builds its own.
Every command runs in a subprocess whose ``sys.path`` holds the wheel's folder and the test venv's
dependencies, with the current directory in a temporary folder, so nothing of the checkout
(``templates/``, ``pipelines/``, an editable install) can stand in for the installed package.
"""

from __future__ import annotations

import csv
import glob
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "data" / "sample.csv"
SPEC = REPO / "examples" / "spec.yaml"


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory) -> Path:
    given = os.environ.get("BEAM_PREP_WHEEL_SITE")
    if given and Path(given, "beam_prep").is_dir():
        return Path(given)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                    str(out / "dist"), str(REPO)], check=True, timeout=600)
    wheel = glob.glob(str(out / "dist" / "beam_prep-*.whl"))[0]
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(out / "site"), wheel], check=True, timeout=600)
    return out / "site"


def _run(wheel_site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PYTHONPATH=str(wheel_site), PYTHONNOUSERSITE="1", TF_CPP_MIN_LOG_LEVEL="3")
    # -I would also drop PYTHONPATH; -P keeps the script's folder (the checkout) off sys.path.
    return subprocess.run([sys.executable, "-P", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_wheel_installs_only_the_beam_prep_package(wheel_site):
    top = {p.name for p in wheel_site.iterdir()}
    assert "beam_prep" in top
    assert "pipelines" not in top and "templates" not in top and "tests" not in top
    assert {t for t in top if not t.startswith("beam_prep") and t != "bin"} == set()
    assert (wheel_site / "beam_prep" / "templates" / "preprocessing.py.j2").is_file()
    assert (wheel_site / "beam_prep" / "pipelines" / "analyze.py").is_file()


def test_version_from_the_installed_package(wheel_site, tmp_path):
    version = re.search(r'^__version__ = "(.+)"$', (REPO / "beam_prep" / "version.py").read_text(),
                        re.M).group(1)
    out = _run(wheel_site, tmp_path, "-m", "beam_prep.cli", "--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"beam-prep {version}"
    out = _run(wheel_site, tmp_path, "-c", "import beam_prep; print(beam_prep.__file__)")
    assert out.stdout.strip().startswith(str(wheel_site)), out.stdout


def _oracle(rows: list[dict[str, str]]) -> tuple[str, float, float]:
    """Most frequent country (ties: larger UTF-8 bytes first) and price moments, from the CSV."""
    counts = Counter(r["country"] for r in rows if r["country"] != "")
    top = max(counts, key=lambda c: (counts[c], c.encode()))
    prices = np.array([float(r["price"]) for r in rows if r["price"] != ""], dtype=np.float64)
    prices = prices[np.isfinite(prices)]
    return top, float(prices.mean()), float(prices.var())


def test_analyze_generate_import_outside_the_checkout(wheel_site, tmp_path):
    work = tmp_path / "user_project"
    work.mkdir()
    shutil.copy(SAMPLE, work / "data.csv")
    shutil.copy(SPEC, work / "spec.yaml")
    out = _run(wheel_site, work, "-m", "beam_prep.cli", "analyze", "--spec", "spec.yaml",
               "--input", "data.csv", "--output", "artifacts")
    assert out.returncode == 0, out.stderr[-3000:]
    assert (work / "artifacts" / "manifest.json").is_file()
    out = _run(wheel_site, work, "-m", "beam_prep.cli", "generate", "--artifacts", "artifacts",
               "--output", "pkg/preprocessing.py")
    assert out.returncode == 0, out.stderr[-3000:]

    with open(SAMPLE, newline="", encoding="utf-8") as f:
        top, mean, var = _oracle(list(csv.DictReader(f)))
    script = (
        "import numpy as np, sys\n"
        "sys.path.insert(0, 'pkg')\n"
        "import preprocessing as p\n"
        "layers = p.build_layers()\n"
        "def run(key, value, dtype):\n"
        "    x = np.array([[value]], dtype=dtype)\n"
        "    for layer in layers[key]:\n"
        "        x = layer(x)\n"
        "    return np.asarray(x).ravel().tolist()\n"
        f"print('TOP', run('country', {top!r}, object))\n"
        "print('UNSEEN', run('country', 'no-such-country', object))\n"
        "print('PRICE', run('price', 10.0, 'float32'))\n"
        "print('FILE', p.__file__)\n"
    )
    out = _run(wheel_site, work, "-c", script)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.strip().splitlines())
    top_vec = eval(lines["TOP"])  # noqa: S307 - a list literal printed by the script above
    unseen = eval(lines["UNSEEN"])  # noqa: S307
    assert top_vec.index(1.0) == 1 and sum(top_vec) == 1.0  # first vocabulary line, 1 OOV slot
    assert unseen.index(1.0) == 0 and sum(unseen) == 1.0
    price = eval(lines["PRICE"])  # noqa: S307
    assert price == pytest.approx([(10.0 - mean) / np.sqrt(var)], rel=1e-4)
    assert lines["FILE"].startswith(str(work / "pkg"))
