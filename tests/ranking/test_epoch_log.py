"""beam_prep.ranking.train.epoch_log: the per-epoch line of `beam-prep train` (no TensorFlow)."""

from __future__ import annotations

import io

from beam_prep.ranking.train.epoch_log import EpochPrinter, format_epoch


def test_loss_first_then_metrics_then_validation_sorted():
    logs = {"val_ndcg_10": 0.75, "ndcg_10": 0.5, "val_loss": 0.25, "mrr_5": 1.0, "loss": 2.0}
    assert format_epoch(0, 10, logs, 12.345) == (
        "epoch 1/10: loss 2.0000, mrr_5 1.0000, ndcg_10 0.5000, val_loss 0.2500, "
        "val_ndcg_10 0.7500 (12.3s)")


def test_seconds_run_from_begin_then_from_the_previous_epoch():
    times = iter([10.0, 13.0, 20.0])
    out = io.StringIO()
    printer = EpochPrinter(epochs=2, stream=out, clock=lambda: next(times))
    printer.begin()                 # t=10
    printer(0, {"loss": 1.0})       # t=13: 3 s
    printer(1, {"loss": 0.5})       # t=20: 7 s
    assert out.getvalue().splitlines() == ["epoch 1/2: loss 1.0000 (3.0s)",
                                           "epoch 2/2: loss 0.5000 (7.0s)"]


def test_building_the_printer_imports_no_tensorflow():
    import subprocess
    import sys

    code = ("import sys; from beam_prep.ranking.train.epoch_log import EpochPrinter; "
            "EpochPrinter(epochs=1); print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["False", "False"]
