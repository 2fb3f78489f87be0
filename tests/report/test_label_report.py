"""`beam-prep report` on a label-aware vocabulary: MI section against a numpy oracle."""

from __future__ import annotations

from beam_prep.report import render_report
from beam_prep.report.page import fmt_num, shown
from tests.analyzers.test_label_vocab import oracle
from tests.label_artifacts import HOSTILE, make_labeled_dir
from tests.report.htmlcheck import Page


def test_report_shows_the_label_settings_top_scores_and_label_rows(tmp_path):
    path, cols = make_labeled_dir(str(tmp_path / "art"))
    html = render_report(path)
    page = Page(html)
    assert not page.errors
    rows = page.sections["city"]
    labelled = len(cols["clicked"])
    positives = sum(cols["clicked"])
    assert rows["rows with a label"] == f"{labelled:,}"
    assert rows["label 1"].startswith(f"{positives:,} rows")
    assert "mutual information with label column 'clicked'" in rows["ranked by"]
    want = oracle(cols["city"], cols["clicked"], min_diff=0)
    best = max(want, key=want.get)
    text = " ".join(page.section_text["city"])
    assert f"{fmt_num(want[best])} (" in text  # the best token's score, as the oracle has it
    assert shown(best) in text or best in text
    assert HOSTILE not in html and "\u202e" not in html and "\x1b" not in html
    assert "ranked by" not in page.sections["plain"]  # a count-ranked twin has no MI rows
