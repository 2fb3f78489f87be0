"""``make-elwc --artifacts``: encoded ELWC values equal the Keras layers applied to raw ELWC.

Oracle: the same input converted without ``--artifacts``, parsed by the ELWC reader, and the
artifacts' real Keras layers (``layers_and_rows``, what the trainer applies) run on it in
TensorFlow. Ints must be identical, floats within 1 ulp, for context and example features,
unseen values, missing cells, NaN, list features and the padding examples of each list.
"""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from beam_prep.pipelines import make_elwc  # noqa: E402

from beam_prep.ranking.feature_spec import ElwcFeatureSpec  # noqa: E402
from beam_prep.ranking.train.artifact_layers import layers_and_rows  # noqa: E402
from beam_prep.ranking.train.reader import MASK_KEY, make_dataset  # noqa: E402
from tests.ranking import encoded_fixtures as fx  # noqa: E402
from tests.sample_data import LIGHTGBM  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("encoded")
    art = fx.artifacts(str(d / "art"))
    inp = fx.write_jsonl(str(d / "in" / "a.jsonl"), fx.rows())
    make_elwc.main(fx.make_elwc_args(inp, str(d / "raw"), "--summary_json",
                                     str(d / "raw_summary.json")))
    make_elwc.main(fx.make_elwc_args(inp, str(d / "enc"), "--artifacts", art, "--summary_json",
                                     str(d / "enc_summary.json")))
    return {"dir": d, "art": art, "input": inp, "raw": str(d / "raw"), "enc": str(d / "enc")}


def _read(out, split="train", list_size=8):
    ds = make_dataset(os.path.join(out, f"{split}-*.tfrecord"), list_size=list_size,
                      batch_size=1000)
    return next(iter(ds))


def _values(x):
    if isinstance(x, tf.RaggedTensor):
        return x.to_list()
    return np.asarray(x)


def test_spec_records_encoding_fingerprint_dtypes_and_raw_features(runs):
    from beam_prep.io.contract.artifacts import Artifacts

    raw = ElwcFeatureSpec.load(os.path.join(runs["raw"], "feature_spec.json"))
    enc = ElwcFeatureSpec.load(os.path.join(runs["enc"], "feature_spec.json"))
    assert raw.encoded is None
    assert enc.encoded.artifacts_fingerprint == Artifacts(runs["art"]).fingerprint
    covered = {"country", "user_id", "city", "store_id", "price", "weight", "brand", "tags",
               "strict"}
    assert enc.encoded.names == covered
    assert enc.raw() == raw  # the raw spec is kept whole, in order
    kinds = {f.name: (f.dtype, f.shape) for f in (*enc.context, *enc.example)}
    assert kinds["price"] == ("float", ())
    assert kinds["tags"] == ("int64", (None,))
    assert kinds["city"] == ("int64", ()) and kinds["country"] == ("int64", ())
    assert kinds["other"] == ("float", ())  # not in the artifacts: unchanged
    assert "encoded" not in open(os.path.join(runs["raw"], "feature_spec.json")).read()
    report = open(os.path.join(runs["enc"], "report.html")).read()
    assert "encoded by the artifacts" in report
    assert enc.encoded.artifacts_fingerprint[:12] in report
    assert "encoded by the artifacts" not in open(os.path.join(runs["raw"], "report.html")).read()
    summary = json.load(open(runs["dir"] / "enc_summary.json"))
    assert summary["counts"]["encoded_features"] == 9
    assert summary["details"]["encoded"] == {
        "artifacts_fingerprint": enc.encoded.artifacts_fingerprint,
        "features": [f.name for f in enc.encoded.features]}
    raw_summary = json.load(open(runs["dir"] / "raw_summary.json"))
    assert "encoded_features" not in raw_summary["counts"]
    assert "encoded" not in raw_summary["details"]


