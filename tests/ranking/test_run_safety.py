"""Run safety of `beam-prep train` (issue 29 items 2-5): the best model survives reruns and
resumes, non-finite training never exports, a huge float32 value trains finitely with the
default input transform, and Ctrl-C stops with one line and exit code 130.

The end-to-end data is one float feature ``x`` per document (tests/ranking/test_train_cli.py).
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from google.protobuf import text_format
from tensorflow_serving.apis import input_pb2

from beam_prep.errors import InputError, SpecError
from beam_prep.ranking.train import guard
from beam_prep.ranking.train.epoch_log import EpochPrinter
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.ranking.train.interrupt import Interrupted, InterruptHandler, in_finalizer
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.run_state import (
    EpochTracker,
    RunState,
    check_export_placement,
    check_model_dir,
    clear_training_state,
    load_state,
    member_dirs,
    save_state,
)

HUGE_LIST = """
examples { features { feature { key: "x" value { float_list { value: [3e38] } } }
                      feature { key: "relevance" value { int64_list { value: [1] } } } } }
examples { features { feature { key: "x" value { float_list { value: [1e38] } } }
                      feature { key: "relevance" value { int64_list { value: [0] } } } } }
"""


# ---- the run record ---------------------------------------------------------------------

def test_a_resumed_tracker_keeps_the_better_recorded_epoch_and_its_patience():
    state = RunState(epochs=10, monitor="val_ndcg_10", epochs_done=7,
                     best={"epoch": 6, "value": 0.8004, "metrics": {"val_ndcg_10": 0.8004}},
                     bad_epochs=1)
    saved = []
    tracker = EpochTracker(state, patience=3, save_best=lambda: saved.append(True))
    assert tracker.epoch_end(7, {"loss": 1.0, "val_ndcg_10": 0.7857}) is False  # epoch 8
    assert tracker.epoch_end(8, {"loss": 0.9, "val_ndcg_10": 0.8004}) is True   # a tie: no
    assert saved == [] and state.best["epoch"] == 6 and state.bad_epochs == 3
    assert state.stopped_early and state.finished and state.is_finished(10)
    assert state.last == {"epoch": 9, "metrics": {"loss": 0.9, "val_ndcg_10": 0.8004}}
    assert not tracker.best_is_in_memory()


def test_loss_is_minimised_and_a_strict_improvement_resets_the_patience():
    state = RunState(epochs=5, monitor="val_loss")
    tracker = EpochTracker(state, patience=2)
    for epoch, value in enumerate([1.0, 1.2, 0.9, 1.1]):
        assert tracker.epoch_end(epoch, {"val_loss": value}) is False
    assert state.best["epoch"] == 3 and state.bad_epochs == 1 and not state.finished
    assert tracker.epoch_end(4, {"val_loss": 0.5}) is False
    assert state.finished and not state.stopped_early and tracker.best_is_in_memory()


def test_without_the_monitored_metric_the_last_epoch_is_the_best():
    state = RunState(epochs=2, monitor="val_ndcg_10")
    tracker = EpochTracker(state, patience=1)
    tracker.epoch_end(0, {"loss": 2.0})
    tracker.epoch_end(1, {"loss": 3.0})
    assert state.best["epoch"] == 2 and state.best_or_last()["metrics"] == {"loss": 3.0}


def test_the_record_is_readable_json_and_round_trips(tmp_path):
    state = RunState(epochs=3, monitor="val_ndcg_10", epochs_done=2,
                     best={"epoch": 1, "value": 0.5, "metrics": {"val_ndcg_10": 0.5}})
    save_state(str(tmp_path), state)
    raw = json.loads((tmp_path / "run_state.json").read_text())
    assert raw["best"]["epoch"] == 1 and raw["format"] == "beam_prep.run_state"
    assert load_state(str(tmp_path)) == state
    (tmp_path / "run_state.json").write_text("{not json")
    with pytest.raises(InputError, match="--retrain"):
        load_state(str(tmp_path))


@pytest.mark.parametrize("edit, message", [
    ({"settings": "model.hidden_sizes"}, "settings must be a mapping or null"),
    ({"epochs_done": "2"}, "epochs_done must be an integer, not '2'"),
    ({"epochs_done": -1}, "epochs_done must be >= 0"),
    ({"finished": 1}, "finished must be true or false"),
    ({"best": 5}, "best must be null or a mapping"),
    ({"best": {"epoch": 2, "metrics": {}}}, "best has no `value`"),
    ({"best": {"epoch": "2", "value": 0.5, "metrics": {}}}, "best.epoch must be an integer"),
    ({"best": {"epoch": 2, "value": "x", "metrics": {}}}, "best.value must be a number"),
    ({"last": {"epoch": 2, "metrics": {"loss": "x"}}}, "last.metrics.loss must be a number"),
    ({"lr_scale": "x"}, "lr_scale must be a number, not 'x'"),
    ({"bad_epochs": True}, "bad_epochs must be an integer"),
])
def test_a_hand_edited_record_with_a_wrong_type_is_one_error(tmp_path, edit, message):
    save_state(str(tmp_path), RunState(epochs=3, monitor="val_ndcg_10", epochs_done=2,
                                       best={"epoch": 1, "value": 0.5, "metrics": {}}))
    raw = json.loads((tmp_path / "run_state.json").read_text())
    (tmp_path / "run_state.json").write_text(json.dumps({**raw, **edit}))
    with pytest.raises(InputError, match=r"run_state.json is not a beam-prep run record \("
                       + re.escape(message) + r".*Delete it, or rerun with --retrain"):
        load_state(str(tmp_path))


def test_fewer_epochs_than_done_is_finished():
    interrupted = RunState(epochs=5, epochs_done=3)  # not finished: stopped by Ctrl-C
    assert interrupted.is_finished(2) and interrupted.is_finished(3)
    assert not interrupted.is_finished(4)
    early = RunState(epochs=5, epochs_done=2, finished=True, stopped_early=True)
    assert early.is_finished(10)


@pytest.mark.parametrize("model_dir, export_dir", [
    ("out/x", "out/x"), ("out/x/", "out/x"), ("out/x/m", "out/x"), ("out/x", "out/x/ckpt"),
    ("out/x", "out/x/backup/e"), ("out/x", "out/x/member_1"), ("gs://b/x", "gs://b/x/"),
    ("gs://b/x/m", "gs://b"),
])
def test_an_export_dir_holding_the_model_dir_or_its_state_is_refused(model_dir, export_dir):
    with pytest.raises(SpecError, match=r"`training.export_dir` .* holds or is model_dir .* "
                                        r"each export replaces its whole folder"):
        check_export_placement(model_dir, export_dir)
    for fine in ("out/x/export", "out/x/ckpt2", "elsewhere/export"):
        check_export_placement("out/x", fine)


def test_the_export_target_and_the_model_dir_are_checked_before_training(tmp_path):
    target = tmp_path / "export"
    guard.check_export_target(str(target))  # absent: fine
    target.mkdir()
    guard.check_export_target(str(target))  # empty: fine
    (target / "notes.txt").write_text("precious")
    with pytest.raises(InputError, match=r"export_dir` .*export holds files that are not a "
                                         r"SavedModel \(notes.txt\), and each export replaces"):
        guard.check_export_target(str(target))
    (target / "saved_model.pb").write_text("")
    guard.check_export_target(str(target))  # an earlier export: replaced
    with pytest.raises(InputError, match=r"export_dir` .*notes.txt is a file"):
        guard.check_export_target(str(target / "notes.txt"))
    with pytest.raises(InputError, match=r"`training.model_dir` .*notes.txt is a file"):
        check_model_dir(str(target / "notes.txt"))
    with pytest.raises(InputError, match=r"`training.model_dir` .*notes.txt/run cannot be "
                                         r"written to \(.*\)\. Make it writable"):
        check_model_dir(str(target / "notes.txt" / "run"))
    check_model_dir(str(tmp_path / "new" / "run"))
    assert os.listdir(tmp_path / "new" / "run") == []  # created, nothing left behind


def test_retrain_clears_the_members_of_any_ensemble_size(tmp_path):
    for name in ("member_0", "member_1", "member_2", "member_x", "export", "ckpt"):
        (tmp_path / name).mkdir()
    assert member_dirs(str(tmp_path)) == ("member_0", "member_1", "member_2")
    clear_training_state(str(tmp_path), member_dirs(str(tmp_path)))
    assert sorted(os.listdir(tmp_path)) == ["export", "member_x"]


def test_export_dir_defaults_to_the_model_dirs_export():
    text = "data: {feature_spec: f, train_pattern: t, list_size: 2, train_batch_size: 1}\n"
    hp = RankingHparams.from_yaml_text(text + "training: {model_dir: out/run1}")
    assert hp.training.export_dir == "out/run1/export"
    hp = RankingHparams.from_yaml_text(text + "training: {model_dir: out/run2/}",
                                       overrides=["training.export_dir=null"])
    assert hp.training.export_dir is None
    assert hp.model.resolved_input_transform == "log1p"


# ---- finite guard and staged export -----------------------------------------------------

def test_find_out_of_range_names_the_worst_feature_of_real_entries():
    labels = np.array([[1, 0, -1], [0, 1, 1]])
    fine = np.zeros((2, 3), "float32")
    huge = np.array([[0, 1e20, 3e38], [0, 0, 2e30]], "float32")  # 3e38 sits on padding
    ids = np.full((2, 3), 10**12, "int64")
    got = guard.find_out_of_range([({"a": fine, "b": huge, "id": ids}, labels)],
                                  ["a", "b", "id"])
    assert got == ("b", pytest.approx(2e30, rel=1e-6), 1)
    nan = np.array([[np.nan, 0, 0], [0, 0, 0]], "float32")
    assert guard.find_out_of_range([({"a": nan, "b": huge}, labels)], ["a", "b"])[0] == "a"
    assert guard.find_out_of_range([({"a": fine}, labels)], ["a"]) is None


def test_check_scores_refuses_a_non_finite_real_document_only():
    labels = np.array([[1, -1]])
    guard.check_scores(np.array([[0.5, np.nan]]), labels, what="a validation batch")
    with pytest.raises(guard.NonFiniteError, match="1 of the 1 documents of a validation"):
        guard.check_scores(np.array([[np.inf, 0.0]]), labels, what="a validation batch")


def test_a_failed_export_leaves_the_previous_one_untouched(tmp_path):
    path = str(tmp_path / "export")

    def write(text):
        def go(staging):
            os.makedirs(staging)
            with open(os.path.join(staging, "saved_model.pb"), "w") as f:
                f.write(text)
            if text == "broken":
                raise RuntimeError("disk full")
        return go

    guard.write_staged(path, write("v1"))
    with pytest.raises(RuntimeError):
        guard.write_staged(path, write("broken"))
    assert open(os.path.join(path, "saved_model.pb")).read() == "v1"
    assert sorted(os.listdir(tmp_path)) == ["export"]  # no staging left behind
    guard.write_staged(path, write("v2"))
    assert open(os.path.join(path, "saved_model.pb")).read() == "v2"
    # A swap cut between its two renames: the next run puts the old export back.
    os.rename(path, path + ".previous")
    guard.recover_export(path)
    assert open(os.path.join(path, "saved_model.pb")).read() == "v2"


# ---- resumes keep the settings that shape the checkpoints --------------------------------

@pytest.mark.parametrize("loop", ["fit", "custom"])
def test_a_rerun_cannot_change_what_shapes_the_checkpoints(tmp_path, loop):
    """A changed optimizer, layer size, loop or monitored metric is refused before training,
    naming the setting (Keras would fail on the checkpoint, or reset the optimizer with only
    a warning; the other loop would start over; the best epoch's value would be another
    metric's), on a finished run too; a change that leaves the checkpoints alone resumes with
    the optimizer's step; a checkpoint that still does not fit (here: a record without its
    settings, as from a data change) is one error naming the variable."""
    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    model_dir = str(tmp_path / "run")
    other_loop = "custom" if loop == "fit" else "fit"

    def run(epochs, model=None, **training):
        training = {"loop": loop, "steps_per_epoch": 1, "steps_per_execution": 1,
                    "early_stopping_metric": "val_ndcg_2", **training}
        hp = _hparams(paths, model_dir, epochs=epochs, **training)
        if model:
            hp = dataclasses.replace(hp, model=dataclasses.replace(hp.model, **model))
        return RankingLauncher(hp).run()

    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "a.txt").write_text("precious")
    with pytest.raises(InputError, match=r"notes holds files that are not a SavedModel"):
        run(1, export_dir=str(foreign))
    assert not os.path.exists(model_dir)  # refused before anything was written
    with pytest.raises(SpecError, match=r"holds or is model_dir"):
        run(1, export_dir=model_dir)  # the launcher checks the placement
    first = run(1)
    assert first.state.settings == {**first.state.settings, "model.hidden_sizes": [4],
                                    "training.optimizer": "adam", "training.loop": loop,
                                    "training.ema_momentum": "off"}
    assert load_state(model_dir).settings == first.state.settings
    with pytest.raises(SpecError, match=r"trained 1 epoch with other settings, and a rerun "
                       r"cannot change them: training.optimizer: \"adam\" when trained, "
                       r"\"sgd\" now\. Its checkpoints and best epoch would not carry over\."):
        run(2, optimizer="sgd")
    with pytest.raises(SpecError, match=r"model.hidden_sizes: \[4\] when trained, \[8\] now; "
                                        r"model.batch_norm: false when trained, true now\."):
        run(2, model={"hidden_sizes": (8,), "batch_norm": True})
    with pytest.raises(SpecError, match=rf"training.loop: \"{loop}\" when trained, "
                                        rf"\"{other_loop}\" now"):
        run(2, loop=other_loop)
    with pytest.raises(SpecError, match=r"training.early_stopping_metric: \"val_ndcg_2\" when "
                                        r"trained, \"val_loss\" now"):
        run(2, early_stopping_metric="val_loss")
    assert load_state(model_dir).epochs_done == 1  # nothing was trained or recorded
    # the same variables (no id features: the embedding settings shape nothing)
    resumed = run(2, model={"dropout": 0.5, "embedding_dim": 8}, learning_rate=0.01)
    assert "model.embedding_dim" not in resumed.state.settings
    assert resumed.steps == 2 and resumed.state.epochs_done == 2
    assert run(1).finished_before  # fewer epochs than done: finished, nothing trains
    with pytest.raises(SpecError, match=r"trained 2 epochs with other settings.*"
                                        r"model.hidden_sizes"):
        run(2, model={"hidden_sizes": (8,)})  # finished: its best weights would not load
    state = load_state(model_dir)
    state.settings = None  # the check has nothing to compare (says so): the restore fails
    save_state(model_dir, state)
    with pytest.warns(UserWarning, match=r"run_state.json records no settings .* a changed "
                      r"model or optimizer cannot be detected"), \
            pytest.raises(InputError, match=r"The checkpoints in .*run do not fit the model "
                          r"now configured \(.*\)\. Resume with the config") as e:
        run(3, model={"hidden_sizes": (8,)})
    assert "scorer_dense_0" in str(e.value) and "(1, 4)" in str(e.value)  # saved kernel
    retrained = run(1, model={"hidden_sizes": (8,)}, retrain=True)
    assert retrained.steps == 1
    assert retrained.state.settings["model.hidden_sizes"] == [8]


def test_an_ensemble_checks_every_members_record_and_retrain_removes_them(tmp_path):
    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    model_dir = str(tmp_path / "run")

    def run(ensemble, hidden, printer=None, **training):
        hp = _hparams(paths, model_dir, epochs=1, steps_per_epoch=1, steps_per_execution=1,
                      **training)
        return RankingLauncher(dataclasses.replace(hp, model=dataclasses.replace(
            hp.model, ensemble=ensemble, hidden_sizes=hidden)), epoch_printer=printer).run()

    lines = io.StringIO()
    printer = EpochPrinter(epochs=1, stream=lines)
    run(2, (4,), printer)
    assert member_dirs(model_dir) == ("member_0", "member_1")
    # Each member's epoch line names it; the printer saw both members' epochs.
    assert [x.split(": epoch")[0] for x in lines.getvalue().splitlines()] == [
        "member 1/2", "member 2/2"]
    assert printer.seen == [0, 0] and printer.label == ""
    with pytest.raises(SpecError, match=r"The run in .*member_0 trained 1 epoch with other "
                                        r"settings.*model.hidden_sizes: \[4\] when trained"):
        run(2, (8,))  # finished members: their best weights would not load
    run(1, (8,), retrain=True)
    assert member_dirs(model_dir) == ()
    # One model and an ensemble never share a folder (nor its record and export).
    with pytest.raises(SpecError, match=r"run holds one model trained 1 epoch\(s\), and "
                       r"`model.ensemble: 2` cannot share its folder\. Rerun with "
                       r"model.ensemble=1, choose another training.model_dir, or start over"):
        run(2, (8,))
    again = run(2, (8,), retrain=True)  # new members, trained (not the stale ones' "finished")
    assert not again.finished_before and again.steps == 2  # one step each
    with pytest.raises(SpecError, match=r"run holds the members of an ensemble \(member_0, "
                       r"member_1\), and `model.ensemble: 1` cannot share its folder\. Rerun "
                       r"with model.ensemble=2"):
        run(1, (8,))


def test_another_ensemble_size_rewrites_the_export_as_the_mean_of_that_many(tmp_path):
    """3 members, then 2 (both finished): the export is re-made from the first 2 (it was
    left as the 3-member mean and labelled as 2), and the record says how many it holds."""
    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    hp = _hparams(paths, str(tmp_path / "run"), epochs=1, steps_per_epoch=1,
                  steps_per_execution=1, export_dir=str(tmp_path / "export"))

    def run(ensemble):
        return RankingLauncher(dataclasses.replace(hp, model=dataclasses.replace(
            hp.model, ensemble=ensemble))).run()

    three = run(3)
    assert three.exported and load_state(hp.training.model_dir).export["members"] == 3
    two = run(2)  # every member finished: nothing trains, the export is re-made
    record = load_state(hp.training.model_dir).export
    assert two.exported and two.steps == 0 and record["members"] == 2
    assert record["metrics"] != three.state.export["metrics"]
    assert run(2).exported is False  # now current
    # One model is refused; the fix names the size the export holds, not the 3 folders.
    with pytest.raises(SpecError, match=r"member_0, member_1, member_2\), and "
                       r"`model.ensemble: 1` cannot share its folder\. Rerun with "
                       r"model.ensemble=2,"):
        run(1)


def test_an_ensembles_export_records_the_averaged_models_validation_metrics(tmp_path):
    """The averaged model has no epoch of its own: what it scores on the validation lists is
    what the summary's `exported_model` shows; each member's epoch is on `members`."""
    from beam_prep.pipelines.train import _epoch_counts

    from benchmarks.ltr_files import numpy_ndcg
    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    hp = _hparams(paths, str(tmp_path / "run"), epochs=2, steps_per_epoch=1,
                  steps_per_execution=1, early_stopping_metric="val_ndcg_2",
                  export_dir=str(tmp_path / "export"))
    hp = dataclasses.replace(hp, model=dataclasses.replace(hp.model, ensemble=2))
    launcher = RankingLauncher(hp)
    result = launcher.run()
    state = result.state
    labels, scores = [], []
    for features, y in launcher.datasets.valid_dataset():
        labels.append(y.numpy())
        scores.append(np.asarray(result.model(features, training=False)))
    expected = numpy_ndcg(np.concatenate(labels), np.concatenate(scores), k=2)
    assert state.export["epoch"] is None
    assert state.export["metrics"]["val_ndcg_2"] == pytest.approx(expected, abs=1e-5)
    assert state.export["members"] == 2 and result.exported
    assert load_state(hp.training.model_dir).export == state.export
    counts = _epoch_counts(result, hp, [0, 1])
    assert counts["exported_model"].endswith(" (the mean of 2 members' scores)")
    assert f"val_ndcg_2 {expected:.4f}" in counts["exported_model"]
    members = [load_state(hp.member(i).training.model_dir).best for i in range(2)]
    assert counts["members"] == (
        f"epochs {members[0]['epoch']}, {members[1]['epoch']} of 2 (best val_ndcg_2 "
        f"{members[0]['value']:.4f}, {members[1]['value']:.4f})")


def test_best_weights_load_for_scoring_without_the_optimizer_warning(tmp_path):
    """A finished member reloaded on a rerun has an optimizer that never stepped: Keras
    would warn that it skips the saved optimizer slots. The model's weights still load, and
    a model that does not fit the file still fails."""
    import keras

    from beam_prep.ranking.train.run_state import load_weights_to_score

    def make(units=2):
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(units)])
        model.compile(optimizer="adam", loss="mse")
        return model

    trained = make()
    trained.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)   # the optimizer has slots
    path = str(tmp_path / "best.weights.h5")
    trained.save_weights(path)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        make().load_weights(path)               # what Keras does on its own
        fresh = make()
        load_weights_to_score(fresh, path)
    assert sum("Skipping variable loading for optimizer" in str(w.message)
               for w in shown) == 1             # only the plain load_weights warned
    for got, want in zip(fresh.get_weights(), trained.get_weights()):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError):
        load_weights_to_score(make(units=5), path)


def test_a_lost_record_or_best_weights_is_refused_and_deleting_the_folder_retrains_it(
        tmp_path):
    """A finished run without best.weights.h5 would export untrained weights; a member
    without run_state.json would never finish again. Both are one line naming the folder to
    delete, and deleting it retrains that folder's run only."""
    import shutil

    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    one = _hparams(paths, str(tmp_path / "one"), epochs=1, steps_per_epoch=1)
    RankingLauncher(one).run()
    os.remove(os.path.join(one.training.model_dir, "best.weights.h5"))
    with pytest.raises(InputError, match=r"one/best.weights.h5 is missing: run_state.json "
                       r"records 1 trained epoch\(s\).* Delete .*one to train it again, or "
                       r"start over"):
        RankingLauncher(one).run()

    ens = _hparams(paths, str(tmp_path / "ens"), epochs=1, steps_per_epoch=1,
                   steps_per_execution=1)
    ens = dataclasses.replace(ens, model=dataclasses.replace(ens.model, ensemble=2))
    RankingLauncher(ens).run()
    member_0 = ens.member(0).training.model_dir
    os.remove(os.path.join(member_0, "run_state.json"))
    with pytest.raises(InputError, match=r"member_0 holds the checkpoints of trained epochs "
                       r"but no run_state.json .* Delete .*member_0 to train this member "
                       r"again"):
        RankingLauncher(ens).run()
    shutil.rmtree(member_0)                          # the fix the line names
    again = RankingLauncher(ens).run()
    assert again.steps == 1                          # member 0 only, one step
    assert load_state(member_0).finished and load_state(member_0).epochs_done == 1


