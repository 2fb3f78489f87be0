"""`beam-prep train` refuses unusable inputs with one line on stderr and exit code 1.

Issue 13 item 8: empty ELWC files used to train nothing and export an untrained model (exit
0); a missing ``--config`` or ``feature_spec.json`` ended in a traceback. The data here is one
float feature ``x`` per document (no preprocessing layer needed), written as ELWC text protos.
"""

from __future__ import annotations

import json
import os
import warnings

import pytest
from google.protobuf import text_format
from tensorflow_serving.apis import input_pb2

from beam_prep.cli import main
from beam_prep.ranking.data.tfrecord import write_tfrecords
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo

SPEC = ElwcFeatureSpec(context=(), example=(FeatureInfo("x", "float", (), 0.0),),
                       label=LabelInfo("relevance", "int64", -1.0))

ELWC = """
examples { features { feature { key: "x" value { float_list { value: [0.5] } } }
                      feature { key: "relevance" value { int64_list { value: [1] } } } } }
examples { features { feature { key: "x" value { float_list { value: [-0.5] } } }
                      feature { key: "relevance" value { int64_list { value: [0] } } } } }
"""


def _one_list() -> bytes:
    return text_format.Parse(ELWC, input_pb2.ExampleListWithContext()).SerializeToString()


def _config(tmp_path, *, train: str, valid: str | None = None, spec: str | None = None) -> str:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    if spec is None:
        spec = str(data / "feature_spec.json")
        SPEC.save(spec)
    cfg = {
        "data": {"feature_spec": spec, "train_pattern": train, "valid_pattern": valid,
                 "list_size": 2, "train_batch_size": 1, "shuffle_buffer": 0},
        "model": {"hidden_sizes": [2]},
        "training": {"model_dir": str(tmp_path / "model"), "export_dir": str(tmp_path / "export"),
                     "epochs": 1, "steps_per_epoch": 1, "metrics_k": [1]},
    }
    path = tmp_path / "train.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    return str(path)


def _run(capsys, config: str) -> tuple[int, str]:
    code = main(["train", "--config", config])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("beam-prep train: error:")]
    return code, lines[0] if lines else err


def _assert_one_line_error(code: int, line: str, *needles: str) -> None:
    assert code == 1, line
    assert line.startswith("beam-prep train: error: "), line
    assert "Traceback" not in line and "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


@pytest.mark.parametrize("shards", [1, 2])
def test_train_files_without_records_fail_naming_the_pattern(tmp_path, capsys, shards):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(shards):
        if i % 2:
            (data / f"train-{i:05d}.tfrecord").write_bytes(b"")  # 0 bytes
        else:
            assert write_tfrecords(str(data / f"train-{i:05d}.tfrecord"), []) == 0
    pattern = str(data / "train-*.tfrecord")
    code, line = _run(capsys, _config(tmp_path, train=pattern))
    _assert_one_line_error(code, line, repr(pattern), "`data.train_pattern`",
                           f"{shards} file(s)", "no record")
    assert not os.path.exists(tmp_path / "export")  # nothing untrained was exported


def test_empty_validation_files_fail_naming_the_pattern(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    write_tfrecords(str(data / "train-00000.tfrecord"), [_one_list()])
    write_tfrecords(str(data / "valid-00000.tfrecord"), [])
    valid = str(data / "valid-*.tfrecord")
    code, line = _run(capsys, _config(tmp_path, train=str(data / "train-*.tfrecord"),
                                      valid=valid))
    _assert_one_line_error(code, line, repr(valid), "`data.valid_pattern`", "no record")


def test_missing_config_file_is_one_line(tmp_path, capsys):
    missing = str(tmp_path / "nope.yaml")
    code, line = _run(capsys, missing)
    _assert_one_line_error(code, line, "--config", repr(missing))


def test_overrides_may_stand_anywhere_and_a_stray_word_is_named(tmp_path, capsys):
    config = _config(tmp_path, train=str(tmp_path / "none-*.tfrecord"))
    code = main(["train", "1", "--config", config, "training.epochs=2"])
    line = capsys.readouterr().err.strip()
    _assert_one_line_error(code, line, "Overrides look like `section.key=value`",
                           "Received: '1'")
    code = main(["train", "training.seed=1", "--config", config, "training.epochs=x"])
    line = capsys.readouterr().err.strip()  # both reached the config: the bad one is named
    _assert_one_line_error(code, line, "epochs", "'x'")


def test_missing_feature_spec_is_one_line(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    write_tfrecords(str(data / "train-00000.tfrecord"), [_one_list()])
    missing = str(data / "no_feature_spec.json")
    code, line = _run(capsys, _config(tmp_path, train=str(data / "train-*.tfrecord"),
                                      spec=missing))
    _assert_one_line_error(code, line, "`data.feature_spec`", repr(missing))


def test_failure_writes_the_summary_json(tmp_path, capsys):
    missing = str(tmp_path / "nope.yaml")
    summary = tmp_path / "summary.json"
    code = main(["train", "--config", missing, "--summary_json", str(summary)])
    assert code == 1
    got = json.loads(summary.read_text())
    assert (got["command"], got["status"], got["error_type"]) == ("train", "failed",
                                                                  "InputError")
    assert repr(missing) in got["error"]
    assert capsys.readouterr().out == ""


@pytest.mark.slow  # ~35 s: trains one step and writes a SavedModel
def test_one_list_trains_and_exports(tmp_path, capsys):
    """The guards do not reject a single record: one step is taken and the model exported.

    Also the output contract: one epoch line on stderr, the summary on stdout and in
    --summary_json, and no Keras "shuffle=True ... ignored" warning (the dataset shuffles).
    """
    data = tmp_path / "data"
    data.mkdir()
    write_tfrecords(str(data / "train-00000.tfrecord"), [_one_list()])
    summary = tmp_path / "summary.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["train", "--config", _config(tmp_path, train=str(data / "train-*.tfrecord")),
                     "--summary_json", str(summary)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    got = json.loads(summary.read_text())
    assert got["status"] == "ok"
    assert (got["counts"]["steps"], got["counts"]["epochs"]) == (1, 1)
    export = got["outputs"]["export"]
    assert export and os.path.isdir(export)
    assert got["outputs"]["model_dir"] == str(tmp_path / "model")
    epoch_lines = [x for x in captured.err.splitlines() if x.startswith("epoch ")]
    assert len(epoch_lines) == 1 and epoch_lines[0].startswith("epoch 1/1: loss ")
    last = got["details"]["last_epoch"]
    assert last["epoch"] == 1 and f"loss {last['metrics']['loss']:.4f}" in epoch_lines[0]
    assert got["details"]["exported_metrics"] == last["metrics"]  # no validation: the last
    assert captured.out.startswith("beam-prep train: ok in ")
    assert f"  wrote export: {export}" in captured.out
    assert not [w for w in caught if "shuffle" in str(w.message)]
