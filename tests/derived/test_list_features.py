"""List features end to end: Parquet list columns and split() -> analyze -> generate -> outputs.

The oracle is plain Python over the rows and the vocabulary files the analysis wrote: a
list lookup maps padding to 0, OOV to 1 and the token at line ``k`` of the vocabulary file
to ``2 + k`` (one OOV slot); a hashed list value to ``to_hash_bucket_fast(v, bins) + 1``.
Generated module and runtime twin must agree on every output, in tf.data (ragged and
sparse batches, tf.Example) and in an exported SavedModel served without the artifacts.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from beam_prep.pipelines import analyze  # noqa: E402

from beam_prep import Artifacts  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.codegen.runtime import layers_from_artifacts  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.copied_source import assert_copied  # noqa: E402

SPEC = """
features:
  - {name: tags, kind: string, shape: list, max_values: 3}
  - {name: tags_ragged, kind: string, column: tags, shape: list}
  - {name: tags_multi, kind: string, column: tags, shape: list, output_mode: multi_hot}
  - {name: tags_count, kind: string, column: tags, shape: list, output_mode: count,
     min_count: 2}
  - {name: ids, kind: integer, shape: list, max_values: 2}
  - {name: ids_count, kind: integer, column: ids, shape: list, output_mode: count}
  - {name: tag_hash, kind: hashed, column: tags, shape: list, num_bins: 8, max_values: 4}
  - {name: tag_hash_multi, kind: hashed, column: tags, shape: list, num_bins: 8,
     output_mode: multi_hot}
  - {name: split_tags, kind: string, expr: "split(tag_text, '|')", max_values: 4}
  - {name: split_count, kind: string, expr: "split(lower(tag_text), '|')", output_mode: count}
  - {name: price, kind: numeric}
"""
TAGS = [["b", "a", "b", "c"], [], None, ["a"], ["c", "zz", None, "a", "b"], ["a", "a"],
        ["b", "c", "a", "b", "c"]]
IDS = [[7, 3], [3, 3, 3], [], None, [9], [7, 7, 1], [1, 9, 3]]
TAG_TEXT = ["x|Y||x", "", "y|", None, "|z", "X", "a|b|c|d|e"]
PRICE = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    root = tmp_path_factory.mktemp("lists")
    table = pa.table({
        "tags": pa.array(TAGS, pa.list_(pa.string())),
        "ids": pa.array(IDS, pa.list_(pa.int64())),
        "tag_text": TAG_TEXT,
        "price": PRICE,
    })
    pq.write_table(table, str(root / "data.parquet"))
    (root / "spec.yaml").write_text(SPEC)
    out = root / "artifacts"
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "data.parquet"),
                 "--output", str(out)])
    module_path = root / "preprocessing.py"
    module_path.write_text(render_module(Artifacts(str(out))), encoding="utf-8")
    return str(out), import_module_from(str(module_path), "bp_generated_lists")


def _vocab(path: str, name: str, cast=str) -> list:
    with open(f"{path}/vocab/{name}.txt", encoding="utf-8") as f:
        return [cast(line) for line in f.read().split("\n")[:-1]]


def _rows(values: list) -> list[list]:
    """A list column's rows without nulls (a null list or element is no value)."""
    return [[v for v in row if v is not None] for row in (r or [] for r in values)]


def _split_rows(texts: list, lower: bool = False) -> list[list[str]]:
    return [[p for p in (t.lower() if lower else t).split("|") if p] if t else [] for t in texts]


def _index(vocab: list, value) -> int:
    return 2 + vocab.index(value) if value in vocab else 1


def _pad(rows: list[list[int]], n: int) -> list[list[int]]:
    return [(r[:n] + [0] * n)[:n] for r in rows]


def _histogram(rows: list[list[int]], depth: int, binary: bool) -> list[list[float]]:
    out = []
    for r in rows:
        h = [0.0] * depth
        for i in r:
            h[i - 1] = 1.0 if binary else h[i - 1] + 1.0
        out.append(h)
    return out


