"""End-to-end tests of the make-elwc job (DirectRunner) read back with the tf.data reader."""

from __future__ import annotations

import glob
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf
from beam_prep.pipelines import make_elwc
from tensorflow_serving.apis import input_pb2

from beam_prep.errors import InputError
from beam_prep.ranking.feature_spec import ElwcFeatureSpec
from beam_prep.ranking.train.reader import MASK_KEY, make_dataset
from tests.sample_data import LIGHTGBM


def read_all(pattern, **kw):
    """Every list of the output as (features dict of numpy, labels) with padding removed."""
    out = []
    for f, lab in make_dataset(pattern, list_size=None, batch_size=16, **kw):
        mask = f[MASK_KEY].numpy()
        f = {k: v if isinstance(v, tf.RaggedTensor) else v.numpy() for k, v in f.items()}
        for b in range(lab.shape[0]):
            n = int(mask[b].sum())
            out.append(({k: v[b] for k, v in f.items()}, lab[b].numpy()[:n]))
    return out


def read_lists(directory):
    """Every list of an output straight from its protos (no ``make_dataset``: tracing the
    reader's parse of 300 features costs seconds a call): per ELWC, ``(features, labels)``
    with each example feature of ``feature_spec.json`` as a float32 array over the documents
    (0 where a document lacks it, as the reader fills it), each context feature as its
    values."""
    spec = ElwcFeatureSpec.load(os.path.join(directory, "feature_spec.json"))
    out = []
    for name in sorted(glob.glob(os.path.join(directory, "*.tfrecord"))):
        for record in tf.data.TFRecordDataset(name):
            elwc = input_pb2.ExampleListWithContext.FromString(record.numpy())
            feats = {}
            for key, feature in elwc.context.features.feature.items():
                kind = feature.WhichOneof("kind")
                feats[key] = list(getattr(feature, kind).value)
            docs = [d.features.feature for d in elwc.examples]
            for f in spec.example:
                feats[f.name] = np.array(
                    [d[f.name].float_list.value[0] if f.name in d else 0.0 for d in docs],
                    np.float32)
            labels = np.array([d[spec.label.name].float_list.value[0] for d in docs], np.float32)
            out.append((feats, labels))
    return out


def reference_groups():
    """Per query (in .query order): list of (label, {id: float32}) parsed line by line here."""
    with open(LIGHTGBM + "rank.train") as f:
        rows = []
        for line in f:
            tok = line.split()
            rows.append((float(tok[0]), {int(k): np.float32(float(v))
                                         for k, v in (t.split(":") for t in tok[1:])}))
    sizes = [int(x) for x in open(LIGHTGBM + "rank.train.query").read().split()]
    groups, start = [], 0
    for s in sizes:
        groups.append(rows[start:start + s])
        start += s
    return groups


def read_rejected(out):
    """Every rejected line of an output, its shards concatenated in name order."""
    names = sorted(glob.glob(os.path.join(out, "rejected", "rejected-?????-of-?????.jsonl")))
    assert names, f"no rejected shard in {out}"
    return [json.loads(x) for n in names for x in open(n, encoding="utf-8")]


def files_of(directory):
    out = {}
    for root, _, names in os.walk(directory):
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, directory)] = open(p, "rb").read()
    return out


LGB_ARGS = ["--input", LIGHTGBM + "rank.train", "--input_format", "lightgbm",
            "--query_id_feature", "qid", "--num_shards", "3",
            "--splits", "train:0.7,validation:0.3"]


@pytest.fixture(scope="module")
def lightgbm_out(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("lgb") / "elwc")
    assert make_elwc.main([*LGB_ARGS, "--output", out, "--no_report"]) == 0
    return out


