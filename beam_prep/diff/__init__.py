"""Drift between two artifact directories: ``beam-prep diff OLD NEW`` (issue 16).

* :mod:`~beam_prep.diff.sidecar_lines`: streams a count sidecar's ``(token, count)`` pairs;
* :mod:`~beam_prep.diff.vocab`: size, added/dropped tokens, index stability, OOV share, JSD;
* :mod:`~beam_prep.diff.numeric`: mean/std/boundary shifts in OLD std units, rate changes;
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

from beam_prep.diff.compare import DiffReport, FeatureDiff, Flag, diff_artifacts
from beam_prep.diff.numeric import NumericDiff, compare_numeric
from beam_prep.diff.render import render_json, render_table, to_dict
from beam_prep.diff.thresholds import DiffThresholds
from beam_prep.diff.vocab import VocabDiff, compare_vocab

__all__ = [
    "DiffReport",
    "DiffThresholds",
    "FeatureDiff",
    "Flag",
    "NumericDiff",
    "VocabDiff",
    "compare_numeric",
    "compare_vocab",
    "diff_artifacts",
    "render_json",
    "render_table",
    "to_dict",
]