def test_a_finished_ensemble_without_an_export_is_reported_finished(tmp_path):
    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    hp = _hparams(paths, str(tmp_path / "run"), epochs=1, steps_per_epoch=1,
                  steps_per_execution=1)                      # export_dir: null
    hp = dataclasses.replace(hp, model=dataclasses.replace(hp.model, ensemble=2))
    first = RankingLauncher(hp).run()
    assert not first.finished_before and first.steps == 2
    again = RankingLauncher(hp).run()
    assert again.finished_before and again.steps == 0 and not again.exported


def test_ctrl_c_after_every_member_trained_names_no_epoch(tmp_path, monkeypatch):
    """Between the last member's last epoch and the export (the members are averaged) a
    Ctrl-C used to say `interrupted at epoch 3` of a 2-epoch run."""
    from beam_prep.ranking.train.scorers import ensemble
    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    hp = _hparams(paths, str(tmp_path / "run"), epochs=2, steps_per_epoch=1,
                  steps_per_execution=1, early_stopping_patience=50)
    hp = dataclasses.replace(hp, model=dataclasses.replace(hp.model, ensemble=2))
    handler = InterruptHandler()
    real_average = ensemble.average_model

    def ctrl_c_while_averaging(*args, **kwargs):
        handler.request()
        raise Interrupted  # what the handler does outside the loops' safe points

    monkeypatch.setattr(ensemble, "average_model", ctrl_c_while_averaging)
    with handler, pytest.raises(Interrupted):
        RankingLauncher(hp, interrupts=handler).run()
    assert handler.message() == ("interrupted after training; the trained epochs are "
                                 "saved: rerun to finish")
    monkeypatch.setattr(ensemble, "average_model", real_average)
    again = RankingLauncher(hp).run()
    assert again.finished_before and again.steps == 0


