"""One integer label column for a label-aware vocabulary (``labels``) and a target encoding.

The target encoding read its label as float64 and ``labels`` reads int64: the spec was
refused ("read as float64 ... and as int64") although the target statistics cast the label
to float64 anyway. The label is now read as another feature reads it (float64 or int64, as
a ``weights`` column); a string read is still refused. Oracle: numpy over the raw rows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from beam_prep.errors import SpecError


def _run(tmp_path, spec: str, rows: list[dict]) -> Artifacts:
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text(spec)
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                 "--output", str(tmp_path / "art"), "--quiet"])
    return Artifacts(str(tmp_path / "art"))


ROWS = [{"c": "abc"[i % 3], "y": int(i % 4 == 0), "u": i} for i in range(60)]


@pytest.mark.parametrize("first", ["te", "mi"])
def test_int_label_shared_by_mi_vocabulary_and_target_encoding(tmp_path, first):
    te = "  - {name: t, kind: string, column: c, target_encoding: {labels: y, fold_column: u}}\n"
    mi = "  - {name: m, kind: string, column: c, labels: y}\n"
    art = _run(tmp_path, "features:\n" + (te + mi if first == "te" else mi + te), ROWS)
    y = np.array([r["y"] for r in ROWS], np.float64)
    assert art.stats("t")["target_encoding"]["global_mean"] == y.mean()
    assert art.stats("m")["mutual_info"]["label_rows"] == {"0": int((y == 0).sum()),
                                                            "1": int((y == 1).sum())}


def test_label_read_as_text_by_another_feature_is_still_refused(tmp_path):
    spec = ("features:\n  - {name: y, kind: string}\n"
            "  - {name: t, kind: string, column: c, target_encoding: {labels: y, "
            "fold_column: u}}\n")
    with pytest.raises(SpecError, match="'y' is read as string"):
        _run(tmp_path, spec, ROWS)
