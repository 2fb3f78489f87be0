"""Label-aware vocabularies against ``tft.vocabulary(labels=...)`` run through tft_beam.

TFT runs in a subprocess (``tft_labels_reference.py``: importing tensorflow_transform would
switch ``tf.keras`` to Keras 2 here); ``beam-prep analyze`` runs on a CSV of the same rows.
Compared: the vocabulary files **byte for byte** (binary and 4-class labels, raw and
adjusted MI, TFT's automatic and explicit ``min_diff_from_avg``, ``top_k`` and the MI
threshold TFT takes as ``frequency_threshold``), and our MI sidecar's scores against the
scores TFT stores with ``store_frequency=True`` (TFT accumulates float32 means, we exact
counts: within 1e-5 relative).

The data has exact ties (tokens with the very same rows of labels, ranked by token bytes
descending), tokens present in every row of a label, never with a label, and non-ASCII
tokens.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from beam_prep.io.contract.label_sidecar import mutual_info_rows
from tests.parity import tft_store

ROWS = 3000

# name, column, dtype, labels, top_k, min_mutual_info, adjusted, min_diff_from_avg
VOCABULARIES = [
    ("s_bin", "s", "string", "yb", None, None, False, None),
    ("s_multi", "s", "string", "ym", None, None, False, 0),
    ("s_bin_ami", "s", "string", "yb", None, None, True, 0),
    ("s_multi_ami_top", "s", "string", "ym", 25, None, True, 3),
    ("s_threshold", "s", "string", "ym", None, 1.5, False, 5),
    ("i_bin", "i", "integer", "yb", None, None, False, 0),
    ("i_multi_ami_top", "i", "integer", "ym", 12, None, True, None),
]


def generate(rows: int = ROWS, seed: int = 7) -> dict[str, list]:
    """Tokens with label-dependent frequencies, exact ties and awkward spellings."""
    rng = np.random.default_rng(seed)
    ym = rng.integers(0, 4, rows)
    yb = (rng.random(rows) < 0.3 + 0.1 * ym).astype(int)
    ym[1:400:2], yb[1:400:2] = ym[0:400:2], yb[0:400:2]  # pairs of rows with equal labels
    names = [f"t{k}" for k in range(50)] + ["é", "ä b", "Z", "zz", "日本"]
    weights = 1.0 / np.arange(1, len(names) + 1)
    s = []
    for r in range(rows):
        tilt = np.roll(weights, 3 * int(ym[r]) + 5 * int(yb[r]))
        s.append(names[rng.choice(len(names), p=tilt / tilt.sum())])
    # exact ties: one token of each pair of rows with equal labels is tie_a, the other tie_b
    for k, r in enumerate(range(0, 400, 2)):
        s[r], s[r + 1] = ("tie_a", "tie_b") if k % 2 else ("tie_b", "tie_a")
    i = [int(v) for v in (rng.zipf(1.6, rows) % 40 - 7 + 3 * ym)]
    return {"s": s, "i": i, "yb": [int(v) for v in yb], "ym": [int(v) for v in ym]}


def _spec_yaml() -> str:
    lines = ["features:"]
    for name, column, kind, labels, top_k, thr, adjusted, diff in VOCABULARIES:
        extra = f", labels: {labels}"
        extra += f", top_k: {top_k}" if top_k else ""
        extra += f", min_mutual_info: {thr}" if thr is not None else ""
        extra += ", adjusted_mutual_info: true" if adjusted else ""
        extra += f", min_diff_from_avg: {diff}" if diff is not None else ""
        lines.append(f"  - {{name: {name}, column: {column}, kind: {kind}{extra}}}")
    return "\n".join(lines) + "\n"


def _tft_config() -> dict[str, Any]:
    return {"batch_size": ROWS, "vocabularies": [
        {"name": name, "column": column, "dtype": kind, "labels": labels, "top_k": top_k,
         "frequency_threshold": thr, "use_adjusted_mutual_info": adjusted,
         "min_diff_from_avg": diff}
        for name, column, kind, labels, top_k, thr, adjusted, diff in VOCABULARIES]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("tft_labels")
    columns = generate()
    with open(root / "data.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(list(columns))
        w.writerows(zip(*columns.values()))
    (root / "columns.json").write_text(json.dumps(columns), encoding="utf-8")
    (root / "config.json").write_text(json.dumps(_tft_config()), encoding="utf-8")
    (root / "spec.yaml").write_text(_spec_yaml(), encoding="utf-8")
    tft = tft_store.reference(
        "labels", "tft_labels_reference.py",
        ["--data", str(root / "columns.json"), "--config", str(root / "config.json"),
         "--output", "{out}"],
        inputs=[root / "columns.json", root / "config.json"], root=root,
        assets=lambda _, stdout: Path(stdout.strip().splitlines()[-1]))
    assets = tft / "assets"
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "data.csv"),
                 "--output", str(root / "ours"), "--quiet", "--batch_size", "257",
                 "--vocab_partitions", "3"])
    return {"columns": columns, "assets": assets, "ours": Artifacts(str(root / "ours"))}


@pytest.mark.parametrize("name", [v[0] for v in VOCABULARIES])
def test_vocabulary_file_is_byte_identical_to_tft(runs, name):
    ours = Path(runs["ours"].vocabulary_path(name)).read_bytes()
    theirs = (runs["assets"] / name).read_bytes()
    if ours != theirs:
        a, b = ours.decode().split("\n"), theirs.decode().split("\n")
        first = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        pytest.fail(f"{name}: first difference at line {first}: ours={a[first:first + 3]!r} "
                    f"tft={b[first:first + 3]!r} (lines: ours {len(a)}, tft {len(b)})")


@pytest.mark.parametrize("name", [v[0] for v in VOCABULARIES])
def test_scores_match_tft_stored_scores(runs, name):
    lines = (runs["assets"] / f"{name}_scores").read_text(encoding="utf-8").splitlines()
    theirs = [(line.split(" ", 1)[1], float(line.split(" ", 1)[0])) for line in lines]
    ours = [(token, score) for token, score, _ in mutual_info_rows(runs["ours"], name)]
    assert [t for t, _ in ours] == [t for t, _ in theirs]
    for (token, a), (_, b) in zip(ours, theirs):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-4), token


def test_data_exercises_ties_cuts_and_order(runs):
    """Guards the data: the ranking is not the count order, ties exist, cuts drop tokens."""
    art = runs["ours"]
    rows = mutual_info_rows(art, "s_multi")
    tokens = [t for t, _, _ in rows]
    assert tokens.index("tie_b") == tokens.index("tie_a") - 1  # same score: bytes descending
    scores = dict((t, s) for t, s, _ in rows)
    assert scores["tie_a"] == scores["tie_b"]
    counts = [c for _, _, c in rows]
    assert counts != sorted(counts, reverse=True)
    assert art.stats("s_multi_ami_top")["dropped_top_k"]["tokens"] > 0
    assert art.stats("s_threshold")["mutual_info"]["dropped_min_mutual_info"]["tokens"] > 0
    assert art.stats("i_multi_ami_top")["dropped_top_k"]["tokens"] > 0
    assert art.stats("s_bin")["mutual_info"]["min_diff_from_avg"] == 2
