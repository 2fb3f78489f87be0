"""Drift of a target encoding (``target_encoding:``): global mean and per-token encodings.

Read from the manifests' ``stats.target_encoding`` and both ``vocab/<name>.target.jsonl``
files (checked line reader; memory: one side's token -> encoding map):

* the global means of OLD and NEW and the token counts;
* ``shared``: tokens on both sides, and ``max_encoding_change``: the largest absolute change
  of a shared token's (serving) encoding, with that token.

Example:
    >>> d = TargetDiff(0.5, 0.6, 10, 12, 9, 0.25, "a")
    >>> d.max_encoding_change
    0.25
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

__all__ = ["TargetDiff", "compare_target"]


@dataclasses.dataclass(frozen=True)
class TargetDiff:
    """How a target encoding changed between two analyses.

    Attributes:
        old_global_mean: OLD's global mean (None when no row had a label).
        new_global_mean: NEW's.
        old_tokens: Tokens in OLD's file.
        new_tokens: Tokens in NEW's file.
        shared: Tokens in both.
        max_encoding_change: Largest absolute change of a shared token's encoding (None
            when no token is shared).
        most_changed_token: Its token.
    """

    old_global_mean: float | None
    new_global_mean: float | None
    old_tokens: int
    new_tokens: int
    shared: int
    max_encoding_change: float | None
    most_changed_token: str | None


def _encodings(art: Any, name: str) -> dict[str, float | None]:
    out = {}
    for line in art.iter_lines(name, "target_encoding"):
        row = json.loads(line)
        out[str(row[0])] = row[1]
    return out


def compare_target(old: Any, new: Any, name: str) -> TargetDiff | None:
    """The comparison, or None unless both sides of ``name`` have a target encoding."""
    a, b = (art.stats(name).get("target_encoding") for art in (old, new))
    if not isinstance(a, dict) or not isinstance(b, dict):
        return None
    before = _encodings(old, name)
    change, token, shared = None, None, 0
    for line in new.iter_lines(name, "target_encoding"):
        tok, enc = json.loads(line)[:2]
        tok = str(tok)
        if tok not in before:
            continue
        shared += 1
        if enc is None or before[tok] is None:
            continue
        delta = abs(enc - before[tok])
        if change is None or delta > change or (delta == change and tok < token):
            change, token = delta, tok
    return TargetDiff(a.get("global_mean"), b.get("global_mean"), a.get("tokens", 0),
                      b.get("tokens", 0), shared, change, token)
