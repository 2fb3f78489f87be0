"""CI lints the whole tree: `make lint` runs `ruff check .`, and the tree is clean (issue 21
item 10: templates/dataflow was not linted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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


def _recipe(target: str) -> str:
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, f"no {target} target"
    return recipe.group(1)


def test_make_lint_calls_lint_imports_without_a_deprecation_warning(tmp_path):
    """`lint-imports --config FILE` warns that --config is deprecated; the recipe's call not."""
    line = next(x for x in _recipe("lint").splitlines() if "lint-imports" in x)
    args = line.split("lint-imports", 1)[1].split()
    assert args == ["../.importlinter"], args
    tool = Path(sys.executable).parent / "lint-imports"
    if not tool.exists():
        pytest.skip("import-linter is not installed next to this Python (the test extra has it)")
    (tmp_path / "build").mkdir()
    (tmp_path / ".importlinter").write_text(
        "[importlinter]\nroot_package = json\n\n[importlinter:contract:one]\nname = one\n"
        "type = forbidden\nsource_modules =\n    json.decoder\nforbidden_modules =\n"
        "    json.tool\n")
    out = subprocess.run([str(tool), *args], cwd=tmp_path / "build", capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "Contracts: 1 kept" in out.stdout, out.stdout + out.stderr
    assert "Deprecat" not in out.stdout + out.stderr, out.stderr


def test_make_install_silences_the_editable_install_banner_only():
    """Both install recipes pass setuptools' build backend a filter for its editable banner."""
    makefile = (REPO / "Makefile").read_text()
    value = re.search(r"^QUIET_EDITABLE := (.+)$", makefile, re.M)
    assert value, "no QUIET_EDITABLE"
    for target in ("install", "install-test"):
        pip = [x for x in _recipe(target).splitlines() if "pip install" in x and "-e" in x]
        assert pip and all('PYTHONWARNINGS="$(QUIET_EDITABLE)"' in x for x in pip), pip
    code = ("import warnings\nwarnings.warn('Editable installation.\\n!!\\n  Please be careful "
            "with folders', UserWarning)\nwarnings.warn('a real warning', UserWarning)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONWARNINGS": value.group(1)}, timeout=60)
    assert "Editable installation" not in out.stderr and "a real warning" in out.stderr, \
        out.stderr