def test_lightgbm_round_trip_is_exact(lightgbm_out):
    groups = reference_groups()
    lists = read_lists(lightgbm_out)
    assert len(lists) == 201 == len(groups)
    spec = ElwcFeatureSpec.load(os.path.join(lightgbm_out, "feature_spec.json"))
    all_ids = sorted({i for g in groups for _, feats in g for i in feats})
    assert [f.name for f in spec.example] == [f"f{i}" for i in all_ids]
    seen = set()
    for f, labels in lists:
        assert len(f["qid"]) == 1
        qid = f["qid"][0].decode()
        name, index = qid.split(":")
        assert name == "rank.train"
        g = groups[int(index)]
        seen.add(int(index))
        assert labels.tolist() == [lab for lab, _ in g]
        got = np.stack([f[f"f{i}"][:len(g)] for i in all_ids], axis=1)  # documents x ids
        want = np.array([[feats.get(i, np.float32(0)) for i in all_ids] for _, feats in g],
                        np.float32)
        np.testing.assert_array_equal(got, want, err_msg=qid)
    assert seen == set(range(201))
    stats = json.load(open(os.path.join(lightgbm_out, "stats.json")))
    assert stats["lists"] == 201 and stats["documents"] == 3005
    labels = [lab for g in groups for lab, _ in g]
    assert stats["label_histogram"] == {str(int(v)): labels.count(v) for v in sorted(set(labels))}
    assert sum(s["lists"] for s in stats["splits"].values()) == 201
    assert sorted(stats["output_files"]) == ["train", "validation"]
    assert len(stats["output_files"]["train"]) == 3


@pytest.mark.slow  # default suite time; test_make_elwc_scale.py checks the multi-process runner
def test_multi_process_runner_gives_identical_files(lightgbm_out, tmp_path):
    out = str(tmp_path / "mp")
    make_elwc.run([*LGB_ARGS, "--output", out, "--direct_running_mode=multi_processing",
                   "--direct_num_workers=2"])
    assert files_of(out) == files_of(lightgbm_out)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def test_split_across_files_rejected_lines_and_bad_fraction(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    _write(d / "a.txt", "1 qid:A 1:1\n0 qid:B 1:9\n0 qid:A 1:2\n2 qid:A 2:3\n")
    _write(d / "b.txt", "0 qid:A 1:4\nbroken line\n1 qid:A 1:5\n0 qid:A 1:6\n1 qid:A 1:7\n")
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(d / "*.txt"), "--output", out, "--max_list_size", "3",
                   "--query_id_feature", "qid", "--max_bad_fraction", "0.2", "--num_shards", "2"])
    lists = read_all(os.path.join(out, "*.tfrecord"))
    by_q = sorted((f["qid"].decode(), f["f1"][:len(lab)].tolist(), lab.tolist())
                  for f, lab in lists)
    # query A: 7 documents in input order (a.txt then b.txt) → balanced parts 3, 2, 2
    assert by_q == [("A", [1, 2, 0], [1, 0, 2]), ("A", [4, 5], [0, 1]), ("A", [6, 7], [0, 1]),
                    ("B", [9], [0])]
    rejected = read_rejected(out)
    assert rejected == [{"code": "label_not_a_number", "file": "b.txt", "line": 2,
                         "reason": "label 'broken' is not a number", "text": "broken line"}]
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert stats["events"] == {"queries_split": 1, "extra_lists_from_split": 2}
    assert stats["list_size_histogram"] == {"1": 1, "2": 2, "3": 1}
    assert stats["input"]["lines_rejected"] == 1 and stats["input"]["lines"] == 9

    # A failed run leaves the previous output whole; its report stays in its staging folder.
    before = {p: open(os.path.join(out, p), "rb").read() for p in os.listdir(out)
              if os.path.isfile(os.path.join(out, p))}
    with pytest.raises(InputError, match="1 of 9 input lines were rejected") as err:
        make_elwc.run(["--input", str(d / "*.txt"), "--output", out, "--overwrite",
                       "--max_bad_fraction", "0.1"])
    assert {p: open(os.path.join(out, p), "rb").read() for p in os.listdir(out)
            if os.path.isfile(os.path.join(out, p))} == before
    staging = [n for n in os.listdir(out) if n.startswith("_staging-")]
    assert len(staging) == 1 and staging[0] in str(err.value)
    failed = json.load(open(os.path.join(out, staging[0], "stats.json")))
    assert failed["status"] == "failed" and failed["input"]["lines_rejected"] == 1
    # A fresh folder that only ever saw a failed run holds no output: no shard, no stats.json.
    out2 = str(tmp_path / "out2")
    with pytest.raises(InputError, match="1 of 9 input lines were rejected"):
        make_elwc.run(["--input", str(d / "*.txt"), "--output", out2, "--max_bad_fraction", "0.1"])
    assert [n for n in os.listdir(out2) if not n.startswith("_staging-")] == []


