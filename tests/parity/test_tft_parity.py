"""Parity with tensorflow-transform on the same generated data.

One TFT run (``tft_reference.py`` in a subprocess: importing tensorflow_transform would
switch ``tf.keras`` to Keras 2 in this process; its outputs are kept by ``tft_store.py``) and
one ``beam-prep analyze`` run (``pipelines.analyze.run`` on a CSV of the same rows) are shared
by every test here; a second ``beam-prep analyze`` run on the same rows as TFRecord of
``tf.Example`` (written by ``tf_rows.py``) must give the same vocabularies and statistics as
the CSV run.

What is compared:

* vocabulary files (strings and integers, with and without ``top_k`` /
  ``frequency_threshold``; some cuts fall inside a group of tied counts) must be
  **byte-identical** to the files ``tft.vocabulary`` writes into the transform_fn assets;
* mean and variance within 1e-6 relative of ``tft.mean`` / ``tft.var``;
* quantile boundaries within the epsilon rank error of the exact quantiles, for both us
  and TFT (exact ranks computed with numpy on the data).

Float32: TFT parses FLOAT features as float32, beam_prep reads CSV numbers as float64. The
generator rounds every numeric value to float32 and writes the float64 of that float32 with
``repr`` (exact round trip), so both sides see the very same numbers. In the TFT
preprocessing_fn the value is cast to float64 before ``tft.mean``/``tft.var`` (so the
reference is not limited by float32 accumulation); ``tft.quantiles`` runs on the float32
value, which is exact for this data.

Tokens that contain a line break or are empty are not generated: beam_prep excludes them
from vocabulary files by design (TFT drops only ``\\n``/``\\r`` ones), tested elsewhere.
"""

from __future__ import annotations

import collections
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from tests.parity import datagen, tf_rows, tft_store

EPSILON = 0.01
NUM_BUCKETS = 10

# (name, column, kind, top_k, min_count / frequency_threshold)
VOCABULARIES = [
    ("s_all", "s", "string", None, None),
    ("s_top", "s", "string", 300, 3),
    ("s_cut_in_tie", "s", "string", 1000, None),   # rank 1000 is inside the count-2 group
    ("s_threshold", "s", "string", None, 2),
    ("i_all", "i", "integer", None, None),
    ("i_top", "i", "integer", 100, 5),
    ("i_cut_in_tie", "i", "integer", 550, None),
    ("i_threshold", "i", "integer", None, 4),
]


def _spec_yaml() -> str:
    lines = ["features:"]
    for name, column, kind, top_k, threshold in VOCABULARIES:
        extra = ""
        if top_k is not None:
            extra += f", top_k: {top_k}"
        if threshold is not None:
            extra += f", min_count: {threshold}"
        lines.append(f"  - {{name: {name}, column: {column}, kind: {kind}{extra}}}")
    for col in datagen.NUMERIC_COLUMNS:
        lines.append(f"  - {{name: {col}, kind: numeric, num_buckets: {NUM_BUCKETS}, "
                     f"epsilon: {EPSILON}}}")
    return "\n".join(lines) + "\n"


def _tft_config() -> dict[str, Any]:
    return {
        "vocabularies": [
            {"name": name, "column": column, "dtype": kind, "top_k": top_k,
             "frequency_threshold": threshold}
            for name, column, kind, top_k, threshold in VOCABULARIES],
        "numerics": [{"name": c, "column": c, "num_buckets": NUM_BUCKETS, "epsilon": EPSILON}
                     for c in datagen.NUMERIC_COLUMNS],
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("tft_parity")
    columns = datagen.generate()
    datagen.write_csv(columns, str(root / "data.csv"))
    datagen.write_json(columns, str(root / "columns.json"))
    (root / "config.json").write_text(json.dumps(_tft_config()), encoding="utf-8")
    (root / "spec.yaml").write_text(_spec_yaml(), encoding="utf-8")

    tft = tft_store.reference(
        "parity", "tft_reference.py",
        ["--data", str(root / "columns.json"), "--config", str(root / "config.json"),
         "--output", "{out}"],
        inputs=[root / "columns.json", root / "config.json"], root=root,
        assets=lambda live, _: live / "transform_fn_root" / "transform_fn" / "assets")
    tft_results = json.loads((tft / "results.json").read_text(encoding="utf-8"))
    spec = tf_rows.feature_spec(_tft_config())
    tf_rows.write_tfrecord(tf_rows.instances(columns, spec), spec, str(root / "data.tfrecord"))

    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "data.csv"),
                 "--output", str(root / "ours"), "--quiet"])
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "data.tfrecord"),
                 "--output", str(root / "ours_tfrecord"), "--quiet"])
    return {"columns": columns, "tft": tft_results, "ours": Artifacts(str(root / "ours")),
            "ours_tfrecord": Artifacts(str(root / "ours_tfrecord")),
            "assets": tft / "assets"}


def _tft_vocab_bytes(runs: dict[str, Any], name: str) -> bytes:
    return (runs["assets"] / name).read_bytes()


@pytest.mark.parametrize("name", [v[0] for v in VOCABULARIES])
def test_vocabulary_file_is_byte_identical_to_tft(runs, name):
    ours = Path(runs["ours"].vocabulary_path(name)).read_bytes()
    theirs = _tft_vocab_bytes(runs, name)
    if ours != theirs:
        a, b = ours.decode().split("\n"), theirs.decode().split("\n")
        first = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        pytest.fail(f"{name}: first difference at line {first}: ours={a[first:first + 3]!r} "
                    f"tft={b[first:first + 3]!r} (lines: ours {len(a)}, tft {len(b)})")


