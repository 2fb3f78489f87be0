"""Writes requirements.txt: beam_prep's runtime dependency closure pinned to the installed versions.

Run it in the environment you launch jobs from (the launcher's versions are the ones the workers
must have: a Beam or pyarrow mismatch between launcher and workers breaks pickled DoFns):

    python templates/dataflow/lock_requirements.py > templates/dataflow/requirements.txt

Only runtime requirements are followed (no ``extra == ...`` markers except the extras named in a
requirement, e.g. ``apache-beam[gcp]``); markers are evaluated for this interpreter.
"""

from __future__ import annotations

import importlib.metadata as md
import platform
import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def closure(root: str) -> dict[str, str]:
    """Canonical name -> installed version for ``root``'s runtime dependencies (not root)."""
    pinned: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        dist = md.distribution(name)
        if canonicalize_name(name) != canonicalize_name(root):
            pinned[canonicalize_name(name)] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            wanted = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(w) for w in wanted):
                continue
            todo.append((req.name, frozenset(req.extras)))
    return pinned


def main() -> int:
    pins = closure("beam-prep")
    py = ".".join(platform.python_version_tuple()[:2])
    print("# Worker (and Flex Template launcher) dependencies of beam_prep, pinned to the versions")
    print(f"# of the launching environment (Python {py}). Regenerate with:")
    print("#   python templates/dataflow/lock_requirements.py"
          " > templates/dataflow/requirements.txt")
    for name in sorted(pins):
        print(f"{name}=={pins[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