def test_the_interrupt_line_after_a_members_training_names_the_member():
    handler = InterruptHandler()
    handler.label, handler.epoch, handler.trained = "member 1/3", 2, True
    assert handler.message() == ("interrupted after training member 1/3; the trained "
                                 "epochs are saved: rerun to finish")


def test_a_member_trains_in_the_folder_the_run_record_recognises():
    from beam_prep.ranking.train.hparams import is_member_dir

    hp = RankingHparams.from_yaml_text(
        "data: {feature_spec: f, train_pattern: t, list_size: 2, train_batch_size: 1}\n"
        "training: {model_dir: out/run, seed: 5, export_dir: out/export}\n"
        "model: {ensemble: 3}")
    member = hp.member(2)
    assert (member.training.model_dir, member.training.seed, member.training.export_dir,
            member.model.ensemble) == (os.path.join("out/run", "member_2"), 7, None, 1)
    assert is_member_dir(os.path.basename(member.training.model_dir))
    assert not any(map(is_member_dir, ("member_", "member_2b", "xmember_2", "member_-1")))


def test_checkpoint_settings_compare_what_the_model_builds():
    text = ("data: {feature_spec: f, train_pattern: t, list_size: 2, train_batch_size: 1}\n"
            "training: {model_dir: m}")

    def settings(*overrides):
        return RankingHparams.from_yaml_text(text, overrides=list(overrides)) \
            .checkpoint_settings()

    state = RunState(epochs=1, settings=settings())
    assert state.changed_settings(settings("model.input_transform=log1p")) == []  # auto's
    assert state.changed_settings(settings("training.learning_rate=0.1",
                                           "model.dropout=0.5")) == []
    assert state.changed_settings(settings("model.input_transform=piecewise_linear",
                                           "training.ema_momentum=0.9")) == [
        'model.input_transform: "log1p" when trained, "piecewise_linear" now',
        'training.ema_momentum: "off" when trained, "on" now']
    assert RunState(epochs=1).changed_settings(settings()) == []  # nothing recorded
    # the embedding settings count only when the model embeds id features
    embedded = RunState(epochs=1, settings=settings())
    other = RankingHparams.from_yaml_text(text, overrides=["model.embedding_dim=4"])
    assert embedded.changed_settings(other.checkpoint_settings()) == [
        "model.embedding_dim: 16 when trained, 4 now"]
    assert embedded.changed_settings(other.checkpoint_settings(id_features=False)) == []


