"""analyze and make-elwc write report.html beside their output unless --no_report (issue 17)."""

from __future__ import annotations

import html.parser
import json

from beam_prep import cli
from tests.sample_data import LIGHTGBM

SPEC = ("features:\n  - {name: city, kind: string}\n"
        "  - {name: price, kind: numeric, num_buckets: 4}\n")


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _page_text(path) -> str:
    parser = _Text()
    parser.feed(path.read_text(encoding="utf-8"))
    return " ".join(parser.text)


def test_analyze_writes_the_report_and_overwrite_replaces_it(tmp_path, capsys):
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "d.csv").write_text("city,price\nOslo,1\nRiga,2\nOslo,3\nLima,\n")
    out = tmp_path / "out"
    args = ["analyze", "--spec", str(tmp_path / "spec.yaml"), "--input", str(tmp_path / "d.csv"),
            "--output", str(out), "--summary_json", str(tmp_path / "s.json")]
    assert cli.main(args) == 0
    report = out / "report.html"
    assert report.is_file()
    assert json.loads((tmp_path / "s.json").read_text())["outputs"]["report"] == str(report)
    text = _page_text(report)
    assert "city" in text and "price" in text and "Oslo" in text
    report.write_text("stale")
    assert cli.main([*args, "--overwrite", "--no_report"]) == 0  # report.html is the job's own
    assert not report.exists()
    assert "report" not in json.loads((tmp_path / "s.json").read_text())["outputs"]


def test_make_elwc_writes_the_report(tmp_path):
    out = tmp_path / "elwc"
    assert cli.main(["make-elwc", "--input", LIGHTGBM + "rank.test", "--input_format", "lightgbm",
                     "--output", str(out), "--quiet"]) == 0
    assert (out / "report.html").is_file()
    assert "50" in _page_text(out / "report.html")  # rank.test holds 50 queries
