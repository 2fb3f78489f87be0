"""HTML-level tests of `beam-prep report` (default suite): structure, no external resource,
escaping of hostile tokens, and the numbers on the page against oracles from the raw data."""

from __future__ import annotations

import collections
import math
import os
import statistics
import time

import pytest

from beam_prep.errors import ArtifactError
from beam_prep.report import render_report, write_report
from beam_prep.report.cli import main
from beam_prep.report.page import shown
from tests.report.builders import HOSTILE, make_analysis_dir, make_elwc_dir
from tests.report.htmlcheck import Page, number

FORBIDDEN_TAGS = {"script", "link", "img", "iframe", "object", "embed", "image", "use",
                  "foreignobject", "audio", "video", "source", "base", "form"}


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("art"))
    raw = make_analysis_dir(root)
    return root, raw, render_report(root)


@pytest.fixture(scope="module")
def elwc(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("elwc"))
    raw = make_elwc_dir(root)
    return root, raw, render_report(root)


def _self_contained(html: str, page: Page) -> None:
    assert not page.errors, page.errors
    assert html.startswith("<!DOCTYPE html>")
    assert not FORBIDDEN_TAGS & set(page.tags), FORBIDDEN_TAGS & set(page.tags)
    for v in page.attr_values:  # no resource reference of any kind in an attribute
        assert "//" not in v and "url(" not in v.lower() and not v.lower().startswith(
            ("javascript:", "data:")), v
    style = html[html.index("<style>"):html.index("</style>")]
    assert "url(" not in style and "@import" not in style and "//" not in style
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html.lower()
    assert not any(a.startswith("on") for a in _attr_names(html))


def _attr_names(html: str) -> set[str]:
    names: set[str] = set()

    class P(Page):
        def handle_starttag(self, tag, attrs):
            names.update(k for k, _ in attrs)
            super().handle_starttag(tag, attrs)

    P(html)
    return names


def test_analysis_page_structure_and_every_feature(analysis):
    _, _, html = analysis
    page = Page(html)
    _self_contained(html, page)
    assert set(page.sections) == {"__run__", "city", "store", "review", "price", "age", "empty",
                                  "uid"}
    assert page.tags.count("svg") == 2 + 2 + 4 + 1 + 1  # city, store, review, price, age


def test_analysis_header_numbers(analysis):
    _, raw, html = analysis
    run = Page(html).sections["__run__"]
    assert number(run["rows read"]) == raw.rows + 5
    assert number(run["rows used"]) == raw.rows
    assert run["rejected: bad <utf8>"] == "2"
    assert run["inputs"] == "gs://bucket/<odd>&path/*.csv"  # shown as text, escaped
    assert run["run time"] == "not recorded in the manifest"


def test_vocabulary_numbers_match_raw_data(analysis):
    _, raw, html = analysis
    sec = Page(html).sections["city"]
    counts = collections.Counter(raw.city)
    top6 = sum(c for _, c in counts.most_common(6))
    assert number(sec["values seen"]) == len(raw.city)
    assert number(sec["values covered by the vocabulary"]) == top6
    assert number(sec["implied OOV rate"]) == pytest.approx(
        100 * (1 - top6 / len(raw.city)), abs=0.005)
    assert number(sec["missing rows"]) == raw.city_missing
    assert sec["cut"] == "top_k=6, min_count=1"
    assert number(sec["dropped top k"]) == len(counts) - 6


def test_text_numbers_match_raw_data(analysis):
    _, raw, html = analysis
    page = Page(html)
    sec = page.sections["review"]
    terms = sum(len(d) for d in raw.docs)
    assert number(sec["terms per document (mean)"]) == pytest.approx(terms / len(raw.docs),
                                                                     rel=1e-5)
    # document frequency of the most frequent term, as written beside its bar
    tf = collections.Counter(w for d in raw.docs for w in d)
    best = max(tf, key=lambda w: (tf[w], w.encode()))
    df = sum(best in d for d in raw.docs)
    text = "".join(page.section_text["review"])
    assert f"{df:,} docs ({100 * df / len(raw.docs):.2f}%)" in text
    assert shown(best) in text


