"""`beam-prep train`'s summary names the epoch the exported model holds and says when the
run resumed a previous `training.model_dir` (issue 21 item 9)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from beam_prep.pipelines.train import _epoch_counts

from beam_prep.ranking.train.epoch_log import EpochPrinter
from beam_prep.ranking.train.run_state import EpochTracker, RunState


def _hp(epochs: int, metric: str | None = "val_ndcg_10"):
    return SimpleNamespace(training=SimpleNamespace(epochs=epochs, model_dir="out/ranker",
                                                    export_dir="out/ranker/export",
                                                    early_stopping_metric=metric,
                                                    early_stopping_patience=1),
                           model=SimpleNamespace(ensemble=1))


def _result(state, *, epochs, first=0, exported=True, finished_before=False):
    tracker = EpochTracker(state, patience=1)
    history = {"loss": [], "val_ndcg_10": []}
    for i, value in enumerate(epochs):
        history["loss"].append(1.0)
        history["val_ndcg_10"].append(value)
        tracker.epoch_end(first + i, {"loss": 1.0, "val_ndcg_10": value})
    best = state.best_or_last()
    if state.export is None:  # the record of the export (this run's or an earlier one's)
        state.export = {"path": "out/ranker/export", "epoch": best["epoch"],
                        "metrics": best["metrics"]}
    return SimpleNamespace(history=history, steps=30, state=state, exported=exported,
                           finished_before=finished_before)


def test_summary_labels_the_exported_and_the_last_epoch():
    result = _result(RunState(epochs=3, monitor="val_ndcg_10"), epochs=[0.5, 0.8, 0.7])
    counts = _epoch_counts(result, _hp(3), [0, 1, 2])
    assert counts == {
        "exported_epoch": "2 of 3 (best val_ndcg_10 0.8000)",
        "exported_model": "loss 1.0000, val_ndcg_10 0.8000",
        "export": "written",
        "last_epoch": "3 of 3: loss 1.0000, val_ndcg_10 0.7000",
        "stopped_early": "after epoch 3 (1 epochs without a better val_ndcg_10)",
    }


BUDGET = ("ended at its epoch budget while val_ndcg_10 was still improving (best at the last "
          "epoch); raise training.epochs")


@pytest.mark.parametrize("values,budget", [
    ([0.5, 0.6, 0.7], True),     # the last epoch is the best, all epochs used
    ([0.5, 0.8, 0.7], False),    # an earlier epoch is the best
    ([0.5, 0.4, 0.3], False),    # stopped early (patience 1 here)
])
def test_summary_says_when_the_run_ended_at_its_budget_while_improving(values, budget):
    state = RunState(epochs=len(values), monitor="val_ndcg_10")
    result = _result(state, epochs=values)
    counts = _epoch_counts(result, _hp(len(values)), list(range(len(values))))
    assert counts.get("budget") == (BUDGET if budget else None)


@pytest.mark.parametrize("members,line", [
    ([[0.5, 0.6], [0.5, 0.4]], "member 1 ended at its"),
    ([[0.5, 0.6], [0.7, 0.6], [0.1, 0.2]], "members 1, 3 ended at their"),
    ([[0.5, 0.6], [0.1, 0.2]], "every member ended at its"),
    ([[0.6, 0.5], [0.5, 0.5]], None),          # each member's best came earlier
])
def test_an_ensembles_summary_names_the_members_that_ended_while_improving(
        monkeypatch, members, line):
    """An ensemble's own record has no epochs; its members' records say whether more epochs
    would likely help (the TF and JAX launchers write them alike)."""
    from beam_prep.pipelines import train

    states = []
    for values in members:
        state = RunState(epochs=2, monitor="val_ndcg_10")
        _result(state, epochs=values)
        states.append(state)
    monkeypatch.setattr(train, "_member_states", lambda hparams: states)
    hp = _hp(2)
    hp.model.ensemble = len(members)
    ensemble = SimpleNamespace(history={}, steps=0, exported=True, finished_before=False,
                               state=RunState(epochs=2, export={
                                   "path": "out/ranker/export", "epoch": None, "metrics": {},
                                   "members": len(members)}))
    counts = _epoch_counts(ensemble, hp, [0, 1] * len(members))
    want = None if line is None else (
        f"{line} epoch budget while val_ndcg_10 was still improving (best at the last "
        "epoch); raise training.epochs")
    assert counts.get("budget") == want
    assert counts["members"].startswith("epochs 2, ") or line is None


def test_no_budget_line_without_a_monitored_metric():
    state = RunState(epochs=2, monitor=None)
    result = _result(state, epochs=[0.5, 0.6])
    assert "budget" not in _epoch_counts(result, _hp(2, metric=None), [0, 1])


def test_summary_of_a_resumed_run_says_so():
    state = RunState(epochs=4, monitor="val_ndcg_10", epochs_done=2,
                     best={"epoch": 1, "value": 0.9, "metrics": {"val_ndcg_10": 0.9}})
    result = _result(state, epochs=[0.6], first=2, exported=True)
    counts = _epoch_counts(result, _hp(4), [2])
    assert counts["resumed"].startswith("out/ranker held 2 of 4 epochs")
    assert counts["exported_epoch"] == "1 of 4 (best val_ndcg_10 0.9000)"
    assert counts["last_epoch"] == "3 of 4: loss 1.0000, val_ndcg_10 0.6000"


def test_summary_of_a_finished_run_says_nothing_was_trained():
    state = RunState(epochs=1, monitor="val_ndcg_10")
    result = _result(state, epochs=[0.5], exported=False, finished_before=True)
    result.history = {}
    counts = _epoch_counts(result, _hp(1), [])
    assert counts["finished"].startswith("out/ranker holds a finished run; nothing")
    assert counts["export"] == "unchanged: out/ranker/export (it holds the best epoch)"


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
    assert "resumed" not in first and first["export"] == "written"
    capsys.readouterr()
    assert main(["train", "--config", config, watch, "training.epochs=2",
                 "--summary_json", str(summary)]) == 0
    out = capsys.readouterr().out
    second = json.loads(summary.read_text())["counts"]
    assert second["resumed"].startswith(f"{tmp_path / 'model'} held 1 of 2 epochs")
    assert second["exported_epoch"].startswith(("1 of 2 (best ", "2 of 2 (best "))
    assert second["last_epoch"].startswith("2 of 2: loss ")
    assert f"  resumed: {second['resumed']}" in out
    assert f"  exported_epoch: {second['exported_epoch']}" in out
