"""A strict-enough HTML reader for the tests: balance, resources, sections, text."""

from __future__ import annotations

from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "source", "wbr", "area", "base", "col"}


class Page(HTMLParser):
    """Parses a report: checks nesting, records tags, attributes, sections' key/value rows."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.attr_values: list[str] = []
        self.sections: dict[str, dict[str, str]] = {}
        self.section_text: dict[str, list[str]] = {}
        self.texts: list[str] = []
        self._section: str | None = None
        self._cell: str | None = None
        self._key = ""
        self._buf: list[str] = []
        self.feed(html)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attr_values += [v or "" for _, v in attrs]
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "section":
            self._section = dict(attrs).get("data-name")
            if self._section is not None:
                self.sections[self._section] = {}
                self.section_text[self._section] = []
        if tag in ("th", "td"):
            self._cell, self._buf = tag, []

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attr_values += [v or "" for _, v in attrs]

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
            return
        self.stack.pop()
        if tag in ("th", "td") and self._section is not None:
            value = "".join(self._buf).strip()
            if tag == "th":
                self._key = value
            else:
                self.sections[self._section][self._key] = value
            self._cell = None
        if tag == "section":
            self._section = None

    def handle_data(self, data):
        self.texts.append(data)
        if self._cell is not None:
            self._buf.append(data)
        if self._section is not None:
            self.section_text[self._section].append(data)


def number(cell: str) -> float:
    """First number of a cell such as '1,234 (12.50%)' or '12.50%'."""
    head = cell.split(" ")[0].replace(",", "").rstrip("%")
    return float(head)
