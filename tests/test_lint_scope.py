"""CI lints the whole tree: `make lint` runs `ruff check .`, and the tree is clean (issue 21
item 10: templates/dataflow was not linted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_make_lint_runs_ruff_over_the_whole_tree():
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, "no lint target"
    calls = [line.split("ruff check", 1)[1].strip() for line in recipe.group(1).splitlines()
             if "ruff check" in line]
    assert calls == ["."], calls


def test_ruff_is_clean_over_the_whole_tree():
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        pytest.skip("ruff is not installed next to this Python (the test extra installs it)")
    out = subprocess.run([str(ruff), "check", "--no-cache", "."], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
