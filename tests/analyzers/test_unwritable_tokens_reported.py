"""Tokens a vocabulary ``.txt`` cannot hold (a line break, or empty) are said per feature.

They were counted only in the manifest (``excluded_unwritable``) and shown in the report as
a bare "excluded unwritable" row; ``beam-prep analyze`` now warns with the number and why,
its summary line counts them, and the report row says why. The oracle counts the tokens of
the input with ``str.splitlines`` (the boundaries a line file cannot hold).
"""

from __future__ import annotations

import html
import json

from beam_prep.pipelines import analyze

from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.report.analysis import render_analysis

VALUES = (["plain"] * 3 + ["two\nlines"] * 5 + ["para\u2029sep"] * 4 + [""] * 6
          + ["cr\rhere"] * 1 + ["tab\tis fine"] * 2)


def _unwritable(values: list[str]) -> tuple[int, int]:
    bad = [v for v in values if v == "" or len((v + "x").splitlines()) > 1]
    return len(set(bad)), len(bad)


def test_analyze_warns_summarises_and_reports_the_left_out_tokens(tmp_path, capsys) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"s": v, "n": 1.0}) + "\n" for v in VALUES),
                    encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: s, kind: string}\n  - {name: n, kind: numeric}\n")
    out = tmp_path / "out"
    assert analyze.main(["--spec", str(spec), "--input", str(data), "--output", str(out),
                         "--no_report"]) == 0
    tokens, count = _unwritable(list(VALUES))
    assert (tokens, count) == (4, 16)
    captured = capsys.readouterr()
    warning = [line for line in captured.err.splitlines() if "left out of" in line]
    assert warning == [
        f"beam-prep analyze: warning: s: {tokens} tokens ({count} values) left out of its "
        "vocabulary file vocab/s.txt: they contain a line break (\\n, \\r, U+2028, ...) or are "
        "empty, and a vocabulary file holds one token per line, so the lookup maps them to OOV "
        "(excluded_unwritable)"]
    (line,) = [x for x in captured.out.splitlines() if x.strip().startswith("s ")]
    assert line.endswith(f", {tokens} left out (line breaks)")
    assert "left out" not in "".join(x for x in captured.out.splitlines()
                                     if x.strip().startswith("n "))
    page = html.unescape(render_analysis(Artifacts(str(out))))
    assert f"{tokens} tokens, {count} values (a line break or empty" in page
