"""Where the project's shared sample data lives (read-only).

CI clones the repository with ``shared/`` beside it; developers have it at ``/work/shared``.
``BEAM_PREP_SHARED`` overrides both.
"""

from __future__ import annotations

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The first existing candidate: $BEAM_PREP_SHARED, <repo>/../shared, /work/shared."""
    candidates = [os.environ.get("BEAM_PREP_SHARED"), _REPO.parent / "shared", "/work/shared"]
    for c in candidates:
        if c and Path(c, "data").is_dir():
            return Path(c)
    raise FileNotFoundError(
        "shared/ sample data not found beside the repository nor at /work/shared; "
        "set BEAM_PREP_SHARED to its path."
    )


SHARED = str(shared_dir())
