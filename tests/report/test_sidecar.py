"""The streaming sidecar summary against a plain per-line oracle (json.loads + accumulate)."""

from __future__ import annotations

import io
import itertools
import json
import random

import pytest

from beam_prep.errors import ArtifactError
from beam_prep.report import sidecar
from beam_prep.report.sidecar import summarize_lines
from tests.report.builders import HOSTILE


def _sidecar(rows, *, compact: bool = False) -> bytes:
    sep = (",", ":") if compact else None  # the analysis writes compact lines; both are JSON
    return "".join(json.dumps(r, ensure_ascii=False, separators=sep) + "\n"
                   for r in rows).encode("utf-8")


def _rows(n: int, *, df: bool, seed: int = 0):
    rng = random.Random(seed)
    toks = HOSTILE + ['tok,"5]', "x],7]", "\\", "a\nb", "1,2,3]"]
    counts = sorted((rng.randint(1, 10_000) for _ in range(n)), reverse=True)
    rows = []
    for i, c in enumerate(counts):
        tok = toks[i % len(toks)] + str(i)
        rows.append([tok, c, rng.randint(1, c)] if df else [tok, c])
    return rows


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("df", [False, True])
@pytest.mark.parametrize("block", [7, 64, 1 << 22])
def test_matches_per_line_oracle(monkeypatch, df, block, compact):
    monkeypatch.setattr(sidecar, "_BLOCK", block)
    rows = _rows(700, df=df)
    s = summarize_lines(io.BytesIO(_sidecar(rows, compact=compact)), top_n=10, dense_ranks=20,
                        growth=1.3)
    cum = list(itertools.accumulate(r[1] for r in rows))
    assert s.tokens == len(rows) and s.total == cum[-1] and s.has_df == df
    assert s.top == [(r[0], r[1], r[2] if df else None) for r in rows[:10]]
    ranks = [k for k, _ in s.curve]
    assert ranks[:20] == list(range(1, 21)) and ranks[-1] == len(rows)
    assert ranks == sorted(set(ranks))
    assert all(total == cum[k - 1] for k, total in s.curve)


def test_curve_points_are_bounded():
    data = b"".join(b'["t%d",1]\n' % i for i in range(300_000))
    s = summarize_lines(io.BytesIO(data))
    assert s.tokens == 300_000 and s.total == 300_000
    assert len(s.curve) < 200 and s.curve[-1] == (300_000, 300_000)


def test_no_trailing_newline_and_blank_lines():
    data = b'["a",5]\n\n["b",3]\n["c",2]'
    s = summarize_lines(io.BytesIO(data), top_n=1)
    assert (s.tokens, s.total, s.top) == (3, 10, [("a", 5, None)])
    assert s.curve == [(1, 5), (2, 8), (3, 10)]


def test_empty_sidecar():
    s = summarize_lines(io.BytesIO(b""))
    assert (s.tokens, s.total, s.top, s.curve) == (0, 0, [], [])


@pytest.mark.parametrize("bad", [b'["a",5]\n["b"]\n["c",1]\n', b'["a",5]\n["b",x]\n',
                                 b'["a" 5]\n'])
def test_malformed_line_names_feature_and_line(bad):
    with pytest.raises(ArtifactError, match=r"Feature 'city': line \d of the counts sidecar"):
        summarize_lines(io.BytesIO(bad), top_n=1, name="city")
