"""The mutual-information sidecar of a label-aware vocabulary: path and checked reader.

``vocab/<feature>.mutual_info.jsonl`` holds one ``[token, score, rows]`` JSON array per line,
in the order of ``vocab/<feature>.txt`` (score descending; see docs/label_vocabulary.md).

Example:
    >>> mutual_info_relpath("city")
    'vocab/city.mutual_info.jsonl'
    >>> mutual_info_rows(art, "city")[:1]                          # doctest: +SKIP
    [('NYC', 12.5, 40)]
"""

from __future__ import annotations

import json
import math
from typing import Any

from beam_prep.errors import ArtifactError

ROLE = "mutual_info"


def mutual_info_relpath(name: str) -> str:
    """Relative path of a feature's mutual-information sidecar."""
    return f"vocab/{name}.mutual_info.jsonl"


def _row_ok(row: Any) -> bool:
    return (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str)
            and type(row[1]) in (int, float) and math.isfinite(row[1])
            and type(row[2]) is int and row[2] >= 0)


def mutual_info_rows(art: Any, name: str, limit: int | None = None) -> list[tuple[str, float, int]]:
    """``(token, score, rows)`` per line of the sidecar (the first ``limit`` lines).

    Raises:
        ArtifactError: A line that is not ``[token, finite score, rows >= 0]``.
    """
    rows: list[tuple[str, float, int]] = []
    for k, line in enumerate(art.iter_lines(name, ROLE)):
        if limit is not None and len(rows) >= limit:
            break
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not _row_ok(row):
            raise ArtifactError(
                f"{art.file_path(name, ROLE)}: line {k + 1} is not [token, score, rows]. "
                f"Received: {line[:80]!r}. Fix: re-run `beam-prep analyze` into a fresh "
                "directory.")
        rows.append((row[0], float(row[1]), row[2]))
    return rows