# ---- Ctrl-C -----------------------------------------------------------------------------

def test_ctrl_c_outside_the_loops_raises_and_inside_waits_for_a_safe_point():
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN in a job started in the background
    with InterruptHandler() as handler:
        with pytest.raises(Interrupted):
            signal.raise_signal(signal.SIGINT)
        handler.requested = False
        with pytest.raises(Interrupted):
            with handler.safe_points():
                signal.raise_signal(signal.SIGINT)  # only sets the flag
                assert handler.requested
                handler.check()                     # the safe point raises
    assert signal.getsignal(signal.SIGINT) is before  # the previous handler is back


def test_ctrl_c_while_exporting_says_so_and_a_rerun_writes_the_export(tmp_path, monkeypatch):
    """Training is over and saved when the export starts: the line must not name an epoch
    that never began, and the rerun only exports."""
    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    export = str(tmp_path / "export")
    hp = _hparams(paths, str(tmp_path / "run"), epochs=1, steps_per_epoch=1,
                  export_dir=export)
    handler = InterruptHandler()
    real_check = guard.check_scores

    def ctrl_c_during_the_export(*args, **kwargs):
        handler.request()  # what Ctrl-C does inside the safe points
        return real_check(*args, **kwargs)

    monkeypatch.setattr(guard, "check_scores", ctrl_c_during_the_export)
    with handler, pytest.raises(Interrupted):
        RankingLauncher(hp, interrupts=handler).run()
    assert handler.message() == ("interrupted while exporting; the trained epochs are saved: "
                                 "rerun to write the export")
    assert load_state(hp.training.model_dir).finished and not os.path.exists(export)
    monkeypatch.setattr(guard, "check_scores", real_check)
    again = RankingLauncher(hp).run()
    assert again.finished_before and again.exported
    assert os.path.exists(os.path.join(export, "saved_model.pb"))


