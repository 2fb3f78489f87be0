"""JSON Lines → Arrow table for make-elwc, with bad lines set aside instead of failing the file.

pyarrow reads a clean file in one call. When it refuses the file (a line that is not JSON, or a
column whose JSON type changes between lines), the file is read again line by line:

* a line that is not a JSON object (or nests deeper than Python can parse) is rejected;
* a value whose JSON type (number, string, boolean, list, object) differs from the type the
  column had on its first line with a value is rejected with its line (ints and floats are
  both numbers: the column becomes float, as pyarrow does);
* everything else is kept, in file order, with its 1-based line number.

Rejected lines are dicts ``{"file", "line", "reason", "text"}``, the shape of
:class:`~beam_prep.ranking.data.sources.PieceResult` rejects.

Example:
    >>> t, bad, lines = read_jsonl_table(b'{"q":1,"x":1}\\n{"q":1,"x":"a"}\\nnope\\n', "f.jsonl")
    >>> t.to_pydict(), [(b["line"], b["reason"][:22]) for b in bad], lines
    ({'q': [1], 'x': [1]}, [(2, "column 'x' holds a str"), (3, 'malformed JSON: Expect')], [1])
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.json as pajson

from beam_prep.errors import InputError

_TEXT_LIMIT = 200


def _kind(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "object"


def _reject(relpath: str, line: int, reason: str, text: bytes) -> dict[str, Any]:
    return {"file": relpath, "line": line, "reason": reason,
            "text": text.decode("utf-8", errors="replace")[:_TEXT_LIMIT]}


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
        return pajson.read_json(io.BytesIO(data)), [], None
    except pa.ArrowInvalid:
        pass
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    rejected: list[dict[str, Any]] = []
    first_kind: dict[str, tuple[str, int]] = {}
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:  # RecursionError: nested too deeply
            rejected.append(_reject(relpath, number, f"malformed JSON: {str(e)[:120]}", line))
            continue
        if not isinstance(obj, dict):
            rejected.append(_reject(relpath, number, "malformed JSON: a JSON object is "
                                    f"required, got {type(obj).__name__}", line))
            continue
        kinds = {c: k for c, k in ((c, _kind(v)) for c, v in obj.items()) if k is not None}
        clash = next((c for c, k in kinds.items()
                      if c in first_kind and first_kind[c][0] != k), None)
        if clash is not None:
            kind, where = first_kind[clash]
            rejected.append(_reject(
                relpath, number, f"column {clash!r} holds a {kinds[clash]} here but a {kind} "
                f"on line {where}", line))
            continue
        for c, k in kinds.items():
            first_kind.setdefault(c, (k, number))
        rows.append(obj)
        numbers.append(number)
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