ROWS = [  # qid, label, query text (context), doc text, score, tokens
    ("q2", 1, "red shoes", "shoe one", 0.5, ["a", "b"]),
    ("q1", 0, "blue hat", "hat one", 1.25, []),
    ("q2", 0, "red shoes", "shoe two", None, ["c"]),
    ("q1", 2, "blue hat", "hat two", -3.0, ["d", "e", "f"]),
]


def _table(with_lists):
    cols = {"qid": [r[0] for r in ROWS], "label": [r[1] for r in ROWS],
            "query": [r[2] for r in ROWS], "doc": [r[3] for r in ROWS],
            "score": [r[4] for r in ROWS]}
    if with_lists:
        cols["tokens"] = [r[5] for r in ROWS]
    return pa.table(cols)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_tabular_inputs_with_context_and_example_columns(tmp_path, fmt):
    d = tmp_path / "in"
    d.mkdir()
    table = _table(with_lists=fmt != "csv")
    if fmt == "csv":
        import pyarrow.csv as pacsv
        pacsv.write_csv(table, str(d / "x.csv"))
    elif fmt == "jsonl":
        _write(d / "x.jsonl", "".join(json.dumps(r) + "\n" for r in table.to_pylist()))
    else:
        pq.write_table(table, str(d / "x.parquet"), row_group_size=2)
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(d / "*"), "--input_format", fmt, "--output", out,
                   "--context_columns", "query", "--label_dtype", "int64"])
    spec = json.load(open(os.path.join(out, "feature_spec.json")))
    kinds = {f["name"]: (f["dtype"], f["shape"]) for f in spec["context"] + spec["example"]}
    assert kinds["query"] == ("string", []) and kinds["doc"] == ("string", [])
    assert kinds["score"] == ("float", [])
    assert spec["label"] == {"name": "relevance", "dtype": "int64", "padding": -1.0}
    lists = read_all(os.path.join(out, "*.tfrecord"))
    got = {}
    for f, lab in lists:
        n = len(lab)
        docs = [x.decode() for x in f["doc"][:n]]
        got[f["query"].decode()] = (docs, lab.tolist(), f["score"][:n].tolist(),
                                            f["tokens"][:n].to_list() if "tokens" in f else None)
    for q, text in (("q1", "blue hat"), ("q2", "red shoes")):
        rows = [r for r in ROWS if r[0] == q]
        docs, labels, scores, tokens = got[text]
        assert docs == [r[3] for r in rows]
        assert labels == [r[1] for r in rows]
        assert scores == [0.0 if r[4] is None else r[4] for r in rows]
        if fmt != "csv":
            assert tokens == [[t.encode() for t in r[5]] for r in rows]


def test_library_transform_in_test_pipeline(tmp_path):
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline
    from apache_beam.testing.util import assert_that, equal_to

    from beam_prep.ranking.data.options import ElwcOptions
    from beam_prep.ranking.data.transforms import ConvertToELWC, list_input_files

    _write(tmp_path / "a.txt", "1 qid:7 3:0.5\n0 qid:7 1:1\n2 qid:8 1:2\n")
    opts = ElwcOptions(input_format="letor")
    files = list_input_files([str(tmp_path / "a.txt")], opts)

    def summarize(kv):
        (split, shard), records = kv
        out = []
        for qid, part, data in records:
            elwc = input_pb2.ExampleListWithContext.FromString(data)
            out.append((qid, part, [
                (e.features.feature["relevance"].float_list.value[0],
                 e.features.feature["f1"].float_list.value[0],
                 e.features.feature["f3"].float_list.value[0]) for e in elwc.examples]))
        return (split, shard, out)

    with TestPipeline() as p:
        res = p | ConvertToELWC(files, opts)
        assert_that(res["lists"] | beam.Map(summarize), equal_to([
            ("train", 0, [("7", 0, [(1.0, 0.0, 0.5), (0.0, 1.0, 0.0)]),
                          ("8", 0, [(2.0, 2.0, 0.0)])])]), label="CheckLists")
        assert_that(res["counts"], equal_to([{"documents_read": 3, "files": 1, "lines": 3,
                                              "lines_rejected": 0,
                                              "rejected_by_reason": {}}]), label="CheckCounts")


def test_help_explains_every_option(capsys):
    parser = make_elwc.build_parser()
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            assert action.help and len(action.help) > 10, action.dest
    from beam_prep import cli
    with pytest.raises(SystemExit):
        cli.main(["make-elwc", "--help"])
    text = capsys.readouterr().out
    for opt in ("--max_list_size", "--list_policy", "--splits", "--num_shards", "--compression",
                "--max_bad_fraction", "--context_columns", "--label_dtype"):
        assert opt in text


