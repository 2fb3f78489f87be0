"""Per-split vocabulary accumulation in bounded memory (issue 13 item 12).

Oracles are plain Python: ``collections.Counter`` over the tokens, and for text the
n-grams built with ``zip`` on ``str.split`` words.
"""

from __future__ import annotations

import collections
import random

import pyarrow as pa
import pytest

from beam_prep.analyzers import split_fn
from beam_prep.analyzers import vocab as voc
from beam_prep.analyzers.spill import SpillRef, materialize
from beam_prep.analyzers.vocab.split import SplitVocabulary
from beam_prep.io.inputs.readers import Split
from beam_prep.spec import Spec


def _totals(items) -> dict[str, tuple[int, int]]:
    """Sums every emitted element (as the keyed combine does), checking partitions."""
    out: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for (_, part), item in items:
        table = materialize(item)
        tokens = table.column("token").to_pylist()
        expected = voc.stable_partition(pa.array(tokens, pa.large_string()), 4).tolist()
        assert expected == [part] * len(tokens)
        for t, c, d in zip(tokens, table.column("count").to_pylist(),
                           table.column("df").to_pylist()):
            out[t][0] += c
            out[t][1] += d
    return {t: (c, d) for t, (c, d) in out.items()}


def _random_batches(seed: int, n_batches: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[f"w{int(rng.paretovariate(0.7)) % 5000}" for _ in range(rng.randrange(0, 400))]
            for _ in range(n_batches)]


@pytest.mark.parametrize("memory_rows", [1, 7, 100, 1 << 20])
@pytest.mark.parametrize("spill_dir", [False, True])
def test_counts_are_exact_whatever_is_spilled(tmp_path, memory_rows, spill_dir):
    batches = _random_batches(memory_rows, 30)
    acc = SplitVocabulary("f", num_partitions=4, file_stem="s", spill_rows=50,
                          spill_dir=str(tmp_path) if spill_dir else None,
                          memory_rows=memory_rows)
    for i, batch in enumerate(batches):
        if i % 2:
            acc.add_values(pa.array(batch + [None], pa.string()))
        else:
            acc.add_table(voc.count_values(pa.array(batch, pa.string())))
    got = _totals(acc.result())
    expected = collections.Counter(t for b in batches for t in b)
    assert got == {t: (c, 0) for t, c in expected.items()}
    if spill_dir and memory_rows < 100:
        assert acc.spilled_runs > 1


def test_rows_held_in_memory_stay_bounded_while_the_vocabulary_grows(tmp_path):
    # Every batch brings new tokens: the vocabulary grows with the rows, memory must not.
    acc = SplitVocabulary("f", num_partitions=4, spill_dir=str(tmp_path), file_stem="s",
                          memory_rows=1000)
    peak = 0
    for b in range(40):
        acc.add_table(voc.count_values(pa.array([f"t{b}-{i}" for i in range(300)])))
        peak = max(peak, acc.rows_in_memory)
    items = acc.result()
    assert peak < 2 * 1000 + 300  # the documented bound, against 12,000 distinct tokens
    assert sum(materialize(x).num_rows for _, x in items) == 12_000
    assert all(isinstance(x, SpillRef) for _, x in items)


def test_spill_files_are_named_from_the_split_and_run(tmp_path):
    def run() -> list[str]:
        acc = SplitVocabulary("feat", num_partitions=2, spill_dir=str(tmp_path),
                              file_stem="abc", memory_rows=5)
        for b in range(3):
            acc.add_table(voc.count_values(pa.array([f"{b}{i}" for i in range(6)])))
        return sorted(x.path for _, x in acc.result())

    first = run()
    assert first == run()
    assert {p.rsplit("/", 1)[1] for p in first} == {
        "abc-r0000.arrow", "abc-r0001.arrow", "abc-r0002.arrow"}
    assert all(f"{tmp_path}/counts/feat/p00" in p for p in first)


def _oracle(texts: list[str | None]) -> dict[str, tuple[int, int]]:
    """Counts and document frequencies of lowercased words and bigrams, in plain Python."""
    counts: collections.Counter = collections.Counter()
    docs: collections.Counter = collections.Counter()
    for text in texts:
        if text is None:
            continue
        words = text.lower().split()
        grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
        counts.update(grams)
        docs.update(set(grams))
    return {t: (counts[t], docs[t]) for t in counts}


@pytest.mark.parametrize("chunk_bytes", [1, 64, 1 << 22])
def test_split_fn_text_tf_idf_counts_in_chunks_and_runs_match_an_oracle(
        tmp_path, monkeypatch, chunk_bytes):
    rng = random.Random(chunk_bytes)
    words = ["Sky", "sea", "sun", "Moon", "star", "rain", "wind", "sea"]
    texts = [" ".join(rng.choice(words) + str(rng.randrange(9)) for _ in range(
        rng.randrange(0, 12))) or None for _ in range(300)]
    path = tmp_path / "t.csv"
    path.write_text("id,t\n" + "".join(f"{i},{t or ''}\n" for i, t in enumerate(texts)))
    monkeypatch.setattr(split_fn, "TEXT_CHUNK_BYTES", chunk_bytes)
    spec = Spec.from_dict({"version": 1, "features": [
        {"name": "t", "kind": "text", "ngrams": 2, "output_mode": "tf_idf",
         "standardize": "lower", "split": "whitespace"}]})
    fn = split_fn.AnalyzeSplitFn(spec.to_dict(), batch_size=64, num_partitions=4,
                                 temp_dir=str(tmp_path / "tmp"), memory_rows=200)
    fn.setup()
    outputs = list(fn.process(Split(str(path), "csv")))
    vocab = [o for o in outputs if not hasattr(o, "tag")]
    meta = next(o.value for o in outputs if getattr(o, "tag", None) == split_fn.META)
    assert _totals(vocab) == _oracle(texts)
    assert meta["documents"]["t"] == sum(t is not None for t in texts)
    assert len({x.path.rsplit("/", 1)[1] for _, x in vocab}) > 1  # several runs


def test_text_ranges_cover_every_row_once_within_the_byte_limit():
    texts = pa.array(["ab", None, "", "cdef", "g", "hijklmno", "p"])
    ranges = split_fn.text_ranges(texts, 4)
    chunks = [texts.slice(start, end - start) for start, end in ranges]
    assert [start for start, _ in ranges[1:]] == [end for _, end in ranges[:-1]]
    assert sum((c.to_pylist() for c in chunks), []) == texts.to_pylist()
    for c in chunks:
        size = sum(len(t or "") for t in c.to_pylist())
        assert size <= 4 or len(c) == 1
    assert split_fn.text_ranges(pa.array([], pa.string()), 4) == []
