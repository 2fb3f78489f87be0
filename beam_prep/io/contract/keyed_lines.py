"""The rules every one-line-per-key artifact file shares, checked by one reader.

``per_key/<name>.jsonl``, ``per_key/<name>.buckets.jsonl`` and
``vocab/<name>.target.jsonl`` hold one JSON array per line, its first value the key (a
string), keys in strictly increasing UTF-8 byte order, and as many lines as the manifest
records. Each format checks its own values (its ``parse_line``); the array's shape, the key
and the order and count of the lines are checked here.

Example:
    >>> bad = lambda n, why: ValueError(f"line {n}: {why}")
    >>> json_array(b'["a", 1]', 2, 1, bad)
    ['a', 1]
    >>> rows = lambda lines: [(line.decode(),) for line in lines]
    >>> list(sorted_rows([b"a", b"b"], "f", lambda line, n: (line.decode(),), bad,
    ...                  expected=2, what="keys", field="key_count"))
    [('a',), ('b',)]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from beam_prep.errors import ArtifactError

#: ``bad(line number, why)``: the format's error for one line (names the file and the fix).
Bad = Callable[[int, str], Exception]


def json_array(line: bytes, size: int, line_no: int, bad: Bad) -> list[Any]:
    """The line as a JSON array of ``size`` values.

    Raises:
        ``bad(line_no, ...)``: Not JSON, or not an array of that size.
    """
    try:
        row = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise bad(line_no, "not a JSON array") from None
    if not isinstance(row, list) or len(row) != size:
        raise bad(line_no, f"not a JSON array of {size} values")
    return row


def check_key(key: Any, line_no: int, bad: Bad, *, what: str = "key",
              empty: bool = False) -> str:
    """The key: a string (non-empty unless ``empty``) that UTF-8 can encode.

    Raises:
        ``bad(line_no, ...)``: Not such a string.
    """
    if not isinstance(key, str) or not (key or empty):
        raise bad(line_no, f"the {what} is not a {'' if empty else 'non-empty '}string")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise bad(line_no, f"the {what} holds a lone surrogate") from None
    return key


def keys_not_increasing(previous: bytes, key: bytes, text: str) -> str:
    """The default message of a key not after the previous line's."""
    return "the keys are not in strictly increasing UTF-8 byte order"


def sorted_rows(lines: Any, path: str, parse: Callable[[bytes, int], tuple], bad: Bad, *,
                expected: int | None, what: str, field: str,
                out_of_order: Callable[[bytes, bytes, str], str] = keys_not_increasing
                ) -> Iterator[tuple]:
    """The parsed rows of the lines (bytes, without ``\\n``), streamed, keys checked in order.

    Args:
        lines: The file's lines.
        path: The file (for the messages).
        parse: ``parse(line, line number)``: the format's checked row, its key first.
        bad: The format's line error.
        expected: The number of lines the manifest records (None: not checked).
        what: What the lines hold, for the count message ("keys", "tokens").
        field: The manifest field of ``expected``.
        out_of_order: The message of a key not after the previous one.

    Raises:
        ArtifactError: A line's error, a key out of order or repeated, or another number of
            lines than ``expected``, once the lines are exhausted.
    """
    previous = None
    n = 0
    for i, line in enumerate(lines, 1):
        row = parse(line, i)
        encoded = row[0].encode("utf-8")
        if previous is not None and not previous < encoded:
            raise bad(i, out_of_order(previous, encoded, row[0]))
        previous = encoded
        n += 1
        yield row
    if expected is not None and n != expected:
        raise ArtifactError(
            f"{path} holds {n} {what} but the manifest records {field}={expected}. "
            "Fix: re-run `beam-prep analyze` into a fresh directory.")
