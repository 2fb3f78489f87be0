"""The text summary goes to a terminal: an output path or a text count holding ESC
sequences, a bidi override or a line break must not rewrite the screen or forge a line.
Oracle: ``str.isprintable()`` on every printed line; the line count is the entries' count."""

from __future__ import annotations

from beam_prep.run_summary import RunSummary

HOSTILE = "out/\x1b[2J\x1b]0;title\x07\u202e\n  wrote model: /forged\u2028x\x9b31m"


def test_summary_text_escapes_control_and_reordering_characters() -> None:
    text = RunSummary("analyze", "ok", 1.0, counts={"rows": 3, "mode": HOSTILE},
                      outputs={"artifacts": HOSTILE, "report": "caf\u00e9/r.html"}).format()
    lines = text.split("\n")
    assert len(lines) == 1 + 2 + 2, lines  # head, counts, outputs: nothing forged
    assert all(line.isprintable() for line in lines), lines
    assert lines[-1] == "  wrote report: caf\u00e9/r.html"  # printable text kept as is
    assert "\\x1b[2J" in lines[3]  # shown, escaped
