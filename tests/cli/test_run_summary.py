"""One summary style and --summary_json: the RunSummary type and the analyze command.

Expected counts come from the test data (lines written here), not from the code.
"""

from __future__ import annotations

import io
import json

import pytest
from beam_prep.pipelines import analyze

from beam_prep.errors import InputError, SpecError
from beam_prep.run_summary import RunSummary, SummaryRecorder


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_text_format_is_header_counts_then_outputs():
    s = RunSummary("make-elwc", "ok", 61.26, counts={"lists": 12345, "ndcg": 0.51234},
                   outputs={"train": "/o/train-00000-of-00001.tfrecord"})
    assert s.format().splitlines() == [
        "beam-prep make-elwc: ok in 61.3s",
        "  lists: 12,345",
        "  ndcg: 0.5123",
        "  wrote train: /o/train-00000-of-00001.tfrecord",
    ]


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="status='done'"):
        RunSummary("x", "done", 1.0)  # type: ignore[arg-type]


def test_recorder_writes_success_and_prints_unless_quiet(tmp_path):
    clock = FakeClock()
    out = io.StringIO()
    path = tmp_path / "s.json"
    with SummaryRecorder("generate", json_path=str(path), stream=out, clock=clock) as rec:
        clock.now = 2.5
        rec.succeed(counts={"features": 3}, outputs={"module": "pp.py"})
    assert json.loads(path.read_text()) == {
        "command": "generate", "status": "ok", "seconds": 2.5, "counts": {"features": 3},
        "outputs": {"module": "pp.py"}, "details": {}, "error": None, "error_type": None}
    assert out.getvalue() == ("beam-prep generate: ok in 2.5s\n  features: 3\n"
                              "  wrote module: pp.py\n")
    quiet = io.StringIO()
    with SummaryRecorder("generate", quiet=True, stream=quiet) as rec:
        rec.succeed()
    assert quiet.getvalue() == ""


def test_recorder_writes_failure_of_a_raised_error_and_reraises(tmp_path):
    path = tmp_path / "s.json"
    out = io.StringIO()
    with pytest.raises(InputError):
        with SummaryRecorder("train", json_path=str(path), stream=out):
            raise InputError("`data.train_pattern` matched no file.\nmore")
    got = json.loads(path.read_text())
    assert (got["status"], got["error"], got["error_type"]) == (
        "failed", "`data.train_pattern` matched no file.", "InputError")
    assert out.getvalue() == ""  # errors are printed by the command, on stderr


def test_recorder_without_result_is_a_failure(tmp_path):
    path = tmp_path / "s.json"
    with SummaryRecorder("train", json_path=str(path), stream=io.StringIO()):
        pass
    assert json.loads(path.read_text())["status"] == "failed"


def test_unwritable_summary_path_names_the_flag(tmp_path):
    with pytest.raises(InputError, match="--summary_json"):
        with SummaryRecorder("x", json_path=str(tmp_path / "no" / "s.json"),
                             stream=io.StringIO()) as rec:
            rec.succeed()


def _write(tmp_path, n_rows: int):
    data = tmp_path / "d.csv"
    data.write_text("city,price\n" + "".join(f"c{i % 3},{i}\n" for i in range(n_rows)),
                    encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: city, kind: string}\n"
                    "  - {name: price, kind: numeric}\n", encoding="utf-8")
    return str(spec), str(data)


def test_analyze_summary_json_and_text(tmp_path, capsys):
    spec, data = _write(tmp_path, 7)
    out, summary = str(tmp_path / "art"), tmp_path / "summary.json"
    code = analyze.main(["--spec", spec, "--input", data, "--output", out,
                         "--summary_json", str(summary)])
    assert code == 0
    got = json.loads(summary.read_text())
    assert got["command"] == "analyze" and got["status"] == "ok" and got["error"] is None
    assert got["counts"] == {"rows_read": 7, "rows_rejected": 0, "features": 2, "splits": 1}
    assert got["outputs"] == {"artifacts": out, "manifest": f"{out}/manifest.json",
                              "run_record": f"{out}/run.json", "report": f"{out}/report.html"}
    assert got["seconds"] > 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("beam-prep analyze: ok in ")
    assert "  rows_read: 7" in lines and f"  wrote artifacts: {out}" in lines
    # stderr is not a terminal here: the final plain progress line.
    progress = [x for x in captured.err.splitlines() if x.startswith("beam-prep analyze: ")]
    assert progress[-1].startswith("beam-prep analyze: 1/1 splits, 7 rows, ")