@pytest.mark.parametrize("split", ["train", "validation"])
def test_encoded_values_equal_keras_layers_on_raw_features(runs, split):
    raw_spec = ElwcFeatureSpec.load(os.path.join(runs["raw"], "feature_spec.json"))
    raw, raw_labels = _read(runs["raw"], split)
    enc, enc_labels = _read(runs["enc"], split)
    np.testing.assert_array_equal(raw_labels, enc_labels)
    np.testing.assert_array_equal(raw[MASK_KEY], enc[MASK_KEY])
    layers, _ = layers_and_rows(runs["art"], raw_spec)
    assert set(layers) == {"country", "user_id", "city", "store_id", "price", "weight",
                           "brand", "tags", "strict"}
    assert not bool(tf.reduce_all(tf.cast(raw[MASK_KEY], tf.bool)))  # padding is compared too
    mask = np.asarray(raw[MASK_KEY]).astype(bool)
    for name, layer in layers.items():
        x = raw[name]
        if name == "strict":  # num_oov_indices 0: Keras fails on the padding's "" (checked
            x = tf.where(mask, x, "s1")  # below: encoded padding is 0)
        want = layer(x)
        got = enc[name]
        if name == "strict":
            assert (np.asarray(got)[~mask] == 0).all()
            want = tf.where(mask, want, tf.zeros_like(want))
        if isinstance(want, tf.RaggedTensor):
            assert _values(got) == _values(want), name
            continue
        want, got = np.asarray(want), np.asarray(got)
        assert got.shape == want.shape, name
        if want.dtype.kind == "f":
            ulp = np.spacing(np.abs(want).astype(np.float32))
            same = (got == want) | (np.abs(got - want) <= ulp) | (np.isnan(got) & np.isnan(want))
            assert same.all(), (name, got[~same], want[~same])
        else:
            np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=name)
    np.testing.assert_array_equal(raw["other"], enc["other"])  # not covered: raw bytes


def test_values_cover_oov_missing_and_nan(runs):
    """The input really holds what the equality test claims to cover."""
    docs = fx.rows()
    assert any(d["city"] == "Nowhere" for d in docs) and any(d["city"] is None for d in docs)
    assert any(d["country"] == "ZZ" for d in docs) and any(d["country"] is None for d in docs)
    assert any(isinstance(d["price"], float) and np.isnan(d["price"]) for d in docs)
    assert any(isinstance(d["weight"], float) and np.isnan(d["weight"]) for d in docs)
    assert any("brand" not in d for d in docs)
    assert any(d["tags"] and None in d["tags"] for d in docs)


def test_out_of_vocabulary_rows_are_rejected_and_counted(tmp_path, runs):
    docs = fx.rows(strict_oov=True)
    inp = fx.write_jsonl(str(tmp_path / "in" / "a.jsonl"), docs)
    out = str(tmp_path / "enc")
    make_elwc.main(fx.make_elwc_args(inp, out, "--artifacts", runs["art"],
                                     "--max_bad_fraction", "0.5"))
    want = [i + 1 for i, d in enumerate(docs) if d["strict"] not in ("s1", "s2")]
    assert want
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert stats["input"]["lines_rejected"] == len(want)
    assert stats["input"]["rejected_by_reason"] == {"out_of_vocabulary": len(want)}
    rejected = [json.loads(line) for p in sorted(glob.glob(os.path.join(out, "rejected", "*")))
                for line in open(p)]
    assert [(r["line"], r["code"]) for r in rejected] == [(w, "out_of_vocabulary") for w in want]
    assert all("out_of_vocabulary" in r["reason"] and "'strict'" in r["reason"]
               for r in rejected)
    assert stats["documents"] == len(docs) - len(want)
    # Without --artifacts nothing is rejected (the raw strings are written).
    raw_out = str(tmp_path / "raw")
    make_elwc.main(fx.make_elwc_args(inp, raw_out))
    assert json.load(open(os.path.join(raw_out, "stats.json")))["input"]["lines_rejected"] == 0


def _shards(out):
    return {os.path.basename(p): open(p, "rb").read()
            for p in sorted(glob.glob(os.path.join(out, "*.tfrecord")))}


def test_bytes_do_not_depend_on_input_files_or_pieces(tmp_path, runs):
    docs = fx.rows()
    a = fx.write_jsonl(str(tmp_path / "two" / "a.jsonl"), docs[:40])
    fx.write_jsonl(str(tmp_path / "two" / "b.jsonl"), docs[40:])
    out = str(tmp_path / "two_files")
    make_elwc.main(fx.make_elwc_args(os.path.dirname(a) + "/*.jsonl", out,
                                     "--artifacts", runs["art"]))
    assert _shards(out) == _shards(runs["enc"])