@pytest.mark.parametrize("name", [v[0] for v in VOCABULARIES])
def test_compared_vocabularies_exercise_ties_and_cuts(runs, name):
    """Guards the data: each compared file holds tied counts, and cuts really drop tokens."""
    _, column, _, top_k, threshold = next(v for v in VOCABULARIES if v[0] == name)
    counter = collections.Counter(str(v) for v in runs["columns"][column])
    tokens = _tft_vocab_bytes(runs, name).decode("utf-8").split("\n")[:-1]
    counts = [counter[t] for t in tokens]
    assert counts == sorted(counts, reverse=True)
    assert len(counts) - len(set(counts)) > 20, "too few ties to test the tie order"
    kept = sum(1 for c in counter.values() if c >= (threshold or 1))
    assert len(tokens) == (min(kept, top_k) if top_k else kept)
    if name.endswith("cut_in_tie"):
        # The last kept and the first dropped token have the same count.
        assert sorted(counter.values(), reverse=True)[top_k] == counts[-1]


def test_vocabularies_hold_awkward_tokens_in_tft_order(runs):
    strings = _tft_vocab_bytes(runs, "s_all").decode("utf-8").split("\n")[:-1]
    for token in ("[UNK]", "007"):
        if token in collections.Counter(runs["columns"]["s"]):
            assert token in strings
    assert any(t.startswith(" ") for t in strings)
    assert any(t.endswith(" ") for t in strings)
    assert any('"' in t and "," in t for t in strings)
    assert any("\u0301" in t for t in strings)
    ints = _tft_vocab_bytes(runs, "i_all").decode("utf-8").split("\n")[:-1]
    # 5, 10, -3, 100, -20 and 7 share one count: ties go by decimal string, descending.
    tied = [t for t in ints if t in {"5", "10", "-3", "100", "-20", "7"}]
    assert tied == ["7", "5", "100", "10", "-3", "-20"]


@pytest.mark.parametrize("name", ["s_all", "i_all"])
def test_counts_sidecar_matches_exact_counts(runs, name):
    column = next(v[1] for v in VOCABULARIES if v[0] == name)
    counter = collections.Counter(str(v) for v in runs["columns"][column])
    pairs = runs["ours"].counts(name)
    assert [t for t, _ in pairs] == runs["ours"].vocabulary(name)
    assert dict(pairs) == dict(counter)


@pytest.mark.parametrize("column", datagen.NUMERIC_COLUMNS)
def test_mean_and_variance_match_tft(runs, column):
    ours = runs["ours"].stats(column)
    theirs = runs["tft"]["numerics"][column]
    assert ours["mean"] == pytest.approx(theirs["mean"], rel=1e-6)
    assert ours["variance"] == pytest.approx(theirs["var"], rel=1e-6)
    # And both against an exactly rounded float64 reference.
    x = np.asarray(runs["columns"][column], dtype=np.float64)
    mean = math.fsum(x) / len(x)
    var = math.fsum((x - mean) ** 2) / len(x)
    assert ours["mean"] == pytest.approx(mean, rel=1e-12)
    assert ours["variance"] == pytest.approx(var, rel=1e-12)
    assert theirs["mean"] == pytest.approx(mean, rel=1e-9)
    assert theirs["var"] == pytest.approx(var, rel=1e-9)
    assert ours["count"] == len(x)
    assert ours["min"] == x.min() and ours["max"] == x.max()


def test_tfrecord_input_gives_the_same_artifacts_as_csv(runs):
    """The same rows as tf.Example (float_list is float32: exact for this data)."""
    csv_art, tfr_art = runs["ours"], runs["ours_tfrecord"]
    for name, *_ in VOCABULARIES:
        assert (Path(tfr_art.vocabulary_path(name)).read_bytes()
                == Path(csv_art.vocabulary_path(name)).read_bytes()), name
        assert tfr_art.counts(name) == csv_art.counts(name), name
    for column in datagen.NUMERIC_COLUMNS:
        a, b = csv_art.stats(column), tfr_art.stats(column)
        for key in ("count", "mean", "variance", "min", "max", "boundaries"):
            assert a[key] == b[key], (column, key)


def _rank_errors(data: np.ndarray, boundaries: list[float], num_buckets: int) -> list[float]:
    """For each boundary, the distance (in ranks / n) to its target quantile.

    A boundary b covers every rank in [#(x < b), #(x <= b)]; the error is 0 when the target
    rank ``j * n / num_buckets`` is in that interval.
    """
    xs = np.sort(data)
    n = len(xs)
    errors = []
    for j, b in enumerate(boundaries, start=1):
        lo = np.searchsorted(xs, b, side="left")
        hi = np.searchsorted(xs, b, side="right")
        target = j * n / num_buckets
        errors.append(max(0.0, lo - target, target - hi) / n)
    return errors


@pytest.mark.parametrize("column", datagen.NUMERIC_COLUMNS)
def test_quantile_boundaries_within_epsilon_rank_error(runs, column):
    data = np.asarray(runs["columns"][column], dtype=np.float64)
    ours = runs["ours"].stats(column)["boundaries"]
    theirs = runs["tft"]["numerics"][column]["boundaries"]
    assert len(ours) == len(theirs) == NUM_BUCKETS - 1
    assert ours == sorted(ours)
    for who, bounds in (("ours", ours), ("tft", theirs)):
        errors = _rank_errors(data, bounds, NUM_BUCKETS)
        assert max(errors) <= EPSILON, f"{who}: rank errors {errors}"
    # Every boundary is a data value (the sketch returns elements of the input).
    assert set(ours) <= set(data.tolist())