def test_gzip_output_is_deterministic_and_readable(tmp_path):
    src = tmp_path / "in.txt"
    shutil.copy(LIGHTGBM + "rank.test", src)
    shutil.copy(LIGHTGBM + "rank.test.query", str(src) + ".query")
    outs = []
    for k in range(2):
        out = str(tmp_path / f"o{k}")
        make_elwc.run(["--input", str(src), "--input_format", "lightgbm", "--output", out,
                       "--compression", "gzip", "--num_features", "300"])
        outs.append(files_of(out))
    assert outs[0] == outs[1]
    assert list(k for k in outs[0] if k.endswith(".gz")) == ["train-00000-of-00001.tfrecord.gz"]
    lists = read_all(str(tmp_path / "o0" / "*.tfrecord.gz"))
    assert len(lists) == 50 and sum(len(lab) for _, lab in lists) == 768
    assert "f300" in lists[0][0]
    raw = [r.numpy() for r in tf.data.TFRecordDataset(
        str(tmp_path / "o0" / "train-00000-of-00001.tfrecord.gz"), "GZIP")]
    assert len(input_pb2.ExampleListWithContext.FromString(raw[0]).examples[0].features.feature
               ) == 301


def _messy_letor_text():
    """LETOR lines with comments, blank and CRLF lines, bad lines, queries spread over the whole
    file and no final newline."""
    rng = np.random.default_rng(5)
    lines = []
    for i in range(300):
        q = int(rng.integers(0, 25))
        ids = sorted(rng.choice(np.arange(1, 12), size=4, replace=False).tolist())
        feats = " ".join(f"{j}:{rng.random():.3f}" for j in ids)
        lines.append(f"{int(rng.integers(0, 3))} qid:q{q} {feats}" + (" # c" if i % 9 == 0 else ""))
        if i % 37 == 0:
            lines.append("")
        if i % 41 == 0:
            lines.append("not a line")
        if i % 11 == 0:
            lines[-1] += "\r"
    return "\n".join(lines)


def test_pieces_of_a_large_file_give_the_same_bytes(tmp_path):
    text = _messy_letor_text()
    src = tmp_path / "in.txt"
    src.write_text(text)
    args = ["--input", str(src), "--query_id_feature", "qid", "--num_shards", "2",
            "--max_list_size", "6", "--splits", "train:0.5,test:0.5", "--max_bad_fraction", "0.05"]
    whole, pieces = str(tmp_path / "whole"), str(tmp_path / "pieces")
    make_elwc.run([*args, "--output", whole, "--input_split_bytes", "0"])
    make_elwc.run([*args, "--output", pieces, "--input_split_bytes", "500"])
    assert len(text) // 500 >= 20
    assert files_of(pieces) == files_of(whole)
    physical = text.split("\n")
    rejected = read_rejected(pieces)
    assert [r["line"] for r in rejected] == [i + 1 for i, t in enumerate(physical)
                                             if t.startswith("not")]
    # every document of a query, in input order, with its label and first feature value
    want: dict[str, list[tuple[float, dict[int, np.float32]]]] = {}
    for t in physical:
        body = t.split("#")[0].split()
        if body and not t.startswith("not"):
            want.setdefault(body[1][4:], []).append(
                (float(body[0]), {int(k): np.float32(v) for k, v in
                                  (x.split(":") for x in body[2:]) if float(v) != 0}))
    got: dict[str, list[tuple[float, dict[int, np.float32]]]] = {}
    for f, lab in read_all(os.path.join(pieces, "*.tfrecord")):
        for i, label in enumerate(lab.tolist()):
            got.setdefault(f["qid"].decode(), []).append(
                (label, {j: f[f"f{j}"][i] for j in range(1, 12) if f[f"f{j}"][i] != 0}))
    assert got == want


