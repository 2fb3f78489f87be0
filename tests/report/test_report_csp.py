"""The report page forbids scripts itself (Content-Security-Policy), on top of escaping.

Escaping (``page.text``) keeps hostile tokens inert; the policy makes an escaping mistake in
some future card inert too: a browser then refuses every script, event handler,
``javascript:`` URL, external resource, ``<base>`` and form target. The browser half (does
Chromium really refuse a planted script?) is in test_report_hostile_browser.py (slow).
"""

from __future__ import annotations

from html.parser import HTMLParser

from beam_prep.report.page import card, document, text

REQUIRED = {"default-src": ["'none'"], "style-src": ["'unsafe-inline'"],
            "base-uri": ["'none'"], "form-action": ["'none'"]}


def _head_metas(html: str) -> list[dict[str, str]]:
    metas: list[dict[str, str]] = []

    class P(HTMLParser):
        in_head = True

        def handle_starttag(self, tag, attrs):
            if tag == "meta" and self.in_head:
                metas.append({k: v or "" for k, v in attrs})
            elif tag in ("style", "title", "body", "script"):
                self.in_head = False  # the policy must come before any of these

    P().feed(html)
    return metas


def _policy(html: str) -> dict[str, list[str]]:
    csp = [m["content"] for m in _head_metas(html)
           if m.get("http-equiv", "").lower() == "content-security-policy"]
    assert len(csp) == 1, csp
    out: dict[str, list[str]] = {}
    for part in csp[0].split(";"):
        name, *values = part.split()
        out[name] = values
    return out


def test_page_carries_a_policy_that_forbids_scripts_and_resources() -> None:
    html = document("t", [card(text("<b>"), "body")])
    policy = _policy(html)
    for name, values in REQUIRED.items():
        assert policy.get(name) == values, (name, policy)
    assert "script-src" not in policy  # falls back to default-src 'none'
    assert html.index("Content-Security-Policy") < html.index("<style>")


def test_policy_is_not_weakened_by_a_hostile_title() -> None:
    html = document("</title><meta http-equiv=\"Content-Security-Policy\" content=\"x\">", [])
    assert _policy(html) == _policy(document("t", []))