def test_text_terms_per_document_match_raw_docs(analysis):
    _, raw, html = analysis
    sec = Page(html).sections["review"]
    lengths = sorted(len(d) for d in raw.docs)
    assert sec["documents with no term"] == "0 (0.00%)"
    median = lengths[(len(lengths) + 1) // 2 - 1]
    lo = 1 << (median.bit_length() - 1)
    assert sec["terms per document (median)"] == (f"{lo}–{2 * lo - 1}" if lo > 1 else "1")
    part = html[html.index('data-name="review"'):html.index('data-name="price"')]
    assert 'aria-label="terms per document"' in part
    for label, lo, hi in (("0", 0, 0), ("1", 1, 1), ("2–3", 2, 3), ("4–7", 4, 7)):
        c = sum(lo <= n <= hi for n in lengths)
        assert f"<title>{label}: {c:,}</title>" in part, label
    assert "<title>8–15:" not in part  # no document has 8 terms or more


def test_text_terms_per_document_not_recorded_in_older_manifests(tmp_path):
    root = str(tmp_path)
    make_analysis_dir(root, terms=False)
    html = render_report(root)
    sec = Page(html).sections["review"]
    assert sec["terms per document (distribution)"] == "not recorded"
    assert "Terms per document: not recorded" in html
    assert 'aria-label="terms per document"' not in html


def test_numeric_numbers_match_raw_data(analysis):
    _, raw, html = analysis
    page = Page(html)
    sec = page.sections["price"]
    assert number(sec["mean"]) == pytest.approx(statistics.fmean(raw.price), rel=1e-5)
    assert number(sec["std"]) == pytest.approx(statistics.pstdev(raw.price), rel=1e-5)
    assert number(sec["min"]) == min(raw.price) and number(sec["max"]) == max(raw.price)
    assert number(sec["NaN"]) == 1 and number(sec["±inf"]) == 3
    text = "".join(page.section_text["price"])
    assert "No raw histogram is stored" in text and "1/4 of the 400 finite values" in text
    age = page.sections["age"]
    assert number(age["std"]) == pytest.approx(statistics.pstdev(raw.age), rel=1e-5)
    assert "No quantile boundaries" in "".join(page.section_text["age"])
    assert page.sections["empty"]["mean"] == "—"
    assert page.sections["empty"]["mean is null"] == "no finite value"


def test_numeric_histogram_bars_are_equal_mass_densities(analysis):
    root, raw, html = analysis
    price = html[html.index('data-name="price"'):html.index('data-name="age"')]
    p = sorted(raw.price)
    edges = [p[0]] + [p[len(p) * k // 4] for k in (1, 2, 3)] + [p[-1]]
    for a, b in zip(edges, edges[1:]):
        assert f"density {(len(p) / 4) / (b - a):.6g} per unit" in price


def test_hostile_tokens_are_escaped_and_shown(analysis):
    _, _, html = analysis
    page = Page(html)
    text = "".join(page.section_text["city"])
    for tok in HOSTILE[:6]:  # the written vocabulary
        assert shown(tok) in text, tok
    assert "\u202e" not in html and "\\u202eevil" in text  # bidi override made visible
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "</svg><b>" not in html


def test_elwc_page_numbers_match_raw_lists(elwc):
    _, raw, html = elwc
    page = Page(html)
    _self_contained(html, page)
    assert {"__run__", "__lists__", "__labels__", "__rejected__", "__features__",
            "__policy__"} <= set(page.sections)
    run = page.sections["__run__"]
    docs = sum(len(x) for x in raw.lists)
    assert number(run["documents"]) == docs
    assert number(run["documents per list (mean)"]) == pytest.approx(docs / len(raw.lists),
                                                                    rel=1e-5)
    lists = page.sections["__lists__"]
    at_cap = sum(len(x) == raw.max_list_size for x in raw.lists)
    assert number(lists["lists at max_list_size"]) == at_cap
    assert number(lists["queries truncated"]) == 9
    labels = page.sections["__labels__"]
    all_labels = collections.Counter(v for x in raw.lists for v in x)
    for v, c in all_labels.items():
        assert labels[f"label {v}"] == f"{c:,} ({100 * c / docs:.2f}%)"
    rej = page.sections["__rejected__"]
    for reason, c in collections.Counter(raw.rejected).items():
        assert number(rej[f"rejected: {reason}"]) == c
    assert "<b>bad</b>" not in html
    assert f"max_list_size={raw.max_list_size} (truncate)" in "".join(page.texts)
    assert "not recorded" not in html.lower()


def test_elwc_per_list_labels_match_raw_lists(elwc):
    _, raw, html = elwc
    labels = Page(html).sections["__labels__"]
    n = len(raw.lists)
    none = sum(not any(v > 0 for v in x) for x in raw.lists)
    assert none >= 2
    assert labels["lists with no relevant label"] == f"{none:,} ({100 * none / n:.2f}%)"
    relevant = sum(v > 0 for x in raw.lists for v in x)
    assert number(labels["relevant documents (label > 0)"]) == relevant
    assert number(labels["relevant documents per list (mean)"]) == pytest.approx(
        relevant / n, rel=1e-3)
    for top, c in collections.Counter(max(x) for x in raw.lists).items():
        assert labels[f"lists with largest label {top}"] == f"{c:,} ({100 * c / n:.2f}%)"
    part = html[html.index('data-name="__labels__"'):html.index('data-name="__rejected__"')]
    assert 'aria-label="relevant documents per list"' in part
    assert 'aria-label="largest label per list"' in part
    # relevant counts 0..max in at most 60 equal bins, heights from the raw lists
    rel = [sum(v > 0 for v in x) for x in raw.lists]
    width = math.ceil((max(rel) + 1) / 60)
    assert width == 2  # (max 60..119 here)
    for lo in range(0, max(rel) + 1, width):
        c = sum(lo <= r < lo + width for r in rel)
        assert f"<title>{lo}–{lo + width - 1}: {c:,}</title>" in part


def test_elwc_feature_presence_matches_raw_documents(elwc):
    _, raw, html = elwc
    feats = Page(html).sections["__features__"]
    docs = [d for x in raw.present for d in x]
    share = {f"f{i}": sum(f"f{i}" in d for d in docs) / len(docs) for i in range(1, 11)}
    assert number(feats["documents"]) == len(docs)
    assert number(feats["on every document"]) == sum(s == 1.0 for s in share.values()) == 3
    assert number(feats["on no document"]) == 1
    assert number(feats["on fewer than half of the documents"]) == sum(
        s < 0.5 for s in share.values())
    for name, s in sorted(share.items(), key=lambda kv: (kv[1], kv[0]))[:7]:
        c = round(s * len(docs))
        assert feats[f"least present: {name}"] == f"{c:,} ({100 * s:.2f}%)"
    assert "feature id is on the input line" in html


def test_old_stats_json_says_not_recorded(tmp_path):
    root = str(tmp_path)
    raw = make_elwc_dir(root, per_list=False)
    html = render_report(root)
    page = Page(html)
    _self_contained(html, page)
    assert page.sections["__labels__"]["lists with no relevant label"] == "not recorded"
    relevant = sum(v > 0 for x in raw.lists for v in x)
    assert number(page.sections["__labels__"]["relevant documents (label > 0)"]) == relevant
    assert "Features present per document: Not recorded" in "".join(
        page.section_text["__features__"])


def test_list_size_bars_are_binned_and_sum_to_lists(elwc):
    _, raw, html = elwc
    lists = html[html.index('data-name="__lists__"'):html.index('data-name="__labels__"')]
    bars = lists.count('<rect class="bar"')
    assert bars <= 60
    from beam_prep.report.elwc import size_bins

    hist = collections.Counter(len(x) for x in raw.lists)
    labels, counts, pos = size_bins(dict(hist), raw.max_list_size)
    assert sum(counts) == len(raw.lists) and len(labels) == bars
    width = math.ceil(raw.max_list_size / 60)
    assert counts[0] == sum(c for s, c in hist.items() if s <= width)


def test_large_vocabulary_page_is_bounded(tmp_path):
    root = str(tmp_path)
    make_analysis_dir(root, big_vocab=100_000)
    out = write_report(root)
    size = os.path.getsize(out)
    assert out == os.path.join(root, "report.html") and size < 120_000
    sec = Page(open(out, encoding="utf-8").read()).sections["big"]
    assert number(sec["vocabulary size (tokens written)"]) == 100_000
    assert number(sec["values covered by the vocabulary"]) == sum(1000 - i for i in range(5)) \
        + 100_000 - 5


@pytest.mark.slow
def test_two_million_token_sidecar_gives_small_fast_page(tmp_path):
    root = str(tmp_path)
    make_analysis_dir(root, big_vocab=2_000_000)
    t0 = time.perf_counter()
    out = write_report(root)
    seconds = time.perf_counter() - t0
    size = os.path.getsize(out)
    print(f"2M-token sidecar: page {size:,} bytes in {seconds:.2f} s")
    assert size < 300_000 and seconds < 15


def test_cli_writes_and_prints_path(tmp_path, capsys):
    root = str(tmp_path / "elwc")
    make_elwc_dir(root)
    target = str(tmp_path / "out" / "r.html")
    assert main([root, "--output", target]) == 0
    assert capsys.readouterr().out.strip() == target
    assert Page(open(target, encoding="utf-8").read()).sections["__run__"]["status"] == "ok"


def test_cli_refuses_a_directory_without_outputs(tmp_path):
    with pytest.raises(ArtifactError, match="neither manifest.json"):
        main([str(tmp_path)])


@pytest.mark.parametrize("which", ["analysis", "elwc"])
def test_report_of_a_local_folder_imports_no_beam(which, analysis, elwc):
    """`beam-prep report` on a local folder reads it with the standard library: importing
    Beam cost ~2 s on a quiet machine (25 s at load 10) for a page that takes 0.1 s."""
    import subprocess
    import sys

    root = {"analysis": analysis, "elwc": elwc}[which][0]
    out = os.path.join(root, "page_no_beam.html")
    code = ("import sys\nfrom beam_prep.report.cli import main\n"
            f"main([{root!r}, '--output', {out!r}])\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'apache_beam', 'tensorflow'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr
    assert os.path.getsize(out) > 1000


def test_elwc_list_sizes_name_the_red_line_only_when_it_is_drawn(tmp_path):
    import json

    root = str(tmp_path / "elwc")
    make_elwc_dir(root)
    with_cap = render_report(root)
    stats_path = os.path.join(root, "stats.json")
    with open(stats_path, encoding="utf-8") as f:
        stats = json.load(f)
    stats["policy"]["max_list_size"] = None
    with open(stats_path, "w", encoding="utf-8") as f:
        json.dump(stats, f)
    without = render_report(root)
    for html, drawn in ((with_cap, True), (without, False)):
        card = html[html.index("List sizes"):html.index("Labels", html.index("List sizes"))]
        assert ('class="cut"' in card) is drawn
        assert ("red line" in card) is drawn, card[-600:]