def test_analyze_failure_writes_summary_json(tmp_path, capsys):
    spec, data = _write(tmp_path, 3)
    (tmp_path / "spec.yaml").write_text("features:\n  - {name: city, kind: strin}\n")
    summary = tmp_path / "summary.json"
    with pytest.raises(SpecError):
        analyze.main(["--spec", spec, "--input", data, "--output", str(tmp_path / "art"),
                      "--summary_json", str(summary), "--quiet"])
    got = json.loads(summary.read_text())
    assert got["status"] == "failed" and got["error_type"] == "SpecError"
    assert "strin" in got["error"]
    assert capsys.readouterr().out == ""


LETOR = """2 qid:1 1:0.5 2:1
0 qid:1 1:0.1 2:0
1 qid:2 1:0.3
0 qid:2 2:0.2
this line is not letor
1 qid:3 1:1 2:1
0 qid:3 1:0
0 qid:3 2:0.7
"""


def test_make_elwc_summary_json_counts_lists_documents_and_rejects(tmp_path, capsys):
    from beam_prep.pipelines import make_elwc

    data = tmp_path / "in.txt"
    data.write_text(LETOR, encoding="utf-8")
    out, summary = str(tmp_path / "elwc"), tmp_path / "summary.json"
    code = make_elwc.main(["--input", str(data), "--output", out, "--num_shards", "1",
                           "--max_bad_fraction", "0.5", "--summary_json", str(summary)])
    assert code == 0
    got = json.loads(summary.read_text())
    assert got["status"] == "ok" and got["command"] == "make-elwc"
    counts = got["counts"]
    # 3 queries -> 3 lists of 2, 2 and 3 documents; 8 lines, one of them not LETOR.
    assert (counts["lists"], counts["documents"], counts["queries"]) == (3, 7, 3)
    assert (counts["input_files"], counts["input_lines"], counts["lines_rejected"]) == (1, 8, 1)
    assert (counts["train_lists"], counts["train_documents"]) == (3, 7)
    assert got["outputs"]["stats"] == f"{out}/stats.json"
    assert got["details"]["output_files"]["train"] == [got["outputs"]["train"]]
    text = capsys.readouterr()
    assert text.out.startswith("beam-prep make-elwc: ok in ")
    assert "  lists: 3\n" in text.out
    assert "beam-prep make-elwc: 1/1 pieces, 8 lines (1 rejected), " in text.err


def test_make_elwc_failure_writes_summary_json(tmp_path, capsys):
    from beam_prep.pipelines import make_elwc

    data = tmp_path / "in.txt"
    data.write_text(LETOR, encoding="utf-8")
    summary = tmp_path / "summary.json"
    with pytest.raises(InputError):
        make_elwc.main(["--input", str(data), "--output", str(tmp_path / "elwc"), "--quiet",
                        "--summary_json", str(summary)])  # 1 of 8 lines > 1% bad
    got = json.loads(summary.read_text())
    assert got["status"] == "failed" and got["error_type"] == "InputError"
    assert "--max_bad_fraction" in got["error"]
    assert capsys.readouterr().out == ""


def test_benign_worker_notice_is_dropped_and_other_worker_warnings_kept(caplog):
    import logging

    from beam_prep.pipelines.job_logging import BEAM_WORKER_RELAY_LOGGER, quiet_beam_worker_notices

    quiet_beam_worker_notices()
    relay = logging.getLogger(BEAM_WORKER_RELAY_LOGGER)
    with caplog.at_level(logging.WARNING, logger=BEAM_WORKER_RELAY_LOGGER):
        relay.warning("Worker: %s", 'message: "No semi_persistent_directory found:  User '
                                    'registered objects ... may not be effective"')
        relay.warning("Worker: %s", 'message: "SDK harness crashed"')
    assert [r.getMessage() for r in caplog.records] == [
        'Worker: message: "SDK harness crashed"']


@pytest.mark.slow  # starts two Beam worker processes
def test_analyze_progress_counts_splits_done_by_worker_processes(tmp_path, capsys):
    spec, first = _write(tmp_path, 4)
    (tmp_path / "e.csv").write_text("city,price\nx,1\ny,2\n", encoding="utf-8")
    summary = tmp_path / "s.json"
    code = analyze.main(["--spec", spec, "--input", first, "--input", str(tmp_path / "e.csv"),
                         "--output", str(tmp_path / "art"), "--summary_json", str(summary),
                         "--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    assert code == 0
    got = json.loads(summary.read_text())
    assert got["counts"]["splits"] == 2 and got["counts"]["rows_read"] == 6
    err = capsys.readouterr().err
    assert "beam-prep analyze: 2/2 splits, 6 rows, " in err
    assert "semi_persistent_directory" not in err