def _batch() -> dict:
    """The training rows as tf.data gives them: ragged lists, missing text as ""."""
    return {
        "tags": tf.ragged.constant(_rows(TAGS), dtype=tf.string),
        "ids": tf.ragged.constant(_rows(IDS), dtype=tf.int64),
        "tag_text": tf.constant([[t or ""] for t in TAG_TEXT]),
        "price": tf.constant([[p] for p in PRICE], tf.float32),
    }


def _plain(value) -> list:
    return value.to_list() if isinstance(value, tf.RaggedTensor) else np.asarray(value).tolist()


def _expected(path: str) -> dict[str, list]:
    tags, ids = _rows(TAGS), _rows(IDS)
    tag_vocab, id_vocab = _vocab(path, "tags"), _vocab(path, "ids", int)
    count_vocab = _vocab(path, "tags_count")
    tag_idx = [[_index(tag_vocab, v) for v in r] for r in tags]
    id_idx = [[_index(id_vocab, v) for v in r] for r in ids]
    count_idx = [[_index(count_vocab, v) for v in r] for r in tags]
    hashed = [[int(tf.strings.to_hash_bucket_fast(v, 8)) + 1 for v in r] for r in tags]
    split_vocab, split_count_vocab = _vocab(path, "split_tags"), _vocab(path, "split_count")
    split_idx = [[_index(split_vocab, v) for v in r] for r in _split_rows(TAG_TEXT)]
    split_count_idx = [[_index(split_count_vocab, v) for v in r]
                       for r in _split_rows(TAG_TEXT, lower=True)]
    return {
        "tags": _pad(tag_idx, 3),
        "tags_ragged": tag_idx,
        "tags_multi": _histogram(tag_idx, 1 + len(tag_vocab), binary=True),
        "tags_count": _histogram(count_idx, 1 + len(count_vocab), binary=False),
        "ids": _pad(id_idx, 2),
        "ids_count": _histogram(id_idx, 1 + len(id_vocab), binary=False),
        "tag_hash": _pad(hashed, 4),
        "tag_hash_multi": _histogram(hashed, 8, binary=True),
        "split_tags": _pad(split_idx, 4),
        "split_count": _histogram(split_count_idx, 1 + len(split_count_vocab), binary=False),
    }


def test_vocabularies_hold_every_list_value(analyzed):
    path, _ = analyzed
    # The analysis counted every non-null element (count desc, then reverse byte order).
    # a: 6, b: 5, c: 4, zz: 1.
    assert _vocab(path, "tags") == ["a", "b", "c", "zz"]
    assert _vocab(path, "tags_count") == ["a", "b", "c"]          # min_count 2 drops zz
    assert sorted(_vocab(path, "split_tags")) == ["X", "Y", "a", "b", "c", "d", "e", "x", "y",
                                                  "z"]


def test_outputs_equal_the_python_oracle_in_both_paths(analyzed):
    path, generated = analyzed
    expected = _expected(path)
    batch = _batch()
    got = generated.build_preprocessor(path)(generated.raw_columns(batch))
    twin = layers_from_artifacts(path)
    again = twin.build_preprocessor()(twin.raw_columns(batch))
    assert set(got) == set(again) == set(expected) | {"price"}
    for key, want in expected.items():
        assert _plain(got[key]) == want, key
        assert _plain(again[key]) == want, key
    assert isinstance(got["tags_ragged"], tf.RaggedTensor)
    # Truncation and padding, spelled out for the first rows of `tags` (vocab a, b, c, zz).
    assert _plain(got["tags"])[:5] == [[3, 2, 3], [0, 0, 0], [0, 0, 0], [2, 0, 0], [4, 5, 2]]


