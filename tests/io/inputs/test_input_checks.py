"""Launch-time input checks: globs that cannot be listed, and columns of sparse formats.

Expected messages and column lists are written from how each input is built here.
"""

from __future__ import annotations

import json
import logging

import pytest
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import InputError
from beam_prep.io.inputs import readers
from beam_prep.io.inputs.readers import check_columns, expand_patterns
from tests.io.commit.test_output_gcs import gcs  # noqa: F401 (fixture: the GCS emulator)


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_a_key_absent_from_the_first_jsonl_file_is_legal(tmp_path, caplog):
    first = _jsonl(tmp_path / "a.jsonl", [{"x": 1}, {"x": 2}])
    second = _jsonl(tmp_path / "b.jsonl", [{"x": 3, "rare": "r"}])
    with caplog.at_level(logging.WARNING, logger="beam_prep"):
        assert check_columns([first, second], "jsonl", {"x": "fx", "rare": "fr"}) == []
    assert not caplog.records


def test_a_jsonl_key_seen_nowhere_warns_and_does_not_fail(tmp_path, caplog):
    first = _jsonl(tmp_path / "a.jsonl", [{"x": 1}])
    with caplog.at_level(logging.WARNING, logger="beam_prep"):
        assert check_columns([first], "jsonl", {"x": "fx", "typo": "ft"}) == ["typo"]
    (record,) = caplog.records
    assert "'typo' (feature 'ft')" in record.getMessage()
    assert "counted as missing" in record.getMessage()


def test_only_the_first_files_are_sampled(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "CHECK_SAMPLE_FILES", 2)
    paths = [_jsonl(tmp_path / f"{i}.jsonl", [{"x": i}]) for i in range(3)]
    _jsonl(tmp_path / "2.jsonl", [{"x": 2, "late": 1}])
    assert check_columns(paths, "jsonl", {"late": "fl"}) == ["late"]


def test_csv_keeps_failing_on_an_absent_column(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match=r"'c' \(feature 'fc'\) not found"):
        check_columns([str(p)], "csv", {"c": "fc"})


def test_an_unreadable_input_file_is_one_input_error(tmp_path, monkeypatch):
    def forbidden(*_args, **_kwargs):
        raise PermissionError("403 GET gs://b/a.csv: caller does not have storage.objects.get")

    monkeypatch.setattr(readers.FileSystems, "open", forbidden)
    with pytest.raises(InputError, match=r"Cannot read input file gs://b/a.csv: "
                                         r"PermissionError: 403"):
        check_columns(["gs://b/a.csv"], "csv", {"a": "fa"})


def test_an_unknown_scheme_is_one_line_naming_the_pattern():
    with pytest.raises(InputError) as info:
        expand_patterns(["zz://bucket/*.csv"])
    message = str(info.value)
    assert message.startswith("Cannot list the input files of --input 'zz://bucket/*.csv': "
                              "ValueError: Unable to get filesystem")
    assert "\n" not in message


def test_a_listing_failure_shows_the_inner_cause_on_one_line(monkeypatch):
    inner = RuntimeError("404 Not Found: bucket nope does not exist\n<html>...</html>")

    def failing(patterns, limits=None):
        raise BeamIOError("Match operation failed", {patterns[0]: inner})

    monkeypatch.setattr(FileSystems, "match", failing)
    with pytest.raises(InputError) as info:
        expand_patterns(["gs://nope/*.csv"])
    assert str(info.value).startswith(
        "Cannot list the input files of --input 'gs://nope/*.csv': RuntimeError: 404 Not Found: "
        "bucket nope does not exist. Check")
    assert "\n" not in str(info.value)


def test_a_pattern_matching_nothing_names_it(tmp_path):
    with pytest.raises(InputError, match="No input file matches"):
        expand_patterns([str(tmp_path / "*.csv")])


def test_a_missing_bucket_on_a_real_gcs_api_is_one_input_error(gcs):  # noqa: F811
    with pytest.raises(InputError) as info:
        expand_patterns(["gs://no-such-bucket-beam-prep/data/*.csv"])
    message = str(info.value)
    assert message.startswith("Cannot list the input files of --input "
                              "'gs://no-such-bucket-beam-prep/data/*.csv': ")
    assert "\n" not in message


def test_a_glob_on_a_real_gcs_api_lists_its_objects(gcs):  # noqa: F811
    for name in ("b.csv", "a.csv"):
        with FileSystems.create(f"{gcs}/in/{name}") as f:
            f.write(b"x\n1\n")
    assert expand_patterns([f"{gcs}/in/*.csv"]) == [f"{gcs}/in/a.csv", f"{gcs}/in/b.csv"]
