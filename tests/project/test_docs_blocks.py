"""Every code block of README.md and docs/*.md that is meant to run is checked here.

How a fenced block is treated, by its info string and the HTML comment on the line before it:

* ``<!-- not-run: REASON -->``: skipped (a Dataflow/TPU/docker command, an abbreviated
  fragment); the reason is required.
* ``text``: not code (output, directory trees, formulas, diagrams). An unlabelled fence is an
  error: label it.
* ``python``: executed in a fresh temporary folder. ``<!-- run: SETUP -->`` first prepares the
  files it reads with the ``SETUP_*`` function of that name below (and may check what the
  block produced); ``<!-- run: SETUP slow -->`` puts it in the slow suite.
* ``bash`` / ``sh``: every ``beam-prep`` command's flags are parsed by that command's own
  parser (a misspelt or removed flag fails, as it would for the reader), ``make TARGET``
  must be a Makefile target, ``python SCRIPT.py`` and ``examples/...`` paths must exist. A
  block with none of these must be marked ``not-run``.
* ``yaml``: parsed; a ``features:`` document must be a valid spec (``Spec.from_dict``).
* ``json``: parsed; ``jsonl``: every line parsed.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = {"python", "bash", "sh", "yaml", "json", "jsonl", "text"}
_FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")
_MARK = re.compile(r"^\s*<!--\s*(not-run|run):\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its info string, its marker and its text."""

    path: Path
    line: int
    info: str
    mark: tuple[str, str] | None
    body: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file (indented fences included, e.g. in lists)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark = _MARK.match(lines[k]) if k >= 0 else None
        body = "\n".join(x[len(indent):] if x.startswith(indent) else x for x in lines[i + 1:j])
        out.append(Block(path, i + 1, info, mark.groups() if mark else None, body + "\n"))
        i = j + 1
    return out


ALL = [b for p in DOCS for b in blocks(p)]


def _params(languages: set[str], *, slow_ok: bool = True) -> list[Any]:
    out = []
    for b in ALL:
        if b.info.split()[:1] and b.info.split()[0] in languages and \
                (b.mark is None or b.mark[0] == "run"):
            slow = b.mark is not None and "slow" in b.mark[1].split()
            out.append(pytest.param(b, id=b.where, marks=[pytest.mark.slow] if slow else []))
    return out


# --- every block is labelled or marked -------------------------------------------------------

def test_every_block_is_labelled_and_every_mark_has_a_reason():
    problems = []
    for b in ALL:
        lang = b.info.split()[0] if b.info else ""
        if b.mark is not None and b.mark[0] == "not-run" and not b.mark[1]:
            problems.append(f"{b.where}: `<!-- not-run: -->` needs a reason")
        elif b.mark is None and lang not in LANGUAGES:
            problems.append(f"{b.where}: fence info {b.info!r}: use one of {sorted(LANGUAGES)} "
                            "(`text` for output, trees and formulas) or mark it "
                            "`<!-- not-run: reason -->`")
    assert not problems, "\n".join(problems)


# --- python ------------------------------------------------------------------------------------

def setup_transform_output(cwd: Path) -> Callable[[dict], None]:
    """``encoded/``: a real `transform` output of several shards (analyze + transform)."""
    from beam_prep.pipelines import analyze, transform

    (cwd / "d.csv").write_text("color,size\n" + "".join(
        f"{c},{i}\n" for i, c in enumerate(["red", "blue", "green"] * 7)), encoding="utf-8")
    (cwd / "spec.yaml").write_text("features:\n  - {name: color, kind: string}\n"
                                   "  - {name: size, kind: numeric, num_buckets: 3}\n",
                                   encoding="utf-8")
    analyze.run(["--spec", "spec.yaml", "--input", "d.csv", "--output", "art", "--quiet",
                 "--no_report"])
    transform.run(["--artifacts", "art", "--input", "d.csv", "--output", "encoded",
                   "--input_split_bytes", "60"])
    manifest = json.loads((cwd / "encoded" / "transform.json").read_text(encoding="utf-8"))
    assert len(manifest["files"]) > 1  # the snippet must read every shard

    def check(scope: dict) -> None:
        import numpy as np

        batches = list(scope["ds"])
        assert sorted(batches[0]) == sorted(o["key"] for o in manifest["outputs"])
        sizes = np.concatenate([b["size"].numpy().ravel() for b in batches])
        assert len(sizes) == manifest["counts"]["rows_written"] == 21

    return check


def setup_elwc_sample(cwd: Path) -> Callable[[dict], None]:
    """``elwc/``: the bundled TF Ranking ELWC sample (10 lists) as 7 shards, with its
    ``feature_spec.json`` (70 lists: one full batch of 64)."""
    from tests.ranking.train_fixtures import SAMPLE, SPEC

    (cwd / "elwc").mkdir()
    for i in range(7):
        shutil.copy(SAMPLE, cwd / "elwc" / f"train-{i:05d}.tfrecord")
    SPEC.save(str(cwd / "elwc" / "feature_spec.json"))

    def check(scope: dict) -> None:
        assert tuple(scope["labels"].shape) == (64, 32)

    return check