def test_ctrl_c_while_an_ensemble_is_scored_for_its_record_keeps_the_previous_export(
        tmp_path, monkeypatch):
    """The averaged model is scored on the validation lists (for the record) before the
    export is swapped in: a Ctrl-C there leaves the previous export and its record as they
    were, and the rerun writes and records the new one together."""
    from tests.ranking.test_launcher import _hparams, _write_data

    paths = _write_data(str(tmp_path / "data"))
    export = str(tmp_path / "export")
    hp = _hparams(paths, str(tmp_path / "run"), epochs=1, steps_per_epoch=1,
                  export_dir=export, early_stopping_metric="val_ndcg_2")
    hp = dataclasses.replace(hp, model=dataclasses.replace(hp.model, ensemble=2))
    RankingLauncher(hp).run()
    before = load_state(hp.training.model_dir).export
    pb = os.path.join(export, "saved_model.pb")
    before_bytes = open(pb, "rb").read()
    grown = dataclasses.replace(hp, model=dataclasses.replace(hp.model, ensemble=3))
    handler = InterruptHandler()
    real_record = RankingLauncher._export_record

    def ctrl_c_while_scored(self, *args, **kwargs):
        handler.request()  # Ctrl-C while the averaged model is scored
        return real_record(self, *args, **kwargs)

    monkeypatch.setattr(RankingLauncher, "_export_record", ctrl_c_while_scored)
    with handler, pytest.raises(Interrupted):
        RankingLauncher(grown, interrupts=handler).run()
    assert handler.message().startswith("interrupted while exporting")
    assert load_state(hp.training.model_dir).export == before   # still the 2-member one
    assert open(pb, "rb").read() == before_bytes and before["members"] == 2
    monkeypatch.setattr(RankingLauncher, "_export_record", real_record)
    again = RankingLauncher(grown).run()
    assert again.exported and load_state(hp.training.model_dir).export["members"] == 3
    assert set(load_state(hp.training.model_dir).export["metrics"]) >= {"val_ndcg_2"}


