"""The target-encoding file of a feature with ``target_encoding:``: layout and checked reader.

``vocab/<feature>.target.jsonl`` holds one token per line, as a JSON array::

    [token, encoding, [rows per fold], [label sum per fold], [out-of-fold encoding per fold]]

``token`` is a JSON string (an integer feature's token is its canonical decimal text, such
as ``"-12"``), ``encoding`` the smoothed mean label the layers give the token (a finite
number, or null when the label sums are beyond float64), then three lists of one value per
fold (``stats.target_encoding.folds``): labelled rows (integers >= 0, at least one row in
all), label sums and out-of-fold encodings (finite numbers or null). Lines are sorted by the
tokens' UTF-8 bytes, strictly (no token twice: the line order is the lookup's vocabulary
order, and Keras refuses a repeated term), and end with ``\\n``; their number is the
manifest's ``stats.target_encoding.tokens``. The file is text an attacker may have written:
:func:`rows_of` / :func:`read_target` check every line, the order and the count before
anything uses it, and name the first bad line.

Example:
    >>> parse_line(b'["a",0.5,[1,2],[0.0,1.5],[0.75,0.25]]', "f.jsonl", 1, 2)
    ('a', 0.5, [1, 2], [0.0, 1.5], [0.75, 0.25])
    >>> try:
    ...     parse_line(b'["a",0.5,[1],[0.0],[0.75]]', "f.jsonl", 3, 2)
    ... except ArtifactError as e:
    ...     print(str(e).split(". ")[0])
    f.jsonl line 3: the rows list holds 1 values, not one per fold (2)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from beam_prep.errors import ArtifactError
from beam_prep.io.contract.keyed_lines import check_key, json_array, sorted_rows
from beam_prep.io.contract.per_key_file import finite_number

__all__ = ["ROLE", "TargetTable", "iter_rows", "parse_line", "read_target", "rows_of"]

ROLE = "target_encoding"
_INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,18})")


@dataclasses.dataclass(frozen=True)
class TargetTable:
    """The checked content of a target-encoding file, in file order.

    Attributes:
        tokens: The tokens (strings; ints for an integer feature), sorted and unique.
        encoding: float64 serving encodings (NaN where the file holds null).
        out_of_fold: float64 ``(tokens, folds)`` out-of-fold encodings (NaN for null).
    """

    tokens: list[Any]
    encoding: np.ndarray
    out_of_fold: np.ndarray


def _bad(path: str, line_no: int, why: str) -> ArtifactError:
    return ArtifactError(
        f"{path} line {line_no}: {why}. Each line must be [token, encoding, [rows per fold], "
        "[label sum per fold], [out-of-fold encoding per fold]] (token a string, one value "
        "per fold in each list, tokens in strictly increasing UTF-8 byte order, finite "
        "numbers or null). Fix: re-run `beam-prep analyze` into a fresh directory; do not "
        "edit artifact files.")


def _numbers(values: Any, folds: int, what: str, path: str, line_no: int) -> list:
    if not isinstance(values, list):
        raise _bad(path, line_no, f"the {what} list is not a JSON array")
    if len(values) != folds:
        raise _bad(path, line_no, f"the {what} list holds {len(values)} values, not one per "
                   f"fold ({folds})")
    return values


def parse_line(line: bytes, path: str, line_no: int, folds: int, *, integer: bool = False
               ) -> tuple[str, float | None, list[int], list[float | None],
                          list[float | None]]:
    """One checked line ``(token, encoding, rows, sums, out_of_fold)`` (nulls as None).

    Args:
        line: The line, without its ``\\n``.
        path: The file (for the message).
        line_no: The line number, from 1.
        folds: ``stats.target_encoding.folds``.
        integer: The feature is an integer feature (tokens in canonical decimal).

    Raises:
        ArtifactError: Not such a line (file, line number and the fix).
    """
    def bad(n: int, why: str) -> ArtifactError:
        return _bad(path, n, why)

    token, encoding, rows, sums, oof = json_array(line, 5, line_no, bad)
    check_key(token, line_no, bad, what="token", empty=True)
    if integer and not (_INTEGER.fullmatch(token) and -2 ** 63 <= int(token) < 2 ** 63):
        raise _bad(path, line_no, f"the token {token[:40]!r} of an integer feature is not a "
                   "canonical int64 decimal")
    if encoding is not None and not finite_number(encoding):
        raise _bad(path, line_no, f"the encoding {str(encoding)[:40]} is not a finite number "
                   "or null")
    rows = _numbers(rows, folds, "rows", path, line_no)
    if not all(type(n) is int and 0 <= n < 2 ** 63 for n in rows) or sum(rows) < 1:
        raise _bad(path, line_no, "the rows are not integers >= 0 with at least one row")
    for values, what in ((sums, "label sum"), (oof, "out-of-fold")):
        if not all(v is None or finite_number(v) for v in _numbers(values, folds, what, path,
                                                                    line_no)):
            raise _bad(path, line_no, f"the {what} list holds a value that is not a finite "
                       "number or null")
    as_float = [None if v is None else float(v) for v in sums], \
        [None if v is None else float(v) for v in oof]
    return (token, None if encoding is None else float(encoding), rows, *as_float)


def iter_rows(lines: Any, path: str, folds: int, *, integer: bool = False,
              token_count: int | None = None) -> Iterator[tuple]:
    """Checked rows of a target-encoding file, streamed (see :func:`parse_line`).

    Raises:
        ArtifactError: A bad line, a token repeated or out of order, or another number of
            tokens than ``token_count`` (the manifest's), once the lines are exhausted.
    """
    return sorted_rows(lines, path,
                       lambda line, i: parse_line(line, path, i, folds, integer=integer),
                       lambda i, why: _bad(path, i, why), expected=token_count, what="tokens",
                       field="stats.target_encoding.tokens", out_of_order=_out_of_order)


def _out_of_order(previous: bytes, token: bytes, text: str) -> str:
    why = ("repeats the token of the line before" if previous == token else
           "the token is not after the line before's in UTF-8 byte order")
    return f"{why} ({text[:40]!r})"


def rows_of(art: Any, name: str) -> Iterator[tuple]:
    """The checked rows of a feature's target-encoding file, streamed (bounded lines).

    Args:
        art: An opened :class:`~beam_prep.io.contract.artifacts.Artifacts` (its manifest checked).
        name: The target-encoded feature.
    """
    te = art.stats(name)["target_encoding"]
    return iter_rows(art.iter_lines(name, ROLE), art.file_path(name, ROLE), int(te["folds"]),
                     integer=art.feature(name).kind == "integer", token_count=te["tokens"])


def read_target(art: Any, name: str) -> TargetTable:
    """The checked target-encoding table of a feature (see :func:`rows_of`)."""
    integer = art.feature(name).kind == "integer"
    folds = int(art.stats(name)["target_encoding"]["folds"])
    tokens: list[Any] = []
    encoding: list[float] = []
    oof: list[list[float]] = []
    for token, enc, _, _, out in rows_of(art, name):
        tokens.append(int(token) if integer else token)
        encoding.append(np.nan if enc is None else enc)
        oof.append([np.nan if v is None else v for v in out])
    return TargetTable(tokens, np.asarray(encoding, np.float64),
                       np.asarray(oof, np.float64).reshape(len(tokens), folds))