@pytest.mark.parametrize("block", _params({"python"}))
def test_python_block_runs(block: Block, tmp_path, monkeypatch):
    check = None
    monkeypatch.chdir(tmp_path)
    if block.mark is not None:
        setup = block.mark[1].split()[0]
        check = globals()[f"setup_{setup}"](tmp_path)
    scope: dict = {"__name__": "docs_block"}
    exec(compile(block.body, block.where, "exec"), scope)  # noqa: S102 - our own docs
    if check is not None:
        check(scope)


# --- bash / sh ---------------------------------------------------------------------------------

def _parse_beam_prep(command: str, argv: list[str]) -> None:
    """Parses ``beam-prep COMMAND argv`` with that command's parser (exits 2 on a bad flag)."""
    from beam_prep.cli import COMMANDS, HELP_PARSERS

    assert command in COMMANDS, f"no command beam-prep {command}"
    if command in HELP_PARSERS:
        from beam_prep.pipelines.flags import parse_job_args

        parse_job_args(importlib.import_module(HELP_PARSERS[command]).build_parser(), argv)
    elif command == "train":
        from beam_prep.pipelines import train

        train._parser().parse_args(argv)
    else:
        importlib.import_module(COMMANDS[command][0]).build_parser().parse_args(argv)


def _commands(body: str) -> list[list[str]]:
    """Simple commands of a shell block: lines (continuations joined) split at ``&&``, ``||``,
    ``;`` and ``|``, comments dropped, a redirection and its target dropped."""
    out = []
    for line in body.replace("\\\n", " ").splitlines():
        cur, skip = [], False
        for token in shlex.split(line, comments=True):
            if skip:
                skip = False
            elif token in {";", "&&", "||", "|", "&"}:
                out, cur = (out + [cur] if cur else out), []
            elif token in {">", ">>", "<", "2>", "2>&1"}:
                skip = token != "2>&1"
            else:
                cur.append(token)
        if cur:
            out.append(cur)
    return out


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, re.M))


def check_shell(body: str) -> int:
    """Checks a shell block's commands; returns how many it could check."""
    checked = 0
    for cmd in _commands(body):
        while cmd and re.fullmatch(r"[A-Z_]+=.*", cmd[0]):  # VAR=value cmd
            cmd = cmd[1:]
        if cmd[:1] == ["nice"]:
            cmd = cmd[1:]
        if not cmd:
            continue
        for arg in cmd:
            if arg.startswith("examples/"):
                assert (ROOT / arg).exists(), f"{arg} does not exist"
        if cmd[0] in ("beam-prep", ".venv/bin/beam-prep") and len(cmd) > 1:
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err):
                    _parse_beam_prep(cmd[1], cmd[2:])
            except SystemExit as e:
                raise AssertionError(f"`{shlex.join(cmd)}`: {err.getvalue().strip()}") from e
            checked += 1
        elif cmd[0] == "make":
            missing = [t for t in cmd[1:] if "=" not in t and t not in _make_targets()]
            assert not missing, f"`{shlex.join(cmd)}`: no Makefile target {missing}"
            checked += 1
        elif cmd[0] in ("python", "python3") and len(cmd) > 1 and cmd[1].endswith(".py"):
            assert (ROOT / cmd[1]).exists(), f"`{shlex.join(cmd)}`: {cmd[1]} does not exist"
            checked += 1
    return checked


@pytest.mark.parametrize("block", _params({"bash", "sh"}))
def test_shell_block_commands_parse(block: Block):
    assert check_shell(block.body) > 0, (
        f"{block.where}: no beam-prep, make or python command to check; mark the block "
        "`<!-- not-run: reason -->`")


def test_shell_check_catches_a_misspelt_flag():
    with pytest.raises(AssertionError, match="max_bad_fracton"):
        check_shell("beam-prep analyze --spec s.yaml --input x.csv --output o \\\n"
                    "  --max_bad_fracton 0.1\n")
    with pytest.raises(AssertionError, match="no Makefile target"):
        check_shell("make quickstrat && echo hi\n")
    assert check_shell("beam-prep diff old/ new/ --json > drift.json  # comment\n") == 1


# --- yaml / json -------------------------------------------------------------------------------

@pytest.mark.parametrize("block", _params({"yaml"}))
def test_yaml_block_parses_and_specs_are_valid(block: Block):
    from beam_prep.spec import Spec

    doc = yaml.safe_load(block.body)
    if isinstance(doc, dict) and "features" in doc:
        Spec.from_dict(doc)


@pytest.mark.parametrize("block", _params({"json", "jsonl"}))
def test_json_block_parses(block: Block):
    if block.info.split()[0] == "json":
        json.loads(block.body)
    else:
        for line in block.body.splitlines():
            if line.strip():
                json.loads(line)


def test_unmarked_python_block_that_fails_fails_the_test(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("x\n\n```python\nraise ValueError('boom')\n```\n\n<!-- not-run: demo -->\n"
                   "```python\nraise ValueError('skipped')\n```\n", encoding="utf-8")
    found = blocks(doc)
    assert [(b.line, b.mark) for b in found] == [(3, None), (8, ("not-run", "demo"))]
    with pytest.raises(ValueError, match="boom"):
        exec(compile(found[0].body, "doc", "exec"), {})  # noqa: S102 - the test's subject