@pytest.mark.parametrize("wrapped", [
    ValueError("Exception encountered when calling FeedForwardScorer.call()"),  # Keras build
    RuntimeError("pybind11::error_already_set: MISMATCH ... REPLACED BY Interrupted"),  # export
    InputError("a file vanished"),
])
def test_ctrl_c_that_keras_or_tensorflow_rewrap_is_still_one_line_and_exit_130(
        monkeypatch, capsys, wrapped):
    from beam_prep.pipelines import train

    from beam_prep.ranking.train import interrupt

    def interrupted_inside_a_library(args, interrupts):
        interrupts.request()  # what Ctrl-C did first
        interrupts.label, interrupts.epoch = "member 2/3", None
        warnings.warn("Layer 'dense' looks like it has unbuilt state",  # Keras unwinding
                      stacklevel=1)
        raise wrapped

    monkeypatch.setattr(train, "_train", interrupted_inside_a_library)
    monkeypatch.setattr(interrupt.InterruptHandler, "__enter__", lambda self: self)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        assert train.main(["--config", "unused.yaml"]) == 130
        warnings.warn("after the run", stacklevel=1)
    assert [str(w.message) for w in shown] == ["after the run"]  # only the unwinding is quiet
    err = capsys.readouterr().err
    assert err == "beam-prep train: interrupted while starting member 2/3; rerun to resume\n"


