"""A cache folder the job cannot write into (read-only or full) still gives a true summary:
the splits analysed and taken from the cache are counted from the run, the run record is
said not written (no "wrote cache_run: PATH" for a file that does not exist), in the text
summary and in --summary_json alike.

The failures are made without root-only tools: a regular file where the job needs the
``runs/`` (or ``entries/``) folder makes every write there fail, as a read-only or full
filesystem does.
"""

from __future__ import annotations

import json
import os

import pytest

from beam_prep import cli

FILES = 3  # one split each


@pytest.fixture()
def data(tmp_path):
    for k in range(FILES):
        (tmp_path / f"in{k}.jsonl").write_text(
            "".join(json.dumps({"c": f"t{i % 7}", "x": float(i + k)}) + "\n" for i in range(40)))
    (tmp_path / "spec.yaml").write_text(
        "features:\n  - {name: c, kind: string}\n  - {name: x, kind: numeric}\n")
    return tmp_path


def _analyze(data, cache: str, out: str, capsys) -> tuple[dict, str]:
    summary = str(data / f"{out}.json")
    code = cli.main(["analyze", "--spec", str(data / "spec.yaml"), "--input",
                     str(data / "in*.jsonl"), "--output", str(data / out), "--cache_dir", cache,
                     "--summary_json", summary, "--no_report"])
    assert code == 0
    with open(summary, encoding="utf-8") as f:
        return json.load(f), capsys.readouterr().err


def test_unwritable_run_record_is_said_and_counts_are_true(data, capsys):
    cache = data / "cache"
    cache.mkdir()
    (cache / "runs").write_text("a file where the runs folder should be\n")
    body, err = _analyze(data, str(cache), "a1", capsys)
    assert body["counts"]["cache_hits"] == 0 and body["counts"]["cache_misses"] == FILES
    assert body["counts"]["cache_run"].startswith("not written")
    assert "cache_run" not in body["outputs"]
    assert f"0 split(s) from {cache}, {FILES} analysed and stored; the run record was not " \
           "written" in err
    # the entries were stored: the next run takes every split from the cache
    body, err = _analyze(data, str(cache), "a2", capsys)
    assert (body["counts"]["cache_hits"], body["counts"]["cache_misses"]) == (FILES, 0)
    assert f"{FILES} split(s) from {cache}, 0 analysed" in err
    assert "cache_run" not in body["outputs"]


def test_unwritable_entries_are_counted_as_analysed_not_stored(data, capsys):
    cache = data / "cache"
    cache.mkdir()
    (cache / "entries").write_text("a file where the entries folder should be\n")
    body, err = _analyze(data, str(cache), "b1", capsys)
    counts = body["counts"]
    assert (counts["cache_hits"], counts["cache_misses"]) == (0, FILES)
    assert counts["cache_entries_not_stored"] == FILES
    assert "cache_run" not in counts  # the record itself was written
    record = body["outputs"]["cache_run"]
    assert os.path.exists(record)
    with open(record, encoding="utf-8") as f:
        assert json.load(f)["not_stored"] == FILES
    assert f"{FILES} analysed ({FILES} not stored: {cache} cannot be written)" in err
    assert counts["rows_read"] == FILES * 40
