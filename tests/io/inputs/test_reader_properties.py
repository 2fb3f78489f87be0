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
from beam_prep.io.inputs.readers import Split, read_split
from tests.fuzzing import examples

SETTINGS = settings(max_examples=examples(40), deadline=None,
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


scalars = (st.none() | st.booleans() | st.floats(allow_nan=False)
           | st.integers(-10**20, 10**20) | cells)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(cells, inner, max_size=3), max_leaves=6)
# "x" (float64): numbers, booleans, numeric text, text that is no number, blanks, nesting.
x_values = (scalars.filter(lambda v: not isinstance(v, str))
            | st.floats().map(repr) | st.text(alphabet="bcdxyz ", max_size=5)
            | st.lists(st.integers(-5, 5), max_size=2)
            | st.dictionaries(cells, scalars, max_size=1))

KEEP, REJECT, EITHER = "keep", "reject", "either"


def _expected_s(v):
    """The JSONL rule for a string column, written from the docs (README "Inputs and bad
    rows"), not from the reader: text is kept, a JSON integer becomes its decimal text, a
    number with a fraction or exponent, a boolean or an object rejects the line, and null or
    an absent key is missing. A JSON array is a list value: kept as a list of text, or the
    line is rejected when a block needs the line-by-line parser (either is allowed here)."""
    if v is None or isinstance(v, str):
        return KEEP, v
    if isinstance(v, bool) or isinstance(v, float) or isinstance(v, dict):
        return REJECT, None
    if isinstance(v, int):
        return KEEP, str(v)
    return EITHER, [e if e is None or isinstance(e, str) else str(e) for e in v]


def _expected_x(v) -> str:
    """float64 column: numbers and booleans (1/0, as Parquet booleans) are read, text is
    parsed (blank text is missing), other text and objects reject the line."""
    if v is None or isinstance(v, (bool, int, float)):
        return KEEP
    if isinstance(v, str):
        if not v.strip():
            return KEEP
        try:
            float(v)
        except ValueError:
            return REJECT
        return KEEP
    return REJECT if isinstance(v, dict) else EITHER


def _expected_line(text: str):
    """(outcome, s) for one line; None for a blank line, which is no record."""
    if not text.encode("utf-8").strip():
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return REJECT, None
    if not isinstance(obj, dict):
        return REJECT, None
    (s_outcome, s), x_outcome = _expected_s(obj.get("s")), _expected_x(obj.get("x"))
    outcomes = {s_outcome, x_outcome}
    return (REJECT if REJECT in outcomes else EITHER if EITHER in outcomes else KEEP), s


@SETTINGS
@given(st.lists(st.one_of(
    st.fixed_dictionaries({}, optional={"s": json_values, "x": x_values, "other": json_values}),
    st.text(max_size=20)), max_size=25), st.integers(1, 7))
def test_jsonl_lines_are_kept_or_rejected_exactly_once(tmp_path_factory, lines, batch_size):
    path = tmp_path_factory.mktemp("jsonl") / "d.jsonl"
    text = [json.dumps(v) if isinstance(v, dict) else v.replace("\n", " ").replace("\r", " ")
            for v in lines]
    path.write_text("".join(t + "\n" for t in text), encoding="utf-8")
    rows, rejected, seen = _read(str(path), "jsonl", batch_size)
    expected = {n: e for n, t in enumerate(text, start=1)
                if (e := _expected_line(t)) is not None}
    assert seen == len(expected)
    numbers = [r.row for r in rejected]
    assert len(set(numbers)) == len(numbers) and set(numbers) <= set(expected)
    for n, (outcome, _) in expected.items():
        assert outcome == EITHER or (n in numbers) == (outcome == REJECT), (n, outcome)
    assert rows == [s for n, (_, s) in expected.items() if n not in numbers]


def test_jsonl_number_in_a_string_column_follows_the_documented_rule(tmp_path):
    """Same rule in every batch: 3 next to 1.5 is still "3" (pyarrow would widen to 3.0)."""
    path = tmp_path / "d.jsonl"
    path.write_text('{"s": 3}\n{"s": 1.5}\n{"s": 100000000000000000000}\n{"s": true}\n'
                    '{"s": "7"}\n{"s": 0}\n', encoding="utf-8")
    for batch_size in (1, 6):
        rows, rejected, seen = _read(str(path), "jsonl", batch_size)
        assert rows == ["3", "100000000000000000000", "7", "0"]
        assert [(r.row, r.reason) for r in rejected] == [(2, "wrong_type"), (4, "wrong_type")]
        assert seen == 6


def test_numbers_in_a_string_column_same_rule_in_csv_jsonl_and_parquet(tmp_path):
    """README "Numbers in a string column": integers read as their decimal text, floats and
    booleans reject the row; a CSV cell is text as written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def strings(path, fmt):
        rows, rejected, _ = _read(str(path), fmt, 10)
        return rows, sorted(r.row for r in rejected)

    pq.write_table(pa.table({"s": pa.array([7, -12], pa.int64())}), tmp_path / "i.parquet")
    pq.write_table(pa.table({"s": pa.array([1.5, None])}), tmp_path / "f.parquet")
    pq.write_table(pa.table({"s": pa.array([True, None])}), tmp_path / "b.parquet")
    (tmp_path / "d.jsonl").write_text('{"s": 7}\n{"s": -12}\n{"s": 1.5}\n{"s": true}\n')
    (tmp_path / "d.csv").write_text("s,x\n7,1\n-12,1\n1.50,1\ntrue,1\n")
    assert strings(tmp_path / "i.parquet", "parquet") == (["7", "-12"], [])
    assert strings(tmp_path / "f.parquet", "parquet") == ([None], [1])
    assert strings(tmp_path / "b.parquet", "parquet") == ([None], [1])
    assert strings(tmp_path / "d.jsonl", "jsonl") == (["7", "-12"], [3, 4])
    assert strings(tmp_path / "d.csv", "csv") == (["7", "-12", "1.50", "true"], [])