def test_an_error_without_ctrl_c_is_not_taken_for_an_interrupt(monkeypatch):
    from beam_prep.pipelines import train

    from beam_prep.ranking.train import interrupt

    def broken(args, interrupts):
        raise ValueError("a real bug")

    monkeypatch.setattr(train, "_train", broken)
    monkeypatch.setattr(interrupt.InterruptHandler, "__enter__", lambda self: self)
    with pytest.raises(ValueError, match="a real bug"):
        train.main(["--config", "unused.yaml"])


def test_the_interrupt_line_names_the_ensemble_member():
    handler = InterruptHandler()
    handler.label, handler.epoch = "member 2/3", 4
    assert handler.message() == "interrupted at member 2/3, epoch 5; rerun to resume"


def test_a_record_warning_is_one_line_on_the_cli(capsys):
    import warnings

    from beam_prep.pipelines.train import _warning_lines

    from beam_prep.ranking.train.run_state import RecordWarning

    with _warning_lines(), warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("out/ranker/run_state.json records no settings", RecordWarning,
                      stacklevel=1)
    assert capsys.readouterr().err == ("beam-prep train: warning: out/ranker/run_state.json "
                                       "records no settings\n")


def test_a_gc_callback_frame_is_recognised():
    import gc
    import inspect

    seen = []

    def callback(phase, info):
        seen.append(in_finalizer(inspect.currentframe()))

    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert seen and all(seen) and not in_finalizer(inspect.currentframe())


def test_a_weak_dict_callback_frame_is_recognised():
    """Keras and TensorFlow keep weak dicts; a Ctrl-C landing in their callback was printed
    as "Exception ignored" with a traceback."""
    import inspect
    import weakref

    frames = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name in ("remove", "_remove"):
            frames.append(frame)

    class Key:
        pass

    weak_dict, weak_set, key, member = weakref.WeakKeyDictionary(), weakref.WeakSet(), Key(), Key()
    weak_dict[key] = 1
    weak_set.add(member)
    sys.setprofile(profile)
    try:
        del key, member  # both callbacks run here
    finally:
        sys.setprofile(None)
    assert len(frames) == 2 and all(in_finalizer(f) for f in frames)
    assert not in_finalizer(inspect.currentframe())


# ---- end to end -------------------------------------------------------------------------

def _list(text: str) -> bytes:
    return text_format.Parse(text, input_pb2.ExampleListWithContext()).SerializeToString()


def _data(tmp_path, train_text: str, valid_text: str | None = None):
    from beam_prep.ranking.data.tfrecord import write_tfrecords
    from tests.ranking.test_train_cli import ELWC, _config

    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    write_tfrecords(str(data / "train-00000.tfrecord"), [_list(train_text)])
    valid = None
    if valid_text is not None:
        write_tfrecords(str(data / "valid-00000.tfrecord"), [_list(valid_text or ELWC)])
        valid = str(data / "valid-*.tfrecord")
    return _config(tmp_path, train=str(data / "train-*.tfrecord"), valid=valid)


def _cli(capsys, *argv):
    from beam_prep.cli import main

    code = main(["train", *argv])
    return code, capsys.readouterr()


@pytest.mark.slow  # ~40 s: one training and export
def test_a_huge_value_trains_finitely_with_the_default_transform(tmp_path, capsys):
    """The issue's reproducer: a document with 3e38 made the loss nan and exported a model
    scoring nan with exit 0. With `input_transform: auto` (log1p) it trains finitely."""
    import tensorflow as tf

    config = _data(tmp_path, HUGE_LIST)
    summary = tmp_path / "s.json"
    code, out = _cli(capsys, "--config", config, "training.steps_per_epoch=3",
                     "--summary_json", str(summary))
    assert code == 0, out.err
    got = json.loads(summary.read_text())
    assert math.isfinite(got["details"]["last_epoch"]["metrics"]["loss"])
    loaded = tf.saved_model.load(got["outputs"]["export"])
    scores = loaded.signatures["serving_default"](
        serialized=tf.constant([_list(HUGE_LIST)]))["scores"].numpy()
    assert np.isfinite(scores[0, :2]).all()


