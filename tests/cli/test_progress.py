"""beam_prep.progress: worker records, driver snapshots, line format (no pipeline)."""

from __future__ import annotations

import io
import multiprocessing
import os

from beam_prep import progress
from beam_prep.progress import PROGRESS_DIR_ENV, ProgressMonitor, Snapshot, format_line


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_record_without_monitor_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(PROGRESS_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    progress.record_unit("a", rows=1)
    assert os.listdir(tmp_path) == []


def test_snapshot_counts_distinct_units_rows_and_eta():
    clock = FakeClock()
    out = io.StringIO()
    monitor = ProgressMonitor("job", unit="splits", total=4, stream=out, enabled=False,
                              clock=clock)
    monitor.start()
    try:
        progress.record_unit("s1", rows=300, rejected=2)
        progress.record_unit("s2", rows=100)
        progress.record_unit("s1", rows=300, rejected=2)  # a retried bundle counts once
        clock.now += 20.0
        snap = monitor.poll()
    finally:
        monitor.stop()
    # 2 of 4 units in 20 s -> 2 more take 20 s; 400 rows / 20 s.
    assert (snap.done, snap.total, snap.rows, snap.rejected) == (2, 4, 400, 2)
    assert snap.rows_per_second == 20.0
    assert snap.eta_seconds == 20.0
    assert out.getvalue() == ""  # disabled: counts, shows nothing
    assert PROGRESS_DIR_ENV not in os.environ


def _worker(n: int) -> None:
    for i in range(n):
        progress.record_unit(f"{os.getpid()}-{i}", rows=10)


def test_records_from_other_processes_are_collected():
    out = io.StringIO()
    with ProgressMonitor("job", unit="splits", total=6, stream=out, tty=False) as monitor:
        procs = [multiprocessing.get_context("fork").Process(target=_worker, args=(3,))
                 for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
    snap = monitor.snapshot()
    assert (snap.done, snap.rows) == (6, 60)
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("job: 6/6 splits, 60 rows, ")
    assert last.endswith("ETA 0:00:00")


def test_plain_lines_only_every_interval_and_at_the_end():
    clock = FakeClock()
    out = io.StringIO()
    monitor = ProgressMonitor("job", unit="files", total=None, stream=out, tty=False,
                              interval_seconds=10.0, clock=clock, enabled=True)
    monitor._enabled = True  # drive the display by hand: no thread timing in the test
    monitor.start()
    monitor._stop.set()
    monitor._thread.join()
    monitor._stop.clear()
    monitor._thread = None
    progress.record_unit("f1", rows=5)
    clock.now += 5.0
    monitor.poll()
    monitor._show()  # 5 s < 10 s: nothing yet
    assert out.getvalue() == ""
    clock.now += 6.0
    monitor._show()
    clock.now += 1.0
    monitor._show()  # 1 s after the last line: nothing
    monitor.stop()
    lines = out.getvalue().splitlines()
    assert lines == ["job: 1/? files, 5 rows, 0 rows/s, 0:00:11 elapsed",
                     "job: 1/? files, 5 rows, 0 rows/s, 0:00:12 elapsed"]


def test_tty_redraws_one_line_with_a_bar():
    clock = FakeClock()
    out = io.StringIO()
    monitor = ProgressMonitor("job", unit="splits", total=2, stream=out, tty=True,
                              clock=clock, enabled=False)
    monitor.start()
    progress.record_unit("a", rows=50)
    clock.now += 10.0
    monitor.poll()
    monitor._enabled = True
    monitor.stop()
    text = out.getvalue()
    assert text.startswith("\r") and text.endswith("\x1b[K\n") and text.count("\n") == 1
    assert "[" + "#" * 12 + "." * 12 + "] 1/2 splits, 50 rows, 5 rows/s" in text
    assert "ETA 0:00:10" in text


def test_format_line_numbers():
    line = format_line("a", "splits", Snapshot(done=1, total=3, rows=1_500_000, rejected=0,
                                                seconds=3725.0))
    assert line == ("a: 1/3 splits, 1,500,000 rows, 403 rows/s, 1:02:05 elapsed, "
                    "ETA 2:04:10")


def test_a_closed_stream_stops_the_display_without_error():
    out = io.StringIO()
    monitor = ProgressMonitor("job", unit="splits", stream=out, tty=False)
    monitor.start()
    out.close()
    monitor.stop()  # would raise ValueError on write
