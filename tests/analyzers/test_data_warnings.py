"""Warnings about the data survive ``--quiet``: it hides progress and the summary only.

Expected lines are written from the CSV by hand: column ``x`` holds ``1, nan, inf, 2, 3``
(three finite values, one NaN, one inf), column ``y`` only finite values, and one row has a
cell that is not a number (a rejected row).
"""

from __future__ import annotations

from beam_prep.pipelines import analyze

from beam_prep.analyzers.data_warnings import data_warnings

_SPEC = "features:\n  - {name: x, kind: numeric}\n  - {name: y, kind: numeric}\n"
_ROWS = ["x,y", "1,1", "nan,2", "inf,3", "2,4", "3,5", "oops,6"]


def test_quiet_run_prints_no_summary_but_every_data_warning(tmp_path, capsys):
    (tmp_path / "spec.yaml").write_text(_SPEC, encoding="utf-8")
    (tmp_path / "d.csv").write_text("\n".join(_ROWS) + "\n", encoding="utf-8")
    code = analyze.main(["--spec", str(tmp_path / "spec.yaml"), "--input",
                         str(tmp_path / "d.csv"), "--output", str(tmp_path / "out"),
                         "--max_bad_fraction", "0.5", "--quiet", "--no_report"])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # no summary
    warnings = [line for line in captured.err.splitlines() if "warning:" in line]
    assert len(warnings) == 3, captured.err
    assert warnings[0].startswith("beam-prep analyze: warning: 1 of 6 rows rejected")
    assert "warning: x: 1 of 5 values NaN" in warnings[1]
    assert "warning: x: 1 of 5 values ±inf" in warnings[2]
    assert "analyze:" not in captured.err.replace("beam-prep analyze: warning", "")  # no progress


def test_null_statistics_are_warnings_with_their_reason():
    manifest = {
        "input": {"rows_read": 2, "rows_rejected": 0},
        "spec": {"features": [{"name": "s", "kind": "string"}, {"name": "w", "kind": "numeric"}]},
        "features": {
            "s": {"kind": "string", "stats": {}},
            "w": {"kind": "numeric", "stats": {
                "count": 2, "nan_count": 0, "infinite_count": 0,
                "null_reasons": {"variance": "too wide; set `scaling: none`"}}}},
    }
    assert data_warnings(manifest) == ["warning: w: variance null: too wide; set `scaling: none`"]


def test_clean_data_has_no_warning():
    manifest = {"input": {"rows_read": 1, "rows_rejected": 0},
                "spec": {"features": [{"name": "x", "kind": "numeric"}]},
                "features": {"x": {"kind": "numeric", "stats": {
                    "count": 1, "nan_count": 0, "infinite_count": 0, "null_reasons": {}}}}}
    assert data_warnings(manifest) == []
