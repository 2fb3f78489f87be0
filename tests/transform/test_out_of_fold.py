"""``beam-prep transform --out_of_fold``: the leakage guard of target encodings.

With a pure-noise label and many categories, the serving encoding (what the generated
layers compute, the default output) of the training rows correlates with their label; the
out-of-fold one must not. A deliberately leaky variant (the serving table used as the
out-of-fold one) fails the same check. The job's values must equal the analysis file's
out-of-fold column of each row's fold, whatever the batch size.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from beam_prep.pipelines import analyze, transform

from beam_prep.analyzers.target.stats import folds_of
from beam_prep.errors import InputError
from beam_prep.io.inputs.readers import Split, read_split
from beam_prep.transform.layers import BatchEncoder

SPEC = ("features:\n  - {name: t, kind: string, target_encoding: {labels: y, "
        "fold_column: u, folds: 5, smoothing: 1}}\n")
KEY = "t_target_encoding"


def z_score(encoding: np.ndarray, labels: np.ndarray) -> float:
    """The correlation of an encoding with the label, in standard errors (noise: ~N(0, 1))."""
    return float(np.corrcoef(encoding, labels)[0, 1] * math.sqrt(len(labels)))


@pytest.fixture(scope="module")
def noise(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("oof")
    rng = np.random.default_rng(23)
    n = 6000
    rows = [{"t": f"c{int(rng.integers(0, 1500))}", "u": f"user{i}",
             "y": float(rng.random() < 0.5)} for i in range(n)]
    data = tmp / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "spec.yaml").write_text(SPEC)
    art = str(tmp / "art")
    analyze.run(["--spec", str(tmp / "spec.yaml"), "--input", str(data), "--output", art,
                 "--quiet"])
    return tmp, art, str(data), rows


def _job(tmp, art: str, data: str, name: str, *flags: str) -> np.ndarray:
    out = tmp / name
    transform.run(["--artifacts", art, "--input", data, "--output", str(out),
                   "--output_format", "parquet", "--quiet", *flags])
    table = pq.read_table(out / "data" / "part-00000-of-00001.parquet")
    return np.asarray(table.column(KEY).to_numpy(), np.float64)


def test_out_of_fold_output_does_not_leak_and_serving_does(noise):
    tmp, art, data, rows = noise
    y = np.array([r["y"] for r in rows])
    serving = _job(tmp, art, data, "serving")
    oof = _job(tmp, art, data, "oof", "--out_of_fold")
    assert z_score(serving, y) > 10
    assert abs(z_score(oof, y)) < 4
    # each row: the file's out-of-fold value of its token for its own fold
    lines = {line[0]: line for line in map(json.loads, open(f"{art}/vocab/t.target.jsonl"))}
    fold = folds_of(pa.array([r["u"] for r in rows]), 5)
    want = np.array([lines[r["t"]][4][k] for r, k in zip(rows, fold)], np.float32)
    np.testing.assert_array_equal(oof.astype(np.float32), want)
    assert json.loads((tmp / "oof" / "transform.json").read_text())["out_of_fold"] is True
    assert "out_of_fold" not in json.loads((tmp / "serving" / "transform.json").read_text())


def test_the_check_fails_a_leaky_out_of_fold_encoder(noise):
    _, art, data, rows = noise
    y = np.array([r["y"] for r in rows])
    enc = BatchEncoder(art, out_of_fold=True)
    [result] = list(read_split(Split(data, "jsonl"), enc.columns))
    honest = enc.encode(result.batch)[KEY].values[:, 0]
    assert abs(z_score(honest, y)) < 4
    oof = enc._oof[KEY]  # noqa: SLF001 - the deliberately broken variant
    serving = BatchEncoder(art).encode(result.batch)[KEY].values[:, 0]
    table = oof.table.copy()
    lookup = {t: i + 1 for i, t in enumerate(
        json.loads(line)[0] for line in open(f"{art}/vocab/t.target.jsonl"))}
    for r, s in zip(rows, serving):
        table[lookup[r["t"]], :] = s  # the all-folds value in every fold: leaky
    oof.table = table
    leaky = enc.encode(result.batch)[KEY].values[:, 0]
    assert not abs(z_score(leaky, y)) < 4


def test_out_of_fold_bytes_do_not_depend_on_batch_size(noise):
    tmp, art, data, _ = noise
    a = _job(tmp, art, data, "b1", "--out_of_fold", "--batch_size", "97")
    b = _job(tmp, art, data, "b2", "--out_of_fold")
    assert a.tobytes() == b.tobytes()


def test_out_of_fold_without_target_encoding_is_refused(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"t": "a"}\n')
    (tmp_path / "s.yaml").write_text("features:\n  - {name: t, kind: string}\n")
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                 "--output", str(tmp_path / "art"), "--quiet"])
    with pytest.raises(InputError, match="--out_of_fold applies to target-encoded"):
        transform.run(["--artifacts", str(tmp_path / "art"), "--input",
                       str(tmp_path / "d.jsonl"), "--output", str(tmp_path / "o"),
                       "--out_of_fold"])
