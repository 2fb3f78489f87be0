"""make-elwc at scale: automatic shard count, rejected lines numbered in linear time and written
in deterministic range shards (never through a side input)."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator, Mapping

import numpy as np
import pytest
from beam_prep.pipelines import make_elwc

from beam_prep.errors import InputError
from beam_prep.ranking.data.options import ElwcOptions
from beam_prep.ranking.data.rejected import LineIndex, number_rejected, rejected_shard
from beam_prep.ranking.data.sharding import (
    BYTES_PER_SHARD,
    MAX_AUTO_SHARDS,
    auto_num_shards,
    estimated_input_bytes,
    resolve_num_shards,
)
from beam_prep.ranking.data.transforms import MetaCombineFn, list_input_files

MIB = 1 << 20


# --- automatic shard count -------------------------------------------------------------------

@pytest.mark.parametrize("size, shards", [
    (0, 1), (1, 1), (128 * MIB, 1), (128 * MIB + 1, 2), (1000 * MIB, 8),  # ceil(1000/128) = 8
    (2 << 40, 1024), (10 << 50, 1024)])
def test_auto_num_shards_is_one_per_128_mib_bounded(size, shards):
    assert BYTES_PER_SHARD == 128 * MIB and MAX_AUTO_SHARDS == 1024
    assert auto_num_shards(size) == shards


def _sparse(path, size):
    with open(path, "wb") as f:  # a sparse file: its size without writing the bytes
        f.truncate(size)


def test_auto_shards_of_large_synthetic_inputs_count_gzip_files_five_times(tmp_path):
    _sparse(tmp_path / "a.txt", 300 * MIB)
    _sparse(tmp_path / "b.txt", 200 * MIB)
    _sparse(tmp_path / "c.txt.gz", 100 * MIB)
    (tmp_path / "a.txt.query").write_text("1\n")  # LETOR input: .query files are not data
    patterns = [str(tmp_path / "*")]
    opts = ElwcOptions(num_shards=None)
    files = list_input_files(patterns, opts)
    assert [rel for _, _, rel in files] == ["a.txt", "b.txt", "c.txt.gz"]
    total = estimated_input_bytes(patterns, [p for _, p, _ in files])
    assert total == (300 + 200 + 5 * 100) * MIB  # gzip: 5x (measured 4.7x on LETOR)
    assert resolve_num_shards(opts, patterns, files).num_shards == 8  # ceil(1000 / 128)
    # deterministic: the same input gives the same count; an explicit count is kept
    assert resolve_num_shards(opts, patterns, files) == resolve_num_shards(opts, patterns, files)
    assert resolve_num_shards(ElwcOptions(num_shards=3), patterns, files).num_shards == 3
    os.remove(tmp_path / "b.txt")
    with pytest.raises(InputError, match="b.txt' disappeared"):
        estimated_input_bytes(patterns, [p for _, p, _ in files])


def test_transforms_refuse_an_unresolved_shard_count():
    from beam_prep.errors import SpecError
    from beam_prep.ranking.data.transforms import ConvertToELWC, WriteELWC

    with pytest.raises(SpecError, match="num_shards=None"):
        ConvertToELWC([(0, "a", "a")], ElwcOptions(num_shards=None))
    with pytest.raises(SpecError, match="num_shards=None"):
        WriteELWC("/tmp/x", ElwcOptions(num_shards=None))


def test_small_input_without_num_shards_gets_one_shard(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("1 qid:a 1:1\n0 qid:b 1:2\nbad\n")
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(src), "--output", out, "--max_bad_fraction", "0.5"])
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert stats["policy"]["num_shards"] == 1
    assert stats["output_files"] == {"train": ["train-00000-of-00001.tfrecord"]}
    assert stats["rejected_files"] == ["rejected/rejected-00000-of-00001.jsonl"]
    assert sorted(os.listdir(os.path.join(out, "rejected"))) == ["rejected-00000-of-00001.jsonl"]


# --- numbering --------------------------------------------------------------------------------

class CountingMapping(Mapping):
    """A read-only mapping that counts how many entries are visited."""

    def __init__(self, data):
        self.data, self.visits = dict(data), 0

    def __getitem__(self, key):
        self.visits += 1
        return self.data[key]

    def __iter__(self) -> Iterator:
        for k in self.data:
            self.visits += 1
            yield k

    def __len__(self):
        return len(self.data)


def test_numbering_200k_rejected_lines_visits_each_piece_a_constant_number_of_times():
    rng = np.random.default_rng(0)
    files, pieces_per_file = 50, 400  # 20,000 pieces
    sizes = rng.integers(20, 40, size=(files, pieces_per_file))
    piece_lines = CountingMapping({(f, p): int(sizes[f, p]) for f in range(files)
                                   for p in range(pieces_per_file)})
    index = LineIndex.from_piece_lines(piece_lines)
    # one sort of the pieces: each entry visited a bounded number of times (the old numbering
    # summed every piece again for every rejected line: 200k x 20k visits)
    assert piece_lines.visits <= 2 * len(piece_lines)
    # independent oracle: line offsets by numpy cumulative sums
    in_file = np.cumsum(sizes, axis=1) - sizes
    overall = (np.cumsum(sizes.ravel()) - sizes.ravel()).reshape(sizes.shape)
    total = int(sizes.sum())
    assert index.total_lines == total
    keys = [(f, p) for f in range(files) for p in range(pieces_per_file)]
    picked = rng.choice(len(keys), size=200_000)  # 200k rejected lines, ~10 per piece
    fractions = rng.random(200_000).tolist()
    size_of, in_file_of, overall_of = sizes.tolist(), in_file.tolist(), overall.tolist()
    by_piece: dict[tuple[int, int], list[dict]] = {}
    for k, u in zip(picked.tolist(), fractions):
        f, p = keys[k]
        line = 1 + int(u * size_of[f][p])
        by_piece.setdefault((f, p), []).append({"file": f"f{f}", "line": line, "reason": "r",
                                                "text": "t"})
    shards, seen = 4, 0
    for (f, p), rows in by_piece.items():
        got = []
        for shard, numbered in number_rejected((f, p), rows, index, shards).items():
            fi, line, text = numbered[0]  # spot-check the JSON
            assert json.loads(text)["line"] == line and fi == f
            for _, line, _ in numbered:
                position = overall_of[f][p] + (line - in_file_of[f][p]) - 1
                assert shard == position * shards // total
                got.append(line)
        assert sorted(got) == sorted(in_file_of[f][p] + r["line"] for r in rows)
        seen += len(got)
    assert seen == 200_000


def test_meta_combine_fn_adds_20k_pieces_in_linear_time():
    fn = MetaCombineFn()
    acc = fn.create_accumulator()
    for p in range(20_000):  # the old add_input copied every piece seen so far: 2e8 copies
        acc = fn.add_input(acc, {"counts": {"lines": 3}, "layout": {},
                                 "piece_lines": {(p % 7, p): 3}})
    out = fn.extract_output(acc)
    assert out["counts"] == {"lines": 60_000} and out["line_index"].total_lines == 60_000
    # pieces are numbered within their file: file 0 holds pieces 0, 7, 14, ...
    assert out["line_index"].offsets[(0, 14)] == (6, 6)
    assert out["line_index"].offsets[(1, 1)] == (0, 3 * len(range(0, 20_000, 7)))


def test_rejected_shard_is_a_monotone_range_partition():
    total, shards = 1000, 7
    got = [rejected_shard(g, total, shards) for g in range(total)]
    assert got == sorted(got) and set(got) == set(range(shards))
    counts = np.bincount(got)
    assert counts.max() - counts.min() <= 1
    assert rejected_shard(0, 0, 3) == 0


# --- end to end: rejected shards --------------------------------------------------------------

def _input_with_rejects(tmp_path):
    """Two LETOR files; every 7th line of the first and every 5th of the second is malformed."""
    d = tmp_path / "in"
    d.mkdir()
    texts = {}
    for name, every, n in (("a.txt", 7, 400), ("b.txt", 5, 300)):
        lines = [f"bad line {name} {i}" if i % every == every - 1 else
                 f"{i % 3} qid:{name[0]}{i // 6} 1:{i}.5 3:{i % 4}" for i in range(n)]
        texts[name] = lines
        (d / name).write_text("\n".join(lines) + "\n")
    return d, texts


def _shards(out):
    rej = os.path.join(out, "rejected")
    return {n: [json.loads(x) for x in open(os.path.join(rej, n), encoding="utf-8")]
            for n in sorted(os.listdir(rej))}


def test_rejected_lines_are_range_sharded_sorted_and_independent_of_pieces(tmp_path):
    d, texts = _input_with_rejects(tmp_path)
    base = ["--input", str(d / "*.txt"), "--num_shards", "3", "--max_bad_fraction", "0.3"]
    whole, pieces = str(tmp_path / "whole"), str(tmp_path / "pieces")
    make_elwc.run([*base, "--output", whole, "--input_split_bytes", "0"])
    make_elwc.run([*base, "--output", pieces, "--input_split_bytes", "700"])
    shards = _shards(pieces)
    assert list(shards) == [f"rejected-0000{i}-of-00003.jsonl" for i in range(3)]
    assert shards == _shards(whole)
    for name in shards:  # byte-identical, not only equal records
        assert open(os.path.join(pieces, "rejected", name), "rb").read() == \
            open(os.path.join(whole, "rejected", name), "rb").read()
    # oracle: every malformed line by (file, line), shard from its position in the whole input
    total = sum(len(t) for t in texts.values())
    want: list[list[tuple[str, int, str]]] = [[], [], []]
    position = 0
    for name in sorted(texts):
        for i, line in enumerate(texts[name]):
            if line.startswith("bad"):
                want[position * 3 // total].append((name, i + 1, line))
            position += 1
    got = [[(r["file"], r["line"], r["text"]) for r in rows] for rows in shards.values()]
    assert got == want and all(want)
    assert all(set(r) == {"code", "file", "line", "reason", "text"} for rows in shards.values()
               for r in rows)
    stats = json.load(open(os.path.join(pieces, "stats.json")))
    assert stats["rejected_files"] == [f"rejected/{n}" for n in shards]
    assert stats["input"]["lines_rejected"] == sum(map(len, want)) == 57 + 60


def test_too_many_rejects_fail_in_the_launcher_with_sharded_report(tmp_path):
    d, texts = _input_with_rejects(tmp_path)
    out = str(tmp_path / "out")
    with pytest.raises(InputError, match=r"117 of 700 input lines were rejected .*"
                                         r"rejected/rejected-\?\?\?\?\?-of-\?\?\?\?\?\.jsonl"
                       ) as err:
        make_elwc.run(["--input", str(d / "*.txt"), "--num_shards", "2", "--output", out])
    staging = str(err.value).split(" are in ")[1].split(";")[0]
    shards = _shards(staging)
    assert list(shards) == ["rejected-00000-of-00002.jsonl", "rejected-00001-of-00002.jsonl"]
    assert sum(map(len, shards.values())) == 117
    assert not any(n.endswith(".tfrecord") for n in os.listdir(staging))


def test_gzip_input_counts_and_numbers_like_plain_text(tmp_path):
    d, texts = _input_with_rejects(tmp_path)
    z = tmp_path / "z"
    z.mkdir()
    for name, lines in texts.items():
        with gzip.open(z / (name + ".gz"), "wt") as f:
            f.write("\n".join(lines) + "\n")
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(z / "*.gz"), "--num_shards", "2", "--output", out,
                   "--max_bad_fraction", "0.3"])
    rows = [r for rs in _shards(out).values() for r in rs]
    assert [(r["file"], r["line"]) for r in rows] == [
        (name + ".gz", i + 1) for name in sorted(texts) for i, line in enumerate(texts[name])
        if line.startswith("bad")]


def test_multi_process_runner_gives_identical_rejected_shards(tmp_path):
    """Extends test_make_elwc's determinism test to rejected shards: in-process vs 2 workers."""
    d, _ = _input_with_rejects(tmp_path)
    base = ["--input", str(d / "*.txt"), "--num_shards", "3", "--max_bad_fraction", "0.3",
            "--input_split_bytes", "900"]
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    make_elwc.run([*base, "--output", one])
    make_elwc.run([*base, "--output", two, "--direct_running_mode=multi_processing",
                   "--direct_num_workers=2"])

    def files_of(root):
        return {os.path.relpath(os.path.join(r, n), root): open(os.path.join(r, n), "rb").read()
                for r, _, names in os.walk(root) for n in names}

    got = files_of(two)
    assert got == files_of(one)
    assert sorted(n for n in got if n.startswith("rejected")) == [
        f"rejected/rejected-0000{i}-of-00003.jsonl" for i in range(3)]
    assert all(got[f"rejected/rejected-0000{i}-of-00003.jsonl"] for i in range(3))
