"""Slow: hostile text in real job outputs, rendered by headless Chromium (a real browser).

Every payload, if it ever ran, would leave a mark on ``<body>`` (an attribute) or change the
title; the dumped DOM (``--dump-dom``, after the page's scripts would have run) must hold no
mark, no ``<script>`` element and no event-handler attribute. A page with a script planted
*past* the escaping (what an escaping bug in a future card would give) shows that the page's
Content-Security-Policy stops it in the browser.

Chromium: Debian's package (``apt-get install -y chromium``); skipped without it.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

import pytest

from beam_prep.report import write_report
from beam_prep.report.page import document

BIN = os.path.dirname(sys.executable)


def _payloads(mark: str) -> list[str]:
    set_attr = f"document.body.setAttribute('data-pwned','{mark}')"
    return [f"<script>{set_attr}</script>", f"<img src=x onerror=\"{set_attr}\">",
            f"<svg onload=\"{set_attr}\">", f"</text></svg><img src=x onerror={set_attr}>",
            f"</style><script>{set_attr}</script>", f"</title><script>{set_attr}</script>",
            f"<a href=\"javascript:{set_attr}\">x</a>", "<style>body{display:none}</style>",
            "\x1b[2J\u202eevil\u2028x"]


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return exe


def _dom(exe: str, path: str) -> str:
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", f"--user-data-dir={tempfile.mkdtemp()}", "--dump-dom",
         f"file://{path}"], check=True, capture_output=True, text=True, timeout=180).stdout


class _Dom(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.body_attrs: list[tuple[str, str | None]] = []
        self.scripts = 0
        self.handlers: list[str] = []
        self.title = ""
        self._in_title = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "body":
            self.body_attrs = attrs
        self.scripts += tag == "script"
        self.handlers += [k for k, _ in attrs if k.startswith("on")]
        self._in_title = tag == "title" and not self.title

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def _assert_inert(dom: _Dom) -> None:
    assert dom.body_attrs == [] and dom.scripts == 0 and dom.handlers == [], (
        dom.body_attrs, dom.scripts, dom.handlers)


def _run(*args: str) -> None:
    subprocess.run([os.path.join(BIN, "beam-prep"), *args], check=True, capture_output=True,
                   timeout=900)


@pytest.mark.slow
def test_planted_script_is_refused_by_the_page_policy(tmp_path):
    exe = _chromium()
    path = str(tmp_path / "planted.html")
    planted = "".join(_payloads("planted")) + "<script>document.title='PWNED'</script>"
    with open(path, "w", encoding="utf-8") as f:
        f.write(document("kept title", [planted]))  # raw: as if escaping had been forgotten
    dom = _Dom(_dom(exe, path))
    assert dom.body_attrs == [] and dom.title == "kept title", (dom.body_attrs, dom.title)


@pytest.mark.slow
def test_hostile_tokens_and_names_of_real_jobs_stay_inert_in_chromium(tmp_path):
    exe = _chromium()
    tokens = _payloads("token") + ["ok"]
    data, spec = str(tmp_path / "d.csv"), str(tmp_path / "spec.yaml")
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n", quoting=csv.QUOTE_ALL)
        w.writerow(["col<script>x</script>", "txt"])
        for i in range(3 * len(tokens)):
            w.writerow([tokens[i % len(tokens)], tokens[i % len(tokens)] + " word"])
    with open(spec, "w", encoding="utf-8") as f:
        f.write("version: 1\nfeatures:\n"
                f"  - {{name: cat, kind: string, column: {json.dumps('col<script>x</script>')},"
                f" mask_token: {json.dumps(_payloads('mask')[0])}}}\n"
                "  - {name: txt, kind: text, output_mode: tf_idf}\n")
    art = str(tmp_path / "art")
    _run("analyze", "--spec", spec, "--input", data, "--output", art, "--quiet")
    rank = str(tmp_path / "rank.jsonl")
    names = _payloads("name")
    with open(rank, "w", encoding="utf-8") as f:
        for q in range(4):
            for d in range(3):
                row = {"qid": names[q], "label": d, **{n: (n if i % 2 else 1.0)
                                                       for i, n in enumerate(names)}}
                f.write(json.dumps(row) + "\n")
        f.write(json.dumps({"qid": names[0], "label": names[1]}) + "\n")  # rejected line
        f.write("not json " + names[2] + "\n")
    elwc = str(tmp_path / "elwc")
    _run("make-elwc", "--input", rank, "--input_format", "jsonl", "--output", elwc,
         "--max_bad_fraction", "0.5", "--quiet")
    for d in (art, elwc):
        page = write_report(d)
        with open(page, encoding="utf-8") as f:
            assert "data-pwned','token" in f.read().replace("&#x27;", "'") or d == elwc
        _assert_inert(_Dom(_dom(exe, page)))
