"""Readable differences between two artifact directories, for byte-identity assertions.

A byte-identity test that fails with only a file name leaves the cause to guess (tie order of
a vocabulary? last bits of a float? a run id?). :func:`describe_differences` names every file
that differs, the first differing line (text) or byte offset (binary) with both sides, and the
JSON keys whose values differ in ``manifest.json`` (or any other ``.json`` file).

Worker processes (``--direct_running_mode=multi_processing``) import the code anew, while the
test process keeps what it imported at collection: an edit of the checkout in between makes
the two runs use different code. :func:`assert_same_artifacts` then says which source files
changed since this module was imported, so such a failure is not taken for nondeterminism.

Example:
    >>> import pathlib, tempfile
    >>> a, b = (pathlib.Path(tempfile.mkdtemp()) for _ in range(2))
    >>> _ = (a / "v.txt").write_text("x\\ny\\n"); _ = (b / "v.txt").write_text("x\\nz\\n")
    >>> print(describe_differences(a, b))
    v.txt differs: first at line 2: 'y' != 'z'
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import beam_prep.pipelines

import beam_prep

MAX_KEYS = 12  # differing JSON keys listed per file


def _sources() -> dict[str, str]:
    roots = {Path(beam_prep.__file__).parent, Path(beam_prep.pipelines.__file__).parent}
    return {str(p): hashlib.sha1(p.read_bytes()).hexdigest()
            for root in sorted(roots) for p in sorted(root.rglob("*.py"))}


_SOURCES_AT_IMPORT = _sources()


def changed_sources() -> list[str]:
    """Source files of beam_prep added, removed or edited since this module was imported."""
    now = _sources()
    return sorted(p for p in now.keys() | _SOURCES_AT_IMPORT.keys()
                  if now.get(p) != _SOURCES_AT_IMPORT.get(p))


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _flatten(value, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out or {prefix: []}
    return {prefix: value}


def _json_keys(left: bytes, right: bytes) -> str:
    try:
        a, b = _flatten(json.loads(left)), _flatten(json.loads(right))
    except ValueError:
        return ""
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k, "<absent>") != b.get(k, "<absent>"))
    shown = [f"{k}: {a.get(k, '<absent>')!r} != {b.get(k, '<absent>')!r}" for k in keys[:MAX_KEYS]]
    more = f"\n    ... {len(keys) - MAX_KEYS} more" if len(keys) > MAX_KEYS else ""
    return "".join(f"\n    {s}" for s in shown) + more


def _first_difference(left: bytes, right: bytes) -> str:
    try:
        la, lb = left.decode("utf-8").split("\n"), right.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        i = next((j for j, (x, y) in enumerate(zip(left, right)) if x != y),
                 min(len(left), len(right)))
        return (f"first at byte {i} of {len(left)} / {len(right)}: "
                f"{left[max(0, i - 16):i + 24]!r} != {right[max(0, i - 16):i + 24]!r}")
    i = next((j for j, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
    x = la[i] if i < len(la) else "<end of file>"
    y = lb[i] if i < len(lb) else "<end of file>"
    return f"first at line {i + 1}: {x[:200]!r} != {y[:200]!r}"


def describe_differences(a: Path, b: Path) -> str:
    """Every difference between the files under ``a`` and ``b``; ``""`` when byte-identical.

    Args:
        a: One artifact directory.
        b: The other one.

    Returns:
        One paragraph per differing or missing file (names relative to the directories).
    """
    fa, fb = _files(a), _files(b)
    parts = [f"only in {a}: {sorted(fa - fb)}"] if fa - fb else []
    parts += [f"only in {b}: {sorted(fb - fa)}"] if fb - fa else []
    for rel in sorted(fa & fb):
        left, right = (a / rel).read_bytes(), (b / rel).read_bytes()
        if left != right:
            keys = _json_keys(left, right) if rel.endswith(".json") else ""
            parts.append(f"{rel} differs: {_first_difference(left, right)}{keys}")
    return "\n".join(parts)


def assert_same_artifacts(a: Path, b: Path) -> None:
    """Fails with :func:`describe_differences` unless every file under ``a`` and ``b`` is equal.

    Args:
        a: The reference artifact directory.
        b: The directory that must hold the same bytes.
    """
    diff = describe_differences(a, b)
    if diff and (changed := changed_sources()):
        diff += (f"\nNOTE: {len(changed)} source file(s) changed during the test, so worker "
                 f"processes may have run other code than this process: {changed[:5]}")
    assert not diff, f"artifacts differ ({a} vs {b}):\n{diff}"