def test_every_split_training_value_is_in_the_vocabulary(analyzed):
    path, generated = analyzed
    out = generated.build_preprocessor(path)(generated.raw_columns(_batch()))
    ragged = tf.ragged.boolean_mask(out["split_tags"], out["split_tags"] > 0)
    # Index 1 is OOV: no training value of a split() feature may map there (no skew).
    assert (ragged.flat_values.numpy() >= 2).all()
    assert sum(np.asarray(out["split_count"]).sum(axis=1)) == sum(
        len(r) for r in _split_rows(TAG_TEXT))


def test_signatures_and_specs(analyzed):
    path, generated = analyzed
    twin = layers_from_artifacts(path)
    # One raw input per data column: six features read `tags`, two read `ids`.
    assert generated.LIST_INPUTS == twin.list_inputs == ("tags", "ids")
    assert set(generated.INPUT_DTYPES) == {"tags", "ids", "tag_text", "price"}
    assert generated.RAGGED_OUTPUTS == twin.ragged_outputs == ("tags_ragged",)
    assert generated.OUTPUT_SPECS == twin.output_specs
    assert generated.OUTPUT_SPECS["tags"] == ("int64", (None, 3))
    assert generated.OUTPUT_SPECS["tags_multi"] == ("float32", (None, 5))
    assert generated.OUTPUT_SPECS["tag_hash_multi"] == ("float32", (None, 8))
    sig = generated.input_signature()
    assert sig["tags"].shape.as_list() == [None, None]
    assert sig["tag_text"].shape.as_list() == [None, 1]
    assert twin.input_signature()["ids"].shape.as_list() == [None, None]


@pytest.mark.parametrize("stage", ["data", pytest.param("all", marks=pytest.mark.slow)])
def test_tf_data_ragged_batches_and_tf_example(analyzed, stage):
    path, generated = analyzed
    expected = _expected(path)
    slices = {"tags": tf.ragged.constant(_rows(TAGS)), "ids": tf.ragged.constant(_rows(IDS),
                                                                                 tf.int64),
              "tag_text": tf.constant([t or "" for t in TAG_TEXT]), "price": tf.constant(PRICE)}
    ds = tf.data.Dataset.from_tensor_slices(slices).ragged_batch(3)
    got = {k: [] for k in expected}
    for out in ds.map(generated.make_dataset_fn(path, stage=stage)):
        for k in expected:
            got[k] += _plain(out[k])
        assert out["tags"].shape.as_list() == [None, 3] or out["tags"].shape[1] == 3
    assert got == expected
    # tf.Example: multi-value features parse as SparseTensor (VarLenFeature).
    records = []
    for i in range(len(PRICE)):
        ex = tf.train.Example(features=tf.train.Features(feature={
            "tags": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[v.encode() for v in _rows(TAGS)[i]])),
            "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=_rows(IDS)[i])),
            "tag_text": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[(TAG_TEXT[i] or "").encode()])),
            "price": tf.train.Feature(float_list=tf.train.FloatList(value=[PRICE[i]])),
        }))
        records.append(ex.SerializeToString())
    parsed = tf.io.parse_example(tf.constant(records), {
        "tags": tf.io.VarLenFeature(tf.string), "ids": tf.io.VarLenFeature(tf.int64),
        "tag_text": tf.io.FixedLenFeature([1], tf.string),
        "price": tf.io.FixedLenFeature([1], tf.float32)})
    twin = layers_from_artifacts(path)
    out = twin.make_dataset_fn(stage=stage)(parsed)
    assert {k: _plain(out[k]) for k in expected} == expected


@pytest.mark.slow  # ~50 s on a loaded 2-core machine: traces and writes a SavedModel
def test_export_delete_artifacts_and_serve(analyzed, tmp_path):
    path, generated = analyzed
    copy = str(tmp_path / "artifacts")
    shutil.copytree(path, copy)
    inputs = generated.raw_inputs()
    encoded = generated.build_preprocessor(copy)(inputs)
    keys = ("tags", "tags_multi", "tags_count", "ids", "ids_count", "tag_hash",
            "tag_hash_multi", "split_tags", "split_count")
    model = keras.Model(inputs, {k: encoded[k] for k in keys})
    raw = generated.raw_columns(_batch())
    expected = model(raw)
    export_dir = str(tmp_path / "export")
    model.export(export_dir, verbose=False)
    shutil.rmtree(copy)
    served = tf.saved_model.load(export_dir).serve(raw)
    want = _expected(path)
    for key in keys:
        np.testing.assert_array_equal(np.asarray(served[key]), np.asarray(expected[key]),
                                      err_msg=key)
        assert np.asarray(served[key]).tolist() == want[key], key


