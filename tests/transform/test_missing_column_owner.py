"""`transform` names the feature that owns a missing column, as `analyze` does: a missing
``per_key`` column or ``fold_column`` (with --out_of_fold) is "'store' (feature 'sales')",
not "(feature 'store')", a column named as if it were a feature."""

from __future__ import annotations

import csv
import json

import pytest
from beam_prep.pipelines import analyze

from beam_prep import cli

SPEC = ("features:\n  - {name: sales, kind: numeric, per_key: store}\n"
        "  - {name: c, kind: string, target_encoding: {labels: y, fold_column: u}}\n")
ROWS = [{"sales": float(i), "store": f"s{i % 3}", "c": f"t{i % 4}", "u": i, "y": float(i % 2)}
        for i in range(40)]


@pytest.fixture(scope="module")
def art(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("owner")
    (tmp / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp / "spec.yaml").write_text(SPEC)
    analyze.run(["--spec", str(tmp / "spec.yaml"), "--input", str(tmp / "in.jsonl"),
                 "--output", str(tmp / "art"), "--quiet", "--no_report"])
    return tmp


def _csv_without(tmp, column: str) -> str:
    path = str(tmp / f"no_{column}.csv")
    names = [k for k in ROWS[0] if k != column]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, names)
        w.writeheader()
        w.writerows({k: r[k] for k in names} for r in ROWS)
    return path


@pytest.mark.parametrize("column,owner,extra", [("store", "sales", []),
                                                ("u", "c", ["--out_of_fold"])])
def test_transform_names_the_owning_feature_like_analyze(art, capsys, column, owner, extra):
    data = _csv_without(art, column)
    code = cli.main(["transform", "--artifacts", str(art / "art"), "--input", data,
                     "--output", str(art / f"out_{column}"), *extra])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{column!r} (feature {owner!r})" in err, err
    assert f"(feature {column!r})" not in err
    assert "Traceback" not in err
    code = cli.main(["analyze", "--spec", str(art / "spec.yaml"), "--input", data,
                     "--output", str(art / f"art_{column}")])
    assert code == 1
    assert f"{column!r} (feature {owner!r})" in capsys.readouterr().err
