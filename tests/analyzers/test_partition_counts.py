"""Vocabulary partition counts: chosen from the input size, and invisible in the artifacts."""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep.analyzers.vocab.partition import auto_partitions

SPEC = """
features:
  - {name: word, kind: string, top_k: 40}
  - {name: num, kind: integer}
  - {name: title, kind: text, output_mode: tf_idf, max_tokens: 60}
"""


def test_auto_partitions_follow_the_input_bytes():
    mib = 1 << 20
    assert [auto_partitions(b) for b in (0, 1, 256 * mib, 256 * mib + 1, 1 << 30, 1 << 45)] \
        == [16, 16, 16, 17, 64, 1024]
    with pytest.raises(ValueError, match="total_bytes"):
        auto_partitions(-1)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("parts")
    rng = np.random.default_rng(5)
    pool = [f"w{i}" for i in range(150)] + ["é", "日本", "ab", "abc", "abcdefghij1", "abcdefghij2"]
    words = [str(w) for w in rng.choice(pool, 2000)]
    lines = ["word,num,title"]
    for w in words:
        title = " ".join(str(t) for t in rng.choice(pool[:80], 3))
        lines.append(f"{w},{int(rng.integers(0, 90))},{title}")
    (d / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / "spec.yaml").write_text(SPEC)
    return d, words


def _files(out):
    return {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_one_three_sixteen_and_auto_partitions_give_the_same_bytes(data, tmp_path):
    d, words = data
    outs = {}
    for parts in ("1", "3", "16", None):
        out = tmp_path / f"p{parts}"
        analyze.run(["--spec", str(d / "spec.yaml"), "--input", str(d / "data.csv"),
                     "--output", str(out), "--quiet", "--spill_rows", "7",
                     *(["--vocab_partitions", parts] if parts else [])])
        outs[parts] = _files(out)
    for parts in ("3", "16", None):
        assert outs[parts] == outs["1"], parts
    # And the bytes are the right ones (independent oracle: Counter + sorted).
    counts = collections.Counter(words)
    order = sorted(counts, key=lambda t: (counts[t], t.encode("utf-8")), reverse=True)[:40]
    vocab = outs["1"][next(k for k in outs["1"] if k.name == "word.txt")]
    assert vocab == "".join(t + "\n" for t in order).encode("utf-8")
    side = outs["1"][next(k for k in outs["1"] if k.name == "word.counts.jsonl")]
    assert [json.loads(x) for x in side.decode("utf-8").splitlines()] == \
        [[t, counts[t]] for t in order]
