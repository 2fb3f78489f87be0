"""Target-encoding partials in the analysis cache: one split's (token, fold) table as text.

A split's table (:mod:`~beam_prep.analyzers.target.stats`: ``(token | None, fold) ->
[rows, exact label sum]``) is stored as ``target-NNN.jsonl`` in the entry, one JSON line per
cell, sorted (the per-fold totals, token null, first; then tokens by UTF-8 bytes, folds
ascending)::

    [token, fold, rows, "exact label sum"]

The sum is the exact value as a hexadecimal floating-point literal, ``[-]0x<odd hex>p<exp>``
(``0x0p+0`` for zero): the integer in units of ``2**-SUM_SHIFT`` with its trailing zero
bits moved into the exponent, so a 0/1 label's sum reads ``0x3p+0`` instead of 270 hex
digits, and no bit is lost (Python's ``float.fromhex`` reads it, rounded). Every line is
checked on load (shape, types, fold range, duplicates, a sum on the ``2**-SUM_SHIFT``
grid): a file that the index's sha256 accepts but that does not parse raises
:class:`CacheFormatError`, and the entry is recomputed.

Example:
    >>> from beam_prep.analyzers.exact_sums import SUM_SHIFT
    >>> table = {("a", 1): [2, 3 << SUM_SHIFT], (None, 1): [2, 3 << SUM_SHIFT]}
    >>> body = table_bytes(table)
    >>> body.decode()
    '[null,1,2,"0x3p+0"]\\n["a",1,2,"0x3p+0"]\\n'
    >>> load_table(body, folds=2, name="target-000.jsonl") == table
    True
"""

from __future__ import annotations

import json
import re
from typing import Any

from beam_prep.analyzers.exact_sums import SUM_SHIFT

__all__ = ["CacheFormatError", "exact_text", "load_table", "parse_exact", "table_bytes"]

_EXACT = re.compile(r"(-?)0x([0-9a-f]{1,700})p([+-][0-9]{1,5})")
_MAX_EXPONENT = 4096  # far beyond any float64 sum (about 2**1100 at most)
_TEXT = json.JSONEncoder(ensure_ascii=True)


class CacheFormatError(ValueError):
    """A stored target table that does not parse (names the file and the line)."""


def exact_text(total: int) -> str:
    """An exact sum (units of ``2**-SUM_SHIFT``) as ``[-]0x<odd hex>p<exponent>``.

    Example:
        >>> exact_text(-(5 << (SUM_SHIFT - 2)))
        '-0x5p-2'
        >>> exact_text(1)
        '0x1p-1074'
    """
    if total == 0:
        return "0x0p+0"
    sign, magnitude = ("-", -total) if total < 0 else ("", total)
    zeros = (magnitude & -magnitude).bit_length() - 1
    return f"{sign}0x{magnitude >> zeros:x}p{zeros - SUM_SHIFT:+d}"


def parse_exact(text: Any) -> int:
    """The inverse of :func:`exact_text` (ValueError unless on the ``2**-SUM_SHIFT`` grid).

    Example:
        >>> parse_exact("0x3p-1") == 3 << (SUM_SHIFT - 1)
        True
    """
    match = _EXACT.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{str(text)[:40]!r} is not an exact sum like '0x3p+0'")
    sign, digits, exponent = match.groups()
    shift = int(exponent) + SUM_SHIFT
    if shift < 0 or int(exponent) > _MAX_EXPONENT:
        raise ValueError(f"{text[:40]!r} is off the grid of 2**-{SUM_SHIFT} or too large")
    value = int(digits, 16) << shift
    return -value if sign else value


def _order(key: tuple) -> tuple:
    token, fold = key
    return (token is not None, b"" if token is None else token.encode("utf-8"), fold)


def table_bytes(table: dict) -> bytes:
    """The file body of one split's table (ASCII, one line per cell, sorted)."""
    text = _TEXT.encode  # what json.dumps writes for a str, ASCII-escaped
    return "".join(
        f'[{"null" if token is None else text(token)},{int(fold)},{int(n)},"{exact_text(s)}"]\n'
        for (token, fold), (n, s) in sorted(table.items(), key=lambda kv: _order(kv[0]))
    ).encode("ascii")


def _cell(cell: Any, folds: int) -> tuple[tuple, list]:
    if not isinstance(cell, list) or len(cell) != 4:
        raise ValueError("not a list [token, fold, rows, sum]")
    token, fold, rows, total = cell
    if token is not None and not isinstance(token, str):
        raise ValueError(f"token {token!r} is not a string or null")
    for what, value, low, high in (("fold", fold, 0, folds - 1), ("rows", rows, 1, None)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (
                high is not None and value > high):
            raise ValueError(f"{what} {value!r} is not an integer in [{low}, {high}]")
    return (token, fold), [rows, parse_exact(total)]


def load_table(body: bytes, *, folds: int, name: str) -> dict:
    """One split's table from :func:`table_bytes` output.

    Args:
        body: The file's bytes.
        folds: The feature's ``target_encoding.folds`` (every fold must be below it).
        name: The file name, for the error message.

    Raises:
        CacheFormatError: Naming the file, the line and what is wrong with it.
    """
    table: dict = {}
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError as e:
        raise CacheFormatError(f"{name}: not ASCII ({e})") from None
    if text and not text.endswith("\n"):
        raise CacheFormatError(f"{name}: the last line is cut off")
    lines = text.split("\n")[:-1]
    try:  # one parse of the whole file (4x faster); per line to name a bad one
        cells = json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        cells = None
    if not isinstance(cells, list) or len(cells) != len(lines):
        cells = None
    for number, line in enumerate(lines, start=1):
        try:
            key, cell = _cell(json.loads(line) if cells is None else cells[number - 1], folds)
        except ValueError as e:  # json.JSONDecodeError is one
            raise CacheFormatError(f"{name} line {number}: {e}") from None
        if key in table:
            raise CacheFormatError(f"{name} line {number}: cell {key!r} is repeated")
        table[key] = cell
    return table
