"""`beam-prep diff` prints tokens and paths an attacker may control: nothing it writes to a
terminal may hold a control character (ESC sequences rewrite the screen, set the window
title or forge hyperlinks; C1 ``\\x9b`` is CSI on 8-bit terminals) or a character that
reorders or breaks the line (bidi overrides, U+2028), in the table or in the JSON.

The reports are built here by hand (no pipeline: fast); the oracle of "safe" is
``str.isprintable()`` on every line, and of "nothing lost" is ``json.loads`` giving back the
exact hostile strings.
"""

from __future__ import annotations

import json

from beam_prep.diff.compare import DiffReport, FeatureDiff, Flag
from beam_prep.diff.render import render_json, render_table
from beam_prep.diff.thresholds import DiffThresholds
from beam_prep.diff.vocab import VocabDiff

HOSTILE = [
    "\x1b[2J\x1b[H\x1b[32mALL CLEAR\x1b[0m",  # clear the screen, write a forged line
    "\x1b]0;title\x07",  # set the window title
    "\x1b]8;;http://evil.example/\x07link\x1b]8;;\x07",  # OSC 8 hyperlink
    "\u202eRTL override",
    "csi\x9b31m",  # C1 CSI
    "nel\x85line",
    "ls\u2028ps\u2029",
    "nul\x00bell\x07",
    "tag\U000e0041",  # invisible tag character (Cf, astral)
    "caf\u00e9 \u4e2d\u6587",  # printable non-ASCII: kept as is
]


def _report(old: str = "old", new: str = "new") -> DiffReport:
    vocab = VocabDiff(old_size=3, new_size=len(HOSTILE), size_change=1.0, added=len(HOSTILE),
                      dropped=1, top_added=[(t, 10 + i) for i, t in enumerate(HOSTILE)],
                      top_dropped=[(HOSTILE[0], 5)], index_changed_share=1.0, top_k=3,
                      top_k_index_changed_share=1.0, oov_share=0.5, oov_share_max=0.5,
                      jsd=0.4)
    flag = Flag("cat", "jsd", 0.4, 0.05, f"cat: JS divergence 0.4 > 0.05 (top added token "
                                         f"{HOSTILE[0]!r}, count 10)")
    feature = FeatureDiff("cat", "string", "compared", False, vocab=vocab, flags=(flag,))
    return DiffReport(old, new, "a" * 64, "b" * 64, (), (feature,), DiffThresholds())


def _unsafe_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if not line.isprintable()]


def test_table_escapes_control_and_reordering_characters_in_tokens_and_paths() -> None:
    out = render_table(_report(old="runs/\x1b[2Jold", new="runs/new\u202e"))
    assert _unsafe_lines(out) == []
    assert "caf\u00e9 \u4e2d\u6587" in out  # printable text is shown as it is


def test_json_has_no_raw_control_or_reordering_character_and_reads_back() -> None:
    text = render_json(_report(old="runs/\x1b[2Jold"))
    assert _unsafe_lines(text) == []
    back = json.loads(text)
    added = back["features"][0]["vocab"]["top_added"]
    assert [t for t, _ in added] == HOSTILE  # exact strings, nothing lost
    assert back["old"] == "runs/\x1b[2Jold"
    assert "caf\u00e9 \u4e2d\u6587" in text  # printable non-ASCII stays readable
