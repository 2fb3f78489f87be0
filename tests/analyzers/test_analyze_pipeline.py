"""End-to-end tests of `beam-prep analyze` on generated data in every input format.

Expected values are computed here independently (collections.Counter, numpy) from the same
rows the files were written from.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from beam_prep.errors import ArtifactError, InputError
from tests.artifact_diff import assert_same_artifacts

N = 3000
SPEC = """
features:
  - {name: country, kind: string, top_k: 5, min_count: 2}
  - {name: item, kind: integer, column: item_id}
  - {name: price, kind: numeric, num_buckets: 4}
  - {name: user, kind: hashed, num_bins: 16}
"""


def _rows(seed: int = 0) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    pool = ["US", "DE", "FR", "Ξένος", "a b", "日本", "x,y", 'q"uote', "rare1", "rare2"]
    weights = np.array([30, 20, 20, 10, 8, 5, 3, 2, 1, 1], dtype=float)
    country = list(rng.choice(pool, N, p=weights / weights.sum()))
    country[5] = "once"  # count 1: below min_count
    item = [int(v) for v in rng.integers(-20, 200, N) // 7]
    price = [float(np.float32(v)) for v in rng.lognormal(1.0, 1.0, N)]
    price[10] = None
    return {"country": country, "item_id": item, "price": price,
            "user": [f"u{i % 97}" for i in range(N)]}


def _expected_vocab(values, *, min_count=1, top_k=None):
    counts = collections.Counter(str(v) for v in values if v is not None)
    kept = [(t, c) for t, c in counts.items() if c >= min_count]
    kept.sort(key=lambda tc: (-tc[1], [-b for b in tc[0].encode()] + [1]))
    return [t for t, _ in (kept[:top_k] if top_k else kept)]


def _write(rows: dict[str, list], fmt: str, path: str) -> None:
    table = pa.table({"country": pa.array(rows["country"]), "item_id": pa.array(rows["item_id"]),
                      "price": pa.array(rows["price"], pa.float64()),
                      "user": pa.array(rows["user"])})
    if fmt == "parquet":
        pq.write_table(table, path, row_group_size=700)
    elif fmt == "csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, path)
    elif fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as f:
            for r in table.to_pylist():
                f.write(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n")
    else:
        import tensorflow as tf

        with tf.io.TFRecordWriter(path) as w:
            for r in table.to_pylist():
                ex = tf.train.Example()
                ex.features.feature["country"].bytes_list.value.append(r["country"].encode())
                ex.features.feature["item_id"].int64_list.value.append(r["item_id"])
                if r["price"] is not None:
                    ex.features.feature["price"].float_list.value.append(r["price"])
                ex.features.feature["user"].bytes_list.value.append(r["user"].encode())
                w.write(ex.SerializeToString())


@pytest.fixture(scope="module")
def rows():
    return _rows()


def _run(tmp_path, fmt, rows, *extra, name="out"):
    data = tmp_path / f"data.{fmt}"
    if not data.exists():
        _write(rows, fmt, str(data))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    out = tmp_path / name
    analyze.run(["--spec", str(spec), "--input", str(data), "--output", str(out),
                 "--parquet_rows_per_split", "1000", *extra])
    return Artifacts(str(out), verify=True), out


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet", "tfrecord"])
def test_every_format_gives_exact_vocabularies_and_statistics(tmp_path, rows, fmt):
    art, out = _run(tmp_path, fmt, rows)
    assert art.vocabulary("country") == _expected_vocab(rows["country"], min_count=2, top_k=5)
    assert art.vocabulary("item") == _expected_vocab(rows["item_id"])
    counts = collections.Counter(rows["item_id"])
    assert art.counts("item") == [(t, counts[int(t)]) for t in art.vocabulary("item")]
    prices = np.array([p for p in rows["price"] if p is not None])
    s = art.stats("price")
    assert s["count"] == prices.size and s["missing_count"] == 1
    assert s["mean"] == pytest.approx(prices.mean(), rel=1e-6)
    assert s["variance"] == pytest.approx(prices.var(), rel=1e-6)
    assert (s["min"], s["max"]) == (pytest.approx(prices.min()), pytest.approx(prices.max()))
    assert len(s["boundaries"]) == 3
    cstats = art.stats("country")
    assert cstats["dropped_min_count"] == {"tokens": 1, "count": 1}
    assert cstats["total_count"] == N and cstats["missing_count"] == 0
    assert art.stats("user") == {}
    assert art.manifest["input"]["rows_read"] == N
    assert art.manifest["input"]["rows_rejected"] == 0
    # The file Keras reads is exactly the token list, one per line.
    text = (out / "vocab" / "country.txt").read_text(encoding="utf-8")
    assert text == "".join(t + "\n" for t in art.vocabulary("country"))


def test_bad_rows_are_counted_kept_aside_and_the_run_fails_past_the_threshold(tmp_path, rows):
    data = tmp_path / "data.csv"
    _write(rows, "csv", str(data))
    with open(data, "ab") as f:
        f.write(b'"US",12,not_a_number,u1\n')
        f.write(b'"DE",3.5,1.0,u2\n')
        f.write(b'"FR",3,1.0\n')
        f.write(b'"\xff\xfe",3,1.0,u3\n')
    art, out = _run(tmp_path, "csv", rows, "--max_bad_fraction", "0.01")
    inp = art.manifest["input"]
    assert inp["rows_read"] == N + 4 and inp["rows_rejected"] == 4
    assert inp["rejected_by_reason"] == {"invalid_utf8": 1, "unparsable_number": 2,
                                         "wrong_column_count": 1}
    assert inp["rejected_files"] == ["rejected/rejected-00000-of-00001.jsonl"]
    rejected = [json.loads(x) for x in (out / inp["rejected_files"][0]).read_text()
                .splitlines()]
    assert [r["row"] for r in rejected] == [N + 1, N + 2, N + 3, N + 4]  # in row order
    assert art.vocabulary("country") == _expected_vocab(rows["country"], min_count=2, top_k=5)
    # The check runs once, on the driver, from the summed counts: one InputError, no manifest,
    # and the rejected rows stay in the run's staging folder, which the message names.
    with pytest.raises(InputError, match=rf"4 of {N + 4} rows .* more than max_bad_fraction="
                                         r"0.0001\. .* left as it was") as info:
        _run(tmp_path, "csv", rows, "--max_bad_fraction", "0.0001", name="strict")
    strict = tmp_path / "strict"
    assert not (strict / "manifest.json").exists()
    (staging,) = [p for p in strict.iterdir() if p.name.startswith("_staging-")]
    assert str(staging) in str(info.value)
    kept = (staging / "rejected" / "rejected-00000-of-00001.jsonl").read_text().splitlines()
    assert [json.loads(x)["row"] for x in kept] == [N + 1, N + 2, N + 3, N + 4]


def test_missing_column_fails_before_the_pipeline_with_names(tmp_path, rows):
    data = tmp_path / "data.csv"
    _write(rows, "csv", str(data))
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: age, kind: numeric, column: age_years}\n")
    with pytest.raises(InputError, match=r"'age_years' \(feature 'age'\) not found"):
        analyze.run(["--spec", str(spec), "--input", str(data), "--output",
                     str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()


def test_output_directory_is_not_overwritten_unless_asked(tmp_path, rows):
    _, out = _run(tmp_path, "csv", rows)
    with pytest.raises(ArtifactError, match="--overwrite"):
        _run(tmp_path, "csv", rows)
    art, _ = _run(tmp_path, "csv", rows, "--overwrite")
    assert art.vocabulary("item") == _expected_vocab(rows["item_id"])


def test_directory_without_manifest_is_incomplete(tmp_path):
    (tmp_path / "vocab").mkdir()
    with pytest.raises(ArtifactError, match="not a complete artifact directory"):
        Artifacts(str(tmp_path))


def test_empty_vocabulary_is_written_as_an_empty_file(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a,b\nx,1\ny,2\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: a, kind: string, min_count: 5}\n")
    analyze.run(["--spec", str(spec), "--input", str(data), "--output", str(tmp_path / "o")])
    art = Artifacts(str(tmp_path / "o"))
    assert art.vocabulary("a") == [] and (tmp_path / "o/vocab/a.txt").read_bytes() == b""
    assert art.stats("a")["vocabulary_size"] == 0
    assert art.stats("a")["dropped_min_count"] == {"tokens": 2, "count": 2}


def test_two_worker_processes_give_byte_identical_artifacts(tmp_path, rows):
    """The multi-process DirectRunner (the SDK harness Dataflow uses) must not change a byte."""
    _, single = _run(tmp_path, "parquet", rows, name="single")
    _, multi = _run(tmp_path, "parquet", rows, "--direct_running_mode=multi_processing",
                    "--direct_num_workers=2", name="multi")
    assert_same_artifacts(single, multi)


@pytest.mark.slow  # twin of test_dataflow_template.py (default suite time)
def test_dataflow_translation_dry_run(tmp_path, rows):
    """The whole job translates for Dataflow offline (no network): options, pickling, staging."""
    data = tmp_path / "data.csv"
    _write(rows, "csv", str(data))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.run(
        [sys.executable, "-m", "beam_prep.pipelines.analyze", "--spec", str(spec),
         "--input", str(data),
         "--output", str(tmp_path / "df_out"), "--runner=DataflowRunner",
         "--project=fake-project", "--region=us-central1",
         "--temp_location=gs://fake-bucket/tmp", "--dry_run=True"],
        capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_tokens_a_line_file_cannot_hold_are_excluded_and_counted(tmp_path):
    values = (["plain"] * 3 + ["two\nlines"] * 5 + ["para\u2029sep"] * 4 + [""] * 6
              + ["tab\tis fine"] * 2 + ["Ξ"] * 2 + ["a b"] * 2)
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"s": v}) + "\n" for v in values), encoding="utf-8")
    csv_data = tmp_path / "d.csv"
    with open(csv_data, "w", encoding="utf-8", newline="") as f:
        import csv

        writer = csv.writer(f, quoting=csv.QUOTE_ALL)  # "" is an empty string, not missing
        writer.writerow(["s"])
        writer.writerows([v] for v in values)
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: s, kind: string, top_k: 3}\n")
    for src in (data, csv_data):
        out = tmp_path / f"o_{src.suffix[1:]}"
        analyze.run(["--spec", str(spec), "--input", str(src), "--output", str(out)])
        art = Artifacts(str(out))
        # Ties (count 2) in reverse byte order: 'Ξ' (0xCE 0x9E) > 'tab…' > 'a b'; top_k=3.
        assert art.vocabulary("s") == ["plain", "Ξ", "tab\tis fine"], src
        stats = art.stats("s")
        assert stats["excluded_unwritable"] == {"tokens": 3, "count": 15}, src
        assert stats["dropped_top_k"] == {"tokens": 1, "count": 2}, src
        assert (out / "vocab" / "s.txt").read_text(encoding="utf-8").splitlines() == \
            art.vocabulary("s")


def test_spilling_every_table_to_files_changes_no_byte(tmp_path, rows):
    """Tables passed through _tmp/ files (as for huge vocabularies) give the same artifacts."""
    _, in_memory = _run(tmp_path, "parquet", rows, "--spill_rows", "100000000", name="mem")
    _, spilled = _run(tmp_path, "parquet", rows, "--spill_rows", "1", name="spilled")
    assert not (spilled / "_tmp").exists()
    files = sorted(p.relative_to(in_memory) for p in in_memory.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(spilled) for p in spilled.rglob("*") if p.is_file())
    for rel in files:
        assert (in_memory / rel).read_bytes() == (spilled / rel).read_bytes(), rel


# default suite time; tests/io/inputs/test_example_decoder.py compares the decoders
@pytest.mark.slow
def test_tfrecord_artifacts_do_not_depend_on_the_native_decoder(tmp_path, rows, monkeypatch):
    """Records the C decoder leaves to tfx-bsl (here: an unknown field in every 37th
    record) and a run without the C decoder give the same bytes as the fast path."""
    from beam_prep.io.inputs.example_decoder import native_available

    if not native_available():
        pytest.skip("the native decoder is not built")
    plain = tmp_path / "plain.tfrecord"
    _write(rows, "tfrecord", str(plain))
    import tensorflow as tf

    data = tmp_path / "data.tfrecord"
    with tf.io.TFRecordWriter(str(data)) as w:
        for i, rec in enumerate(tf.data.TFRecordDataset(str(plain)).as_numpy_iterator()):
            w.write(rec + b"\x78\x01" if i % 37 == 5 else rec)  # field 15 = 1: unknown
    native, _ = _run(tmp_path, "tfrecord", rows, name="native")
    monkeypatch.setenv("BEAM_PREP_NO_NATIVE", "1")
    _, reference = _run(tmp_path, "tfrecord", rows, name="reference")
    out = tmp_path / "native"
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(reference) for p in reference.rglob("*")
                           if p.is_file())
    for rel in files:
        assert (out / rel).read_bytes() == (reference / rel).read_bytes(), rel
    assert native.vocabulary("country") == _expected_vocab(rows["country"], min_count=2,
                                                            top_k=5)


def test_split_threads_change_no_byte_and_count_documents(tmp_path, rows):
    """Features of a batch processed by a thread pool give the artifacts of one thread."""
    rng = np.random.default_rng(3)
    words = ["alpha", "beta", "gamma", "delta", "Ωmega"]
    texts = [None if i % 11 == 0 else " ".join(rng.choice(words, 1 + i % 4))
             for i in range(N)]
    table = pa.table({"country": rows["country"], "item_id": rows["item_id"],
                      "price": pa.array(rows["price"], pa.float64()), "title": texts})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=500)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.replace("  - {name: user, kind: hashed, num_bins: 16}\n", "")
                    + "  - {name: title, kind: text, output_mode: tf_idf, ngrams: 2}\n"
                    + "  - {name: p2, kind: numeric, column: price, default_value: -1.0}\n")
    outs = []
    for threads in ("1", "4"):
        out = tmp_path / f"t{threads}"
        analyze.run(["--spec", str(spec), "--input", str(tmp_path / "d.parquet"),
                     "--output", str(out), "--batch_size", "200",
                     "--split_threads", threads])
        outs.append(out)
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*") if p.is_file())
    for rel in files:
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes(), rel
    art = Artifacts(str(outs[1]))
    assert art.stats("title")["document_count"] == sum(t is not None for t in texts)
    assert art.stats("p2")["count"] == N  # the missing price is filled with -1.0
