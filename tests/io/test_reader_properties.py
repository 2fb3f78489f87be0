"""Property-based tests of the CSV and JSONL readers (hypothesis): arbitrary content never crashes.

For any file, reading either fails with an InputError that names the file, or accounts for every
record exactly once: each data row is either returned (with its string cell unchanged and in
file order) or rejected with its true row number. The tf.Example decoder has its own properties
in test_decoder_fuzz.py.
"""

from __future__ import annotations

import csv
import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beam_prep.errors import InputError
from beam_prep.io.readers import Split, read_split

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
COLUMNS = {"s": "string", "x": "float64"}

cells = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), cells,
                    st.integers(-10**20, 10**20).map(str))


def _read(path: str, fmt: str, batch_size: int) -> tuple[list, list, int]:
    rows, rejected, seen = [], [], 0
    for result in read_split(Split(path, fmt), COLUMNS, batch_size=batch_size):
        rows += result.batch.column("s").to_pylist()
        rejected += result.rejected
        seen += result.rows_seen
    return rows, rejected, seen


@SETTINGS
@given(st.lists(st.tuples(cells, numbers), max_size=30), st.integers(1, 7))
def test_csv_rows_are_kept_or_rejected_exactly_once(tmp_path_factory, records, batch_size):
    path = tmp_path_factory.mktemp("csv") / "d.csv"
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)  # CR quoted too
    writer.writerow(["s", "x"])
    writer.writerows(records)
    path.write_text(buf.getvalue(), encoding="utf-8")
    try:
        rows, rejected, seen = _read(str(path), "csv", batch_size)
    except InputError as e:
        assert str(path) in str(e)
        return
    assert seen == len(records)
    bad = {r.row for r in rejected}
    assert len(bad) == len(rejected) and bad <= set(range(1, len(records) + 1))
    kept = [s for i, (s, _) in enumerate(records, start=1) if i not in bad]
    # Every cell is quoted, so "" is the empty string (an unquoted empty cell would be missing).
    assert rows == kept


@SETTINGS
@given(st.binary(max_size=400), st.integers(1, 7))
def test_csv_of_arbitrary_bytes_never_crashes(tmp_path_factory, body, batch_size):
    path = tmp_path_factory.mktemp("csvb") / "d.csv"
    path.write_bytes(b"s,x\n" + body)
    try:
        rows, rejected, seen = _read(str(path), "csv", batch_size)
    except InputError as e:
        assert str(path) in str(e)
        return
    assert seen == len(rows) + len(rejected)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers(-10**20, 10**20)
    | cells, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(cells, inner, max_size=3),
    max_leaves=6)


@SETTINGS
@given(st.lists(st.one_of(
    st.fixed_dictionaries({}, optional={"s": json_values, "x": json_values, "other": json_values}),
    st.text(max_size=20)), max_size=25), st.integers(1, 7))
def test_jsonl_lines_are_kept_or_rejected_exactly_once(tmp_path_factory, lines, batch_size):
    path = tmp_path_factory.mktemp("jsonl") / "d.jsonl"
    text = [json.dumps(v) if isinstance(v, dict) else v.replace("\n", " ").replace("\r", " ")
            for v in lines]
    path.write_text("".join(t + "\n" for t in text), encoding="utf-8")
    try:
        rows, rejected, seen = _read(str(path), "jsonl", batch_size)
    except InputError as e:
        assert str(path) in str(e)
        return
    assert seen == len(rows) + len(rejected)
    assert len({r.row for r in rejected}) == len(rejected)
    # Every kept string value is one that the file held under "s", in file order.
    sources = [v.get("s") for v in lines if isinstance(v, dict) and isinstance(v.get("s"), str)]
    it = iter(sources)
    assert all(any(r == s for s in it) for r in rows if isinstance(r, str))