# slow (default suite time); the same checks on the synthetic lists stay in the default suite:
# test_bytes_do_not_depend_on_input_files_or_pieces, test_encoded_values_equal_keras_layers_...
@pytest.mark.slow
def test_letor_encoded_is_deterministic_and_equals_layers(tmp_path):
    from tests.codegen.artifact_fixtures import write_artifacts

    src = os.path.join(LIGHTGBM, "rank.train")
    args = ["--input", src, "--input_format", "lightgbm", "--quiet"]
    make_elwc.main([*args, "--output", str(tmp_path / "raw")])
    raw_spec = ElwcFeatureSpec.load(str(tmp_path / "raw" / "feature_spec.json"))
    names = [raw_spec.example[i].name for i in (0, 3, 7)]
    rng = np.random.default_rng(0)
    spec = {"features": [{"name": names[0], "kind": "numeric"},
                         {"name": names[1], "kind": "numeric"},
                         {"name": names[2], "kind": "numeric", "num_buckets": 2}]}
    art = write_artifacts(str(tmp_path / "art"), spec,
                          {n: rng.normal(size=20).round(3).tolist() for n in names},
                          boundaries={names[2]: [0.0]})
    make_elwc.main([*args, "--output", str(tmp_path / "whole"), "--artifacts", art,
                    "--input_split_bytes", "0"])
    make_elwc.main([*args, "--output", str(tmp_path / "pieces"), "--artifacts", art,
                    "--input_split_bytes", "20000"])
    assert _shards(str(tmp_path / "whole")) == _shards(str(tmp_path / "pieces"))
    raw, _ = _read(str(tmp_path / "raw"), list_size=40)
    enc, _ = _read(str(tmp_path / "whole"), list_size=40)
    layers, _ = layers_and_rows(art, raw_spec)
    assert sorted(layers) == sorted(names)
    for name in names:
        want = np.asarray(layers[name](raw[name]))
        got = np.asarray(enc[name])
        assert np.all(np.abs(got - want) <= np.spacing(np.abs(want))), name
    assert not np.array_equal(np.asarray(raw[names[0]]), np.asarray(enc[names[0]]))
    for info in raw_spec.example[8:]:
        np.testing.assert_array_equal(raw[info.name], enc[info.name])


def test_unsupported_dtype_is_refused_with_the_fix(tmp_path, runs):
    docs = [{**d, "price": "cheap"} for d in fx.rows(12)]
    inp = fx.write_jsonl(str(tmp_path / "in" / "a.jsonl"), docs)
    with pytest.raises(Exception, match=r"feature 'price' is string in the ELWC input but its "
                                        r"layers in --artifacts take float"):
        make_elwc.run(fx.make_elwc_args(inp, str(tmp_path / "o"), "--artifacts", runs["art"]))


def test_help_names_artifacts(capsys):
    from beam_prep import cli

    with pytest.raises(SystemExit):
        cli.main(["make-elwc", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--artifacts" in text
    assert "written encoded as the generated Keras layers output them" in text


def test_encoder_cache_follows_the_manifest(tmp_path):
    """A directory re-analysed in place (same path) is not encoded with the old layers."""
    import shutil

    from beam_prep.ranking.data.artifact_encode import load_encoder
    from tests.codegen.artifact_fixtures import write_artifacts

    path = fx.artifacts(str(tmp_path / "a"))
    first = load_encoder(path)
    assert load_encoder(path) is first
    shutil.rmtree(path)
    write_artifacts(path, fx.SPEC, dict(fx.DATA, city=["Oslo"] * 8), boundaries=fx.BOUNDARIES)
    second = load_encoder(path)
    assert second is not first and second.fingerprint != first.fingerprint


def test_a_layer_the_encoder_does_not_support_is_refused_before_any_work(
        tmp_path, runs, monkeypatch):
    """Another lane's new layer class: refused with the fix (as the transform job does)."""
    from beam_prep.errors import SpecError
    from beam_prep.transform import layers

    def unsupported(self, lp, fp, tf_idf):
        raise NotImplementedError("No transform encoder for layer class 'Winsorize'")

    monkeypatch.setattr(layers.BatchEncoder, "_layer", unsupported)
    out = str(tmp_path / "o")
    with pytest.raises(SpecError, match=r"layer class 'Winsorize', so make-elwc cannot write "
                                        r"it encoded. Fix: run make-elwc without --artifacts"):
        make_elwc.run(fx.make_elwc_args(runs["input"], out, "--artifacts", runs["art"]))
    assert not os.path.exists(out)
