"""Drift between two artifact directories: ``beam-prep diff OLD NEW`` (issue 16).

* :mod:`~beam_prep.diff.sidecar_lines`: streams a count sidecar's ``(token, count)`` pairs;
* :mod:`~beam_prep.diff.vocab`: size, added/dropped tokens, index stability, OOV share, JSD;
* :mod:`~beam_prep.diff.numeric`: mean/std/boundary shifts in OLD std units, rate changes;
* :mod:`~beam_prep.diff.per_key` (+ :mod:`~beam_prep.diff.per_key_drift`): per-key statistics,
  keys added/removed by values, frequent keys' mean shifts;
* :mod:`~beam_prep.diff.target`: target encodings: global mean and token shifts in OLD's
  estimated label std, tokens added/removed by rows;
* :mod:`~beam_prep.diff.thresholds`: :class:`DiffThresholds`, when a change is a flag;
* :mod:`~beam_prep.diff.compare`: :func:`diff_artifacts`, the spec check and the flags;
* :mod:`~beam_prep.diff.render`: the text table and the JSON document;
* :mod:`~beam_prep.diff.cli`: the command (exit 3 with ``--fail_on_drift`` and a flag).

See docs/diff.md.

Example:
    >>> from beam_prep.diff import diff_artifacts, render_table       # doctest: +SKIP
    >>> print(render_table(diff_artifacts("art/day1", "art/day2")))   # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

# Names are imported lazily: `beam-prep diff --help` must not load Apache Beam (the comparison
# reads artifacts through beam_prep.io, which does).
_EXPORTS = {
    "DiffReport": "compare", "FeatureDiff": "compare", "Flag": "compare",
    "diff_artifacts": "compare", "NumericDiff": "numeric", "compare_numeric": "numeric",
    "render_json": "render", "render_table": "render", "to_dict": "render",
    "DiffThresholds": "thresholds", "VocabDiff": "vocab", "compare_vocab": "vocab",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'beam_prep.diff' has no attribute {name!r}")
    return getattr(importlib.import_module(f"beam_prep.diff.{_EXPORTS[name]}"), name)
