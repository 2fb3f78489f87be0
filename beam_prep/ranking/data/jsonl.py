"""JSON Lines → Arrow table for make-elwc, with bad lines set aside instead of failing the file.

pyarrow reads a clean file in one call. When it refuses the file (a line that is not JSON, or a
column whose JSON type changes between lines) or skips blank lines (its row numbers would not
be line numbers), the file is read again line by line:

* a line that is not a JSON object (or nests deeper than Python can parse) is rejected;
* a scalar in a column that holds a list on another line is a one-value list;
* a value whose JSON type (number, string, boolean, list of one of those, object) differs
  from the type most lines of the column hold (ties: the earliest) is rejected with its line
  (ints and floats are both numbers: the column becomes float, as pyarrow does; an empty list
  fits any list), and so is a list mixing JSON types;
* everything else is kept, in file order, with its 1-based line number.

Rejected lines are dicts ``{"file", "line", "code", "reason", "text"}``
(:func:`~beam_prep.ranking.data.value_rules.rejected_record`): code ``unparsable`` for a line
that is not a JSON object, ``type_mismatch`` for a value of another JSON type.

Example:
    >>> t, bad, lines = read_jsonl_table(b'{"q":1,"x":1}\\n{"q":1,"x":"a"}\\nnope\\n', "f.jsonl")
    >>> t.to_pydict(), [(b["line"], b["code"]) for b in bad], lines
    ({'q': [1], 'x': [1]}, [(2, 'type_mismatch'), (3, 'unparsable')], [1])
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.json as pajson

from beam_prep.errors import InputError
from beam_prep.ranking.data.value_rules import TYPE_MISMATCH, UNPARSABLE, Problem, rejected_record

_MIXED = "list of mixed JSON types"


def _kind(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):  # "list of number"; "list" when empty (fits any list)
        inner = {k for k in map(_kind, value) if k is not None}
        return "list" if not inner else f"list of {inner.pop()}" if len(inner) == 1 else _MIXED
    return "object"


def _fits(kind: str, first: str) -> bool:
    return kind == first or kind.startswith("list") and "list" in (kind, first)


def _reject(relpath: str, line: int, code: str, reason: str, text: bytes) -> dict[str, Any]:
    return rejected_record(relpath, line, Problem(code, reason),
                           text.decode("utf-8", errors="replace"))


def read_jsonl_table(data: bytes, relpath: str
                     ) -> tuple[pa.Table, list[dict[str, Any]], list[int] | None]:
    """Parses JSON Lines, rejecting malformed lines and values of a changed type.

    Args:
        data: The whole file.
        relpath: File name used in rejects and errors.

    Returns:
        ``(table, rejected, line_numbers)``: the kept rows, the rejected lines, and the
        1-based line of each kept row (None when pyarrow read the file whole: row i is line
        i + 1).

    Raises:
        InputError: A column's values cannot form one Arrow column even with consistent JSON
            types (e.g. lists mixing numbers and strings); names the file and column.
    """
    try:
        table = pajson.read_json(io.BytesIO(data))
        # pyarrow skips blank lines: then row i is not line i + 1; number them line by line
        if table.num_rows == data.count(b"\n") + (not data.endswith(b"\n")):
            return table, [], None
    except pa.ArrowInvalid:
        pass
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    rejected: list[dict[str, Any]] = []
    parsed: list[tuple[int, bytes, dict[str, Any]]] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:  # RecursionError: nested too deeply
            rejected.append(_reject(relpath, number, UNPARSABLE,
                                    f"malformed JSON: {str(e)[:120]}", line))
            continue
        if not isinstance(obj, dict):
            rejected.append(_reject(relpath, number, UNPARSABLE, "malformed JSON: a JSON "
                                    f"object is required, got {type(obj).__name__}", line))
            continue
        parsed.append((number, line, obj))
    # A column holding a list on any line is a list column: a scalar there is a one-value
    # list. A column's type is the one most of its lines hold (ties: the earliest), so one
    # odd line first cannot reject every other line of the file.
    listy = {c for _, _, obj in parsed for c, v in obj.items() if isinstance(v, list)}
    typed = []
    votes: dict[str, dict[str, list[int]]] = {}  # column → kind → [lines, first line]
    for number, line, obj in parsed:
        obj = {c: [v] if c in listy and v is not None and not isinstance(v, list) else v
               for c, v in obj.items()}
        kinds = {c: k for c, k in ((c, _kind(v)) for c, v in obj.items()) if k is not None}
        typed.append((number, line, obj, kinds))
        for c, k in kinds.items():
            if k not in ("list", _MIXED):  # an empty list fits any list: no vote
                votes.setdefault(c, {}).setdefault(k, [0, number])[0] += 1
    column_kind = {c: max(ks.items(), key=lambda kv: (kv[1][0], -kv[1][1]))
                   for c, ks in votes.items()}
    for number, line, obj, kinds in typed:
        clash = next((c for c, k in kinds.items() if k == _MIXED or (
            c in column_kind and not _fits(k, column_kind[c][0]))), None)
        if clash is not None:
            kind, (count, where) = column_kind.get(clash, ("list of one JSON type", (0, 0)))
            rejected.append(_reject(
                relpath, number, TYPE_MISMATCH, f"column {clash!r} holds a {kinds[clash]} here "
                f"but a {kind} on {count} other line(s) (the first: line {where})", line))
            continue
        rows.append(obj)
        numbers.append(number)
    rejected.sort(key=lambda r: r["line"])
    names = list(dict.fromkeys(c for r in rows for c in r))
    arrays = []
    for c in names:
        try:
            arrays.append(pa.array([r.get(c) for r in rows]))
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise InputError(
                f"column {c!r} of {relpath!r} cannot be read as one column ({e}). Write its "
                "values with one JSON type (lists of numbers or of strings, not both).") from e
    return pa.table(arrays, names=names), rejected, numbers