@pytest.mark.slow  # ~30 s: one training that diverges
def test_a_non_finite_loss_stops_with_one_line_and_keeps_the_previous_export(tmp_path, capsys):
    config = _data(tmp_path, HUGE_LIST)
    export = tmp_path / "export"
    export.mkdir()
    (export / "saved_model.pb").write_text("the previous export")
    code, out = _cli(capsys, "--config", config, "model.input_transform=none",
                     "training.learning_rate=1.0", "training.steps_per_epoch=3")
    lines = [x for x in out.err.splitlines() if x.startswith("beam-prep train: error:")]
    assert code == 1 and len(lines) == 1, out.err
    assert "Traceback" not in out.err
    assert "at step " in lines[0] and "Feature 'x' holds 3e+38 (training list 0)" in lines[0]
    assert "`model.input_transform: none`" in lines[0] and "log1p" in lines[0]
    assert os.listdir(export) == ["saved_model.pb"]
    assert (export / "saved_model.pb").read_text() == "the previous export"
    assert not os.path.exists(str(export) + ".staging")


@pytest.mark.slow  # ~80 s: two trainings and a no-op rerun
def test_reruns_keep_the_best_export(tmp_path, capsys):
    """A finished run is a no-op; a resume whose epochs are worse than the recorded best
    leaves the export alone; the summary labels the exported and the last epoch."""
    from tests.ranking.test_train_cli import ELWC

    config = _data(tmp_path, ELWC, ELWC)
    watch = "training.early_stopping_metric=val_ndcg_1"
    summary = tmp_path / "s.json"
    code, out = _cli(capsys, "--config", config, watch, "--summary_json", str(summary))
    assert code == 0, out.err
    export = tmp_path / "export"  # _config's; the default is tested with the hparams
    pb = export / "saved_model.pb"
    stamp = pb.stat().st_mtime_ns
    # Rerun of the finished run: nothing trained, export untouched.
    code, out = _cli(capsys, "--config", config, watch)
    assert code == 0, out.err
    assert "  finished: " in out.out and "--retrain" in out.out
    assert "wrote model_dir" not in out.out  # nothing was written
    assert not [x for x in out.err.splitlines() if x.startswith("epoch ")]
    assert pb.stat().st_mtime_ns == stamp
    # Pretend epoch 1 scored a perfect 1.0: the resumed epoch 2 cannot beat it.
    state_file = tmp_path / "model" / "run_state.json"
    state = json.loads(state_file.read_text())
    state["best"]["value"] = state["export"]["metrics"]["val_ndcg_1"] = 1.5
    state_file.write_text(json.dumps(state))
    code, out = _cli(capsys, "--config", config, watch, "training.epochs=2",
                     "--summary_json", str(summary))
    assert code == 0, out.err
    counts = json.loads(summary.read_text())["counts"]
    assert counts["exported_epoch"] == "1 of 2 (best val_ndcg_1 1.5000)"
    assert counts["export"].startswith("unchanged")
    assert counts["last_epoch"].startswith("2 of 2: loss ")
    assert "val_ndcg_1 1.5000" in counts["exported_model"]
    assert pb.stat().st_mtime_ns == stamp
    # --retrain starts over and replaces the export.
    code, out = _cli(capsys, "--config", config, watch, "--retrain",
                     "--summary_json", str(summary))
    assert code == 0, out.err
    assert json.loads(summary.read_text())["counts"]["export"] == "written"
    assert pb.stat().st_mtime_ns != stamp


def _sigint_run(tmp_path, backend: str) -> tuple[int, str]:
    from tests.ranking.test_train_cli import ELWC

    config = _data(tmp_path, ELWC, ELWC)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "beam_prep.cli", "train", "--config", config,
           f"distribution.backend={backend}", "training.epochs=100000",
           "training.steps_per_epoch=2"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                            text=True)
    err = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # wait for the second epoch line: training runs
        line = proc.stderr.readline()
        err.append(line)
        if line.startswith("epoch 2/"):
            break
        assert line or proc.poll() is None, "".join(err)
    proc.send_signal(signal.SIGINT)
    try:
        _, rest = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("Ctrl-C did not stop training:\n" + "".join(err)) from None
    return proc.returncode, "".join(err) + rest


@pytest.mark.slow  # ~40 s per backend: a subprocess trains until it gets SIGINT
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_ctrl_c_stops_training_with_one_line_and_exit_130(tmp_path, backend):
    if backend == "jax":
        pytest.importorskip("jax")
    code, err = _sigint_run(tmp_path, backend)
    assert code == 130, err
    lines = [x for x in err.splitlines() if x.startswith("beam-prep train: ")]
    assert len(lines) == 1, err
    assert lines[0].startswith("beam-prep train: interrupted at epoch "), err
    assert lines[0].endswith("; rerun to resume")
    assert "Traceback" not in err and "Exception ignored" not in err, err
    state = load_state(str(tmp_path / "model"))
    assert state is not None and state.epochs_done >= 2 and not state.finished
    n = int(lines[0].split("epoch ")[1].split(";")[0])
    assert n in (state.epochs_done, state.epochs_done + 1)
