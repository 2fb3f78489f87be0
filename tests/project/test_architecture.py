"""Structural rules of the library, checked on the source (docs/architecture.md).

* no import cycle between modules of ``beam_prep`` (function-level imports included);
* no module uses another module's private (``_name``) names;
* every analysis family subpackage is in the registry, and the registry holds nothing else;
* old import paths of moved modules still work and warn.

The layer contracts themselves are ``lint-imports`` (``.importlinter``), run by ``make test``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Where each package's files live in the checkout (pipelines/ is installed as beam_prep.pipelines).
ROOTS = {"beam_prep": REPO / "beam_prep", "beam_prep.pipelines": REPO / "pipelines"}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for package, root in ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module if _is_package(module) else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import in the module."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:
                    found.append((sub, None, node.lineno))
                else:
                    found.append((target, a.name, node.lineno))
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m in MODULES:
        for target, _, _ in _imports(m):
            # Importing a.b.c also imports a.b and a; a package __init__ importing its
            # own submodules is not a cycle worth reporting: edges go to the named module.
            if target in MODULES and target != m:
                graph[m].add(target)
    return graph


def test_module_discovery_sees_the_library():
    assert "beam_prep.analyzers.vocab" in MODULES
    assert "beam_prep.pipelines.analyze" in MODULES
    assert "beam_prep.ranking.train.launcher" in MODULES


def test_no_import_cycles():
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                # Packages importing their own children (facades) are allowed.
                cycle = stack[stack.index(nxt):] + [nxt]
                if not all(b.startswith(a + ".") or a.startswith(b + ".")
                           for a, b in zip(cycle, cycle[1:])):
                    cycles.append(cycle)
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_cycle_finder_would_report_a_cycle(monkeypatch):
    """Guards the checker itself: a planted two-module cycle is found."""
    graph = {"a.x": {"a.y"}, "a.y": {"a.x"}}
    monkeypatch.setattr(sys.modules[__name__], "_graph", lambda: graph)
    with pytest.raises(AssertionError, match="a.x -> a.y -> a.x"):
        test_no_import_cycles()


def _own_extension(module: str, package: str, name: str) -> bool:
    """A private compiled module (``_tfexample.c``) imported by its wrapper in the same package
    or one of its subpackages (``io.inputs.example_decoder`` wraps ``io._tfexample``)."""
    folder = MODULES.get(package)
    return (folder is not None and _is_package(package)
            and (module.rpartition(".")[0] + ".").startswith(package + ".")
            and any(folder.parent.glob(f"{name}.c")))


def _private_uses(module: str) -> list[str]:
    bad = []
    aliases: dict[str, str] = {}
    for target, name, line in _imports(module):
        if name is not None and name.startswith("_") and not name.startswith("__") \
                and target.startswith("beam_prep") and target != module \
                and not _own_extension(module, target, name):
            bad.append(f"{module}:{line} imports {target}.{name}")
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in MODULES:
                    aliases[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")
                and not node.attr.startswith("__") and aliases[node.value.id] != module):
            bad.append(f"{module}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    return bad


def test_no_cross_module_private_names():
    bad = [b for m in sorted(MODULES) for b in _private_uses(m)]
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


def test_each_analysis_family_subpackage_is_registered():
    """A subpackage of analyzers with a ``family.py`` is a family: it must be in the registry
    (one line of analyzers/families.py), and every registered family lives in one."""
    from beam_prep.analyzers import families

    with_object = {m.rsplit(".", 1)[0] for m in MODULES
                   if m.startswith("beam_prep.analyzers.") and m.endswith(".family")
                   and m.count(".") == 3}
    registered = {type(f).__module__.rsplit(".", 1)[0] for f in families.FAMILIES}
    assert with_object == registered
    assert len(with_object) >= 4  # label, target, per_key, per_key_buckets


OLD_PATHS = [
    ("beam_prep.ranking.launcher", "beam_prep.ranking.train.launcher"),
    ("beam_prep.ranking.letor", "beam_prep.ranking.data.letor"),
    ("beam_prep.text", "beam_prep.analyzers.text"),
    ("beam_prep.io.readers", "beam_prep.io.inputs.readers"),
    ("beam_prep.io.artifacts", "beam_prep.io.contract.artifacts"),
    ("beam_prep.io.output", "beam_prep.io.commit.output"),
    ("beam_prep.analyzers.per_key.hist", "beam_prep.analyzers.per_key_buckets.hist"),
    ("beam_prep.analyzers.weighted.counts", "beam_prep.analyzers.vocab.weights"),
    ("beam_prep.analyzers.weighted.numeric", "beam_prep.analyzers.weighted_moments"),
]


def test_old_import_paths_warn_and_alias():
    # One fresh interpreter for all the old paths (each import of the launcher loads TF).
    code = ("import importlib, warnings\n"
            f"for old, new in {OLD_PATHS!r}:\n"
            "    warnings.simplefilter('error', DeprecationWarning)\n"
            "    try:\n        importlib.import_module(old)\n"
            "    except DeprecationWarning as w:\n        print('WARNED', w)\n"
            "    warnings.simplefilter('ignore')\n"
            "    m = importlib.import_module(old)\n"
            "    print('NAME', m.__name__, m is importlib.import_module(new))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    for old, new in OLD_PATHS:
        assert f"WARNED `{old}` moved to `{new}`" in out.stdout
        assert f"NAME {new} True" in out.stdout


def test_tests_are_laid_out_in_folders():
    """Every test file lives in a folder (by package or command), none loose in tests/, and
    each folder is a package (unique module names under ``--dist loadfile``)."""
    tests = REPO / "tests"
    assert sorted(p.name for p in tests.glob("test_*.py")) == []
    folders = {p.parent for p in tests.rglob("test_*.py")}
    assert all((folder / "__init__.py").is_file() for folder in folders), sorted(
        str(f.relative_to(tests)) for f in folders if not (f / "__init__.py").is_file())
    from tests.conftest import LIGHT_FOLDERS

    assert all((tests / name).is_dir() for name in LIGHT_FOLDERS)
    # tests/runners' conftest skips every test there without Java and the engine jars, so
    # only the engine tests belong there (anything else would be skipped in `make test`).
    assert sorted(p.name for p in (tests / "runners").glob("test_*.py")) == ["test_engines.py"]
