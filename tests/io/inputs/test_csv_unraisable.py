"""A CSV row with the wrong number of columns and bytes that are not UTF-8 fails with one
clear error and prints no "Exception ignored in" traceback (pyarrow's row handler decodes the
row before calling ours; issue 21 item 7)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import io, sys
from beam_prep.errors import InputError
from beam_prep.io.inputs.csv_reader import iter_csv
try:
    list(iter_csv(io.BytesIO(b"s,x\n1,2\n\xbb,1,2\n"), ["s"], batch_size=4, source="d.csv"))
except InputError as e:
    print("InputError:", str(e)[:60])
"""


def test_no_unraisable_traceback_for_a_bad_row_that_is_not_utf8():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("InputError: Cannot parse CSV file d.csv: row #3"), out.stdout
    assert "Exception ignored" not in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_other_unraisable_exceptions_still_reach_the_previous_hook():
    script = SCRIPT + r"""
class Noisy:
    def __del__(self):
        raise RuntimeError("mine")
Noisy()
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert "RuntimeError: mine" in out.stderr
    assert "UnicodeDecodeError" not in out.stderr
