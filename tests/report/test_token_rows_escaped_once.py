"""Per-key keys and target-encoding tokens in the report are escaped once, bdi-isolated.

They were passed through ``token()`` (already HTML) and then escaped again by ``kv_table``,
so the page showed ``<bdi>`` and ``&amp;`` literally. Oracle: ``html.escape`` of the raw key.
"""

from __future__ import annotations

import html
import json

from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from beam_prep.report.analysis import render_analysis

EVIL = '<b>"a&b"</b>'


def test_per_key_keys_and_target_tokens_escaped_exactly_once(tmp_path):
    keys = [EVIL] * 20 + ["plain"] * 10
    rows = [{"k": k, "x": float(i), "y": float(i % 2), "f": i % 3} for i, k in enumerate(keys)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text(
        "features:\n  - {name: x, kind: numeric, per_key: k}\n"
        "  - {name: k, kind: string, target_encoding: {labels: y, fold_column: f, folds: 3}}\n")
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                 "--output", str(tmp_path / "art"), "--quiet"])
    page = render_analysis(Artifacts(str(tmp_path / "art")))
    want = f"<th><bdi>{html.escape(EVIL, quote=True)}</bdi></th>"
    assert page.count(want) == 2  # the per-key row and the target-encoding row
    assert "&lt;bdi&gt;" not in page and "&amp;amp;" not in page
    assert "<th><bdi>plain</bdi></th>" in page