def test_model_stage_passes_ragged_outputs_through(analyzed):
    path, generated = analyzed
    data = generated.build_preprocessor(path, stage="data")(generated.raw_columns(_batch()))
    model = generated.build_preprocessor(path, stage="model")(data)
    assert _plain(model["tags_ragged"]) == _expected(path)["tags_ragged"]
    twin = layers_from_artifacts(path).build_preprocessor(stage="model")(data)
    assert _plain(twin["tags_ragged"]) == _plain(model["tags_ragged"])


def test_generated_list_code_is_the_runtime_source(analyzed):
    _, generated = analyzed
    with open(generated.__file__, encoding="utf-8") as f:
        assert_copied(f.read(), "list")  # ListEncoding, and padded_list as _padded_list


def test_lists_match_keras_lookups_adapted_on_the_same_lists(analyzed):
    """Keras' own layers, adapted on the ragged training lists, give the same indices."""
    path, generated = analyzed
    tags = tf.ragged.constant(_rows(TAGS))
    out = generated.build_preprocessor(path)(generated.raw_columns(_batch()))
    masked = keras.layers.StringLookup(mask_token="")
    masked.adapt(tags)
    assert masked(tags).to_list() == _plain(out["tags_ragged"])
    multi = keras.layers.StringLookup(output_mode="multi_hot")
    multi.adapt(tags)
    np.testing.assert_array_equal(np.asarray(multi(tags), np.float32),
                                  np.asarray(out["tags_multi"]))
    hashing = keras.layers.Hashing(num_bins=8)
    flat = [[int(hashing(tf.constant([v]))[0]) + 1 for v in r] for r in _rows(TAGS)]
    assert _plain(out["tag_hash"]) == _pad(flat, 4)


@pytest.mark.slow  # a second analysis run (~60 s on a loaded 2-core machine)
def test_jsonl_arrays_end_to_end(tmp_path):
    """A JSONL array is a list column too: analyze -> runtime layers -> oracle outputs."""
    import json

    rows = [{"tags": ["b", "a"], "n": [3, 4, 3]}, {"tags": [], "n": None}, {"n": [5]},
            {"tags": ["a", None, "c"], "n": []}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.yaml").write_text(
        "features:\n  - {name: tags, kind: string, shape: list, max_values: 2}\n"
        "  - {name: n, kind: integer, shape: list, output_mode: count}\n")
    out = str(tmp_path / "artifacts")
    analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input",
                 str(tmp_path / "data.jsonl"), "--output", out])
    # a: 2 rows; b, c: 1 each, tie broken by reverse byte order. 3: 2; 5, 4 by decimal text.
    assert _vocab(out, "tags") == ["a", "c", "b"]
    assert _vocab(out, "n", int) == [3, 5, 4]
    tags, ns = _rows([r.get("tags") for r in rows]), _rows([r.get("n") for r in rows])
    pp = layers_from_artifacts(out)
    got = pp.build_preprocessor()(pp.raw_columns({
        "tags": tf.ragged.constant(tags, tf.string), "n": tf.ragged.constant(ns, tf.int64)}))
    assert _plain(got["tags"]) == [[4, 2], [0, 0], [0, 0], [2, 3]]
    assert _plain(got["n"]) == [[0.0, 2.0, 0.0, 1.0], [0.0] * 4, [0.0, 0.0, 1.0, 0.0], [0.0] * 4]