def test_queries_left_without_documents_are_not_counted(tmp_path):
    # lightgbm: an empty group (size 0); letor: the only line of query Z is rejected
    (tmp_path / "l.txt").write_text("1 1:1\n0 1:2\n2 1:3\n")
    (tmp_path / "l.txt.query").write_text("2\n0\n1\n")
    (tmp_path / "t.txt").write_text("1 qid:A 1:1\n0 qid:Z 9:1\n0 qid:A 2:1\n")
    cases = (("l.txt", "lightgbm", []), ("t.txt", "letor", ["--num_features", "3"]))
    for name, fmt, extra in cases:
        out = str(tmp_path / f"out_{fmt}")
        make_elwc.run(["--input", str(tmp_path / name), "--input_format", fmt, "--output", out,
                       "--max_bad_fraction", "0.5", *extra])
        stats = json.load(open(os.path.join(out, "stats.json")))
        assert stats["queries"] == stats["lists"] == 2 - (fmt == "letor"), fmt
        assert stats["events"] == {}, fmt


def test_lightgbm_pieces_cut_at_group_starts_give_the_same_bytes(tmp_path):
    from beam_prep.ranking.data.options import ElwcOptions
    from beam_prep.ranking.data.sources import plan_pieces

    lines = open(LIGHTGBM + "rank.test").read().split("\n")[:-1]
    sizes = [int(x) for x in open(LIGHTGBM + "rank.test.query").read().split()]
    lines[5] = "x" + lines[5]  # a rejected line still counts in its group
    out_lines = []
    for i, line in enumerate(lines):  # blank, comment and CRLF lines do not count
        out_lines.append(line + ("\r" if i % 7 == 0 else ""))
        if i % 50 == 0:
            out_lines += ["", "  # comment", "\r"]
    src = tmp_path / "t.txt"
    src.write_text("\n".join(out_lines) + "\n")
    (tmp_path / "t.txt.query").write_text("\n".join(map(str, sizes)) + "\n")
    pieces = plan_pieces(str(src), ElwcOptions(input_format="lightgbm"), 3000)
    assert len(pieces) > 20
    assert [p[3] for p in pieces] == sorted({p[3] for p in pieces})
    assert pieces[0][3] == 0 and pieces[-1][4] == len(sizes)
    args = ["--input", str(src), "--input_format", "lightgbm", "--query_id_feature", "qid",
            "--num_shards", "2", "--max_bad_fraction", "0.01"]
    whole, split = str(tmp_path / "whole"), str(tmp_path / "split")
    make_elwc.run([*args, "--output", whole, "--input_split_bytes", "0"])
    make_elwc.run([*args, "--output", split, "--input_split_bytes", "3000"])
    assert files_of(split) == files_of(whole)
    rejected = read_rejected(split)
    assert [r["line"] for r in rejected] == [out_lines.index(lines[5]) + 1]
    lists = read_lists(split)
    assert sorted(len(lab) for _, lab in lists) == sorted(
        s - (g == 0) for g, s in enumerate(sizes) if s - (g == 0) > 0)


def test_jsonl_bad_lines_are_rejected_and_empty_files_read_as_empty(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    _write(d / "part-0.jsonl", "")  # an empty part file
    _write(d / "part-1.jsonl",
           '{"qid": "q1", "label": 1, "doc": "a", "score": 0.5}\n'
           '{"qid": "q1", "label": 0, "doc": "b", "score": 1}\n'
           '{"qid": "q1", "label": 2, "doc": \n'
           '{"qid": "q2", "label": 1, "doc": "d", "score": "high"}\n'
           '{"qid": "q2", "label": 0, "doc": "e", "score": 2.0}\n')
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(d / "*"), "--input_format", "jsonl", "--output", out,
                   "--max_bad_fraction", "0.5", "--query_id_feature", "qid"])
    rejected = read_rejected(out)
    assert [(r["file"], r["line"]) for r in rejected] == [("part-1.jsonl", 3),
                                                          ("part-1.jsonl", 4)]
    assert rejected[0]["reason"].startswith("malformed JSON: ")
    assert rejected[1]["reason"] == ("column 'score' holds a string here but a number on 3 "
                                  "other line(s) (the first: line 1)")
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert stats["input"]["lines"] == 5 and stats["input"]["lines_rejected"] == 2
    got = sorted((f["qid"].decode(), [x.decode() for x in f["doc"][:len(lab)]],
                  f["score"][:len(lab)].tolist(), lab.tolist())
                 for f, lab in read_all(os.path.join(out, "*.tfrecord")))
    assert got == [("q1", ["a", "b"], [0.5, 1.0], [1.0, 0.0]), ("q2", ["e"], [2.0], [0.0])]


