"""compare_vocab and the sidecar stream, without a pipeline: values against tests/diff/oracles."""

from __future__ import annotations

import io
import json
import math
import random

import pytest

from beam_prep.diff import sidecar_lines
from beam_prep.diff.sidecar_lines import iter_pairs
from beam_prep.diff.vocab import compare_vocab
from beam_prep.errors import ArtifactError
from tests.diff import oracles


def _pairs(counts: dict[str, int]) -> list[tuple[str, int]]:
    return [(t, counts[t]) for t in oracles.vocab_order(counts)]


def test_hand_case():
    # OLD: a(6) b(3) c(1); NEW: z(8) a(6) c(2) -> z added and first, b dropped, a and c moved.
    d = compare_vocab([("a", 6), ("b", 3), ("c", 1)], [("z", 8), ("a", 6), ("c", 2)],
                      top_k=1, top_n=5)
    assert (d.old_size, d.new_size, d.added, d.dropped) == (3, 3, 1, 1)
    assert d.top_added == [("z", 8)] and d.top_dropped == [("b", 3)]
    assert d.index_changed_share == 2 / 3          # a 0->1 and b dropped; c stays at 2
    assert d.top_k == 1 and d.top_k_index_changed_share == 1.0
    assert d.oov_share == pytest.approx(8 / 16)
    # by hand: P = (.6, .3, .1, 0), Q = (.375, 0, .125, .5) over (a, b, c, z); b and z are
    # on one side only and contribute half their probability each.
    by_hand = (0.5 * 0.6 * math.log2(0.6 / 0.4875) + 0.5 * 0.375 * math.log2(0.375 / 0.4875)
               + 0.15 + 0.5 * 0.1 * math.log2(0.1 / 0.1125)
               + 0.5 * 0.125 * math.log2(0.125 / 0.1125) + 0.25)
    assert d.jsd == pytest.approx(by_hand, abs=1e-12)


def test_index_share_counts_only_moved_and_dropped():
    d = compare_vocab([("a", 5), ("b", 4), ("c", 3), ("d", 1)],
                      [("a", 9), ("b", 8), ("d", 7), ("c", 1)])
    assert d.index_changed_share == 2 / 4          # c 2->3, d 3->2; a, b stay
    assert d.top_k_index_changed_share == 2 / 4 and d.jsd is not None and d.jsd > 0


def test_identical_vocabularies_have_zero_drift():
    pairs = [("x", 3), ("y", 2), ("z", 1)]
    d = compare_vocab(pairs, pairs)
    assert (d.jsd, d.oov_share, d.index_changed_share, d.size_change) == (0.0, 0.0, 0.0, 0.0)
    assert d.top_added == [] and d.top_dropped == []


@pytest.mark.parametrize("seed", range(6))
def test_random_vocabularies_match_the_oracles(seed):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(60)] + ["a b", "日本", 'q"', "x,1]"]
    old = {w: rng.randint(1, 500) for w in rng.sample(words, 40)}
    new = {w: rng.randint(1, 500) for w in rng.sample(words, 45)}
    d = compare_vocab(_pairs(old), _pairs(new), top_k=10, top_n=3)
    assert d.jsd == pytest.approx(oracles.jsd(old, new), abs=1e-12)
    assert d.oov_share == pytest.approx(oracles.oov_share(old, new), abs=1e-15)
    assert d.index_changed_share == pytest.approx(oracles.index_changed(old, new))
    assert d.top_k_index_changed_share == pytest.approx(oracles.index_changed(old, new, 10))
    assert d.added == len(set(new) - set(old)) and d.dropped == len(set(old) - set(new))
    added = [t for t in oracles.vocab_order(new) if t not in old][:3]
    assert d.top_added == [(t, new[t]) for t in added]
    dropped = [t for t in oracles.vocab_order(old) if t not in new][:3]
    assert d.top_dropped == [(t, old[t]) for t in dropped]
    assert 0.0 <= d.jsd <= 1.0


def test_unlisted_values_bound_the_oov_share():
    # NEW saw 20 values; its sidecar lists 15 (5 dropped by top_k, unknown to the sidecar).
    d = compare_vocab([("a", 1)], [("a", 10), ("n", 5)], new_total=20)
    assert d.oov_share == 5 / 20 and d.oov_share_max == 10 / 20


def test_empty_vocabularies():
    d = compare_vocab([], [("a", 2)])
    assert d.jsd is None and d.oov_share == 1.0 and d.index_changed_share is None
    assert d.top_k_index_changed_share is None and d.size_change == 1.0
    d = compare_vocab([("a", 2)], [], new_total=0)
    assert d.jsd is None and d.oov_share is None and d.index_changed_share == 1.0
    d = compare_vocab([], [])
    assert d.jsd == 0.0 and d.oov_share is None


def test_disjoint_distributions_have_divergence_one():
    assert compare_vocab([("a", 3)], [("b", 7)]).jsd == 1.0


def test_duplicate_old_token_is_refused():
    with pytest.raises(ArtifactError, match=r"Feature 'f'.*'a' twice.*lines 1 and 2"):
        compare_vocab([("a", 2), ("a", 1)], [], name="f")


def test_stream_splits_lines_across_blocks(monkeypatch):
    rows = [["a", 3], ["x,1]\n", 2, 1], ["日本", 1]]
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    monkeypatch.setattr(sidecar_lines, "BLOCK_BYTES", 5)
    assert list(iter_pairs(io.BytesIO(data), name="f")) == [("a", 3), ("x,1]\n", 2),
                                                            ("日本", 1)]
    assert list(iter_pairs(io.BytesIO(data[:-1]), name="f"))[-1] == ("日本", 1)  # no final \n


@pytest.mark.parametrize("line", [b'["a"]', b'["a", -1]', b'{"a": 1}', b'["a", 1.5]', b"[1, 2]",
                                  b'["a", 1', b'["a", true]', b'["a", 1], ["b", 2]', b"1, 2"])
def test_malformed_line_is_an_artifact_error(line):
    with pytest.raises(ArtifactError, match=r"Feature 'f': line 2 of the counts sidecar"):
        list(iter_pairs(io.BytesIO(b'["ok", 1]\n' + line + b"\n"), name="f"))
