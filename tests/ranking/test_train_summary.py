"""`beam-prep train`'s summary names the epoch the exported model holds and says when the
run resumed a previous `training.model_dir` (issue 21 item 9)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from beam_prep.pipelines.train import _epoch_counts

from beam_prep.ranking.train.epoch_log import EpochPrinter, exported_epoch


def _hp(epochs: int, metric: str | None = "val_ndcg_10"):
    return SimpleNamespace(training=SimpleNamespace(epochs=epochs, model_dir="out/ranker",
                                                    early_stopping_metric=metric))


@pytest.mark.parametrize("history, first, metric, want", [
    # The best value is reached first at epoch 2 (a tie later does not move it).
    ({"loss": [3, 2, 1], "val_ndcg_10": [0.5, 0.8, 0.8]}, 1, "val_ndcg_10",
     (2, "best val_ndcg_10 0.8000")),
    # A loss is minimised.
    ({"loss": [3, 2, 1], "val_loss": [1.0, 0.5, 0.7]}, 1, "val_loss", (2, "best val_loss 0.5000")),
    # Resumed after 5 epochs: this run's epochs are 6 and 7.
    ({"loss": [3, 2], "val_ndcg_10": [0.9, 0.1]}, 6, "val_ndcg_10", (6, "best val_ndcg_10 0.9000")),
    # No validation: the model holds the last epoch.
    ({"loss": [3, 2, 1]}, 1, "val_ndcg_10", (3, "last epoch")),
    ({"loss": [3, 2, 1]}, 1, None, (3, "last epoch")),
    ({}, 1, "val_ndcg_10", None),
])
def test_exported_epoch(history, first, metric, want):
    assert exported_epoch(history, first_epoch=first, metric=metric) == want


def test_summary_of_a_fresh_run_names_the_best_epoch():
    result = SimpleNamespace(history={"loss": [3, 2, 1], "val_ndcg_10": [0.5, 0.8, 0.7]},
                             steps=30)
    counts = _epoch_counts(result, _hp(3), [0, 1, 2])
    assert counts == {"exported_epoch": "2 of 3 (best val_ndcg_10 0.8000)"}


def test_summary_of_a_resumed_run_says_so():
    result = SimpleNamespace(history={"loss": [2, 1], "val_ndcg_10": [0.6, 0.9]}, steps=40)
    counts = _epoch_counts(result, _hp(4), [2, 3])
    assert counts["resumed"].startswith("out/ranker held 2 of 4 epochs")
    assert counts["exported_epoch"] == "4 of 4 (best val_ndcg_10 0.9000)"


def test_summary_of_a_run_with_nothing_left_to_train():
    result = SimpleNamespace(history={}, steps=40)
    counts = _epoch_counts(result, _hp(4), [])
    assert counts["resumed"].startswith("out/ranker held 4 of 4 epochs")
    assert counts["exported_epoch"] == "the restored state (no epoch left to train)"


def test_silent_printer_records_epochs_and_prints_nothing():
    import io

    out = io.StringIO()
    printer = EpochPrinter(epochs=3, stream=out, silent=True)
    printer(1, {"loss": 1.0})
    printer(2, {"loss": 0.5})
    assert printer.seen == [1, 2] and out.getvalue() == ""


@pytest.mark.slow  # two short trainings (~60 s)
def test_cli_summary_after_a_resume(tmp_path, capsys):
    from beam_prep.cli import main
    from beam_prep.ranking.data.tfrecord import write_tfrecords
    from tests.ranking.test_train_cli import _config, _one_list

    data = tmp_path / "data"
    data.mkdir()
    write_tfrecords(str(data / "train-00000.tfrecord"), [_one_list()])
    write_tfrecords(str(data / "validation-00000.tfrecord"), [_one_list()])
    config = _config(tmp_path, train=str(data / "train-*.tfrecord"),
                     valid=str(data / "validation-*.tfrecord"))
    summary = tmp_path / "s.json"
    watch = "training.early_stopping_metric=val_ndcg_1"
    assert main(["train", "--config", config, watch, "--summary_json", str(summary)]) == 0
    first = json.loads(summary.read_text())["counts"]
    assert "resumed" not in first and first["exported_epoch"].startswith("1 of 1 (best ")
    capsys.readouterr()
    assert main(["train", "--config", config, watch, "training.epochs=2",
                 "--summary_json", str(summary)]) == 0
    out = capsys.readouterr().out
    second = json.loads(summary.read_text())["counts"]
    assert second["resumed"].startswith(f"{tmp_path / 'model'} held 1 of 2 epochs")
    assert second["exported_epoch"].startswith("2 of 2 (best ")
    assert f"  resumed: {second['resumed']}" in out
    assert f"  exported_epoch: {second['exported_epoch']}" in out