def test_parquet_uint64_beyond_int64_is_rejected_and_timestamps_name_the_file(tmp_path):
    import datetime

    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"qid": ["q1", "q1", "q2"], "label": [1, 0, 1],
                             "n": pa.array([7, 2**64 - 1, 9], pa.uint64())}), str(d / "u.parquet"))
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(d / "u.parquet"), "--input_format", "parquet", "--output", out,
                   "--max_bad_fraction", "0.5", "--query_id_feature", "qid"])
    rejected = read_rejected(out)
    assert [(r["line"], r["reason"]) for r in rejected] == [
        (2, f"column 'n' holds {2**64 - 1}, beyond int64")]
    got = sorted((f["qid"].decode(), f["n"][:len(lab)].tolist())
                 for f, lab in read_all(os.path.join(out, "*.tfrecord")))
    assert got == [("q1", [7]), ("q2", [9])]

    pq.write_table(pa.table({"qid": ["q1"], "label": [1], "t": pa.array(
        [datetime.datetime(2024, 1, 2)], pa.timestamp("ms"))}), str(d / "t.parquet"))
    with pytest.raises(InputError, match=r"column 't' of 't.parquet' has type timestamp\[ms\]"):
        make_elwc.run(["--input", str(d / "t.parquet"), "--input_format", "parquet",
                       "--output", str(tmp_path / "out2")])


_BAD_VALUES = {"qid": ["q1", "q1", "q1", "q2", "q2", "q2"],
               "label": [1.0, -1.0, float("inf"), 2.0, 0.0, float("nan")],
               "x": [0.5, 0.25, 0.125, 1e39, 1.0, 2.0]}


def _write_bad_values(path, fmt):
    rows = list(zip(*_BAD_VALUES.values()))
    if fmt == "csv":
        _write(path, "qid,label,x\n" + "".join(f"{q},{y!r},{x!r}\n" for q, y, x in rows))
    elif fmt == "jsonl":  # Python's json writes the extensions Infinity / NaN
        _write(path, "".join(json.dumps({"qid": q, "label": y, "x": x}) + "\n"
                             for q, y, x in rows))
    else:
        pq.write_table(pa.table(_BAD_VALUES), str(path))


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_tabular_labels_and_values_follow_the_letor_rules(tmp_path, fmt):
    """Label -1 (the reader's padding label), inf and NaN, and a feature value beyond float32
    (1e39 would be written as inf) are rejected rows, each named, as LETOR rejects them."""
    d = tmp_path / "in"
    d.mkdir()
    _write_bad_values(d / f"t.{fmt}", fmt)
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(d / f"t.{fmt}"), "--input_format", fmt, "--output", out,
                   "--max_bad_fraction", "0.9", "--query_id_feature", "qid"])
    rejected = read_rejected(out)
    assert [r["line"] for r in rejected] == [2, 3, 4, 6]
    reasons = [r["reason"] for r in rejected]
    assert reasons[0].startswith("label -1.0 is negative; labels must be >= 0")
    assert reasons[1].startswith("label inf is beyond the float32 range")
    assert reasons[2].startswith("feature 'x' value 1e+39 is beyond the float32 range")
    # pyarrow's CSV reader reads a `nan` cell as null: a missing label, also not a number.
    assert reasons[3] == ("label None is not a number" if fmt == "csv"
                          else "label nan is not a number")
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert stats["input"]["lines"] == 6 and stats["input"]["lines_rejected"] == 4
    got = sorted((f["qid"].decode(), f["x"][:len(lab)].tolist(), lab.tolist())
                 for f, lab in read_all(os.path.join(out, "*.tfrecord")))
    assert got == [("q1", [0.5], [1.0]), ("q2", [1.0], [0.0])]


def test_letor_and_tabular_share_the_value_rules(tmp_path):
    """The same -1 label and 1e39 value in LETOR text give the same reasons."""
    d = tmp_path / "in"
    d.mkdir()
    _write(d / "r.txt", "1 qid:1 1:0.5\n-1 qid:1 1:0.25\n2 qid:2 1:1e39\n0 qid:2 1:1\n")
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(d / "r.txt"), "--input_format", "letor", "--output", out,
                   "--max_bad_fraction", "0.9"])
    reasons = [(r["line"], r["reason"]) for r in read_rejected(out)]
    assert [line for line, _ in reasons] == [2, 3]
    assert reasons[0][1].startswith("label -1.0 is negative; labels must be >= 0")
    assert reasons[1][1].startswith("feature 1 value 1e+39 is beyond the float32 range")
