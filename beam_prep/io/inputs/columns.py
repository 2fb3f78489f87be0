"""Column normalisation: bring any input column to the type a feature needs, vectorised.

Every reader hands raw Arrow columns here. The result is one of three Arrow types (or a
list of it, for multivalent inputs such as tf.Example features and Parquet lists):

* ``string``  → ``large_string`` (UTF-8 checked)
* ``int64``   → ``int64``
* ``float64`` → ``float64``

Cells that cannot be converted are reported through a boolean "bad" mask and a reason, so
the caller can move the whole row to ``rejected/``. Nulls are *missing*, never bad.

Example:
    >>> import pyarrow as pa
    >>> arr, bad, reason = normalize(pa.array(["1.5", "x", None]), "float64")
    >>> arr.to_pylist(), bad.tolist(), reason
    ([1.5, None, None], [False, True, False], 'unparsable_number')
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ColumnType = Literal["string", "int64", "float64"]
COLUMN_TYPES: tuple[str, ...] = ("string", "int64", "float64")

REASON_UTF8 = "invalid_utf8"
REASON_NUMBER = "unparsable_number"
REASON_TYPE = "wrong_type"
REASON_RANGE = "out_of_range"

_FLOAT_RE = (r"^[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
             r"|[iI][nN][fF]([iI][nN][iI][tT][yY])?|[nN][aA][nN])$")
_INT_RE = r"^[+-]?[0-9]+$"
_TARGET = {"string": pa.large_string(), "int64": pa.int64(), "float64": pa.float64()}


def _no_bad(n: int) -> np.ndarray:
    return np.zeros(n, dtype=bool)


def _valid_utf8_mask(arr: pa.Array) -> np.ndarray:
    """Per-cell UTF-8 validity of a binary array (only called when a bulk cast failed)."""
    out = np.ones(len(arr), dtype=bool)
    for i, v in enumerate(arr.to_pylist()):
        if v is not None:
            try:
                v.decode("utf-8")
            except UnicodeDecodeError:
                out[i] = False
    return out


def _binary_to_string(arr: pa.Array) -> tuple[pa.Array, np.ndarray, str | None]:
    arr = arr.cast(pa.large_binary())
    try:
        return arr.cast(pa.large_string()), _no_bad(len(arr)), None
    except pa.ArrowInvalid:
        ok = _valid_utf8_mask(arr)
        cleaned = pc.if_else(pa.array(ok), arr, pa.nulls(len(arr), pa.large_binary()))
        return cleaned.cast(pa.large_string()), ~ok, REASON_UTF8


def _parse_numbers(arr: pa.Array, target: str) -> tuple[pa.Array, np.ndarray, str | None]:
    """Parses a string array as numbers; blanks are missing, anything else unparsable is bad."""
    trimmed = pc.utf8_trim_whitespace(arr)
    blank = pc.equal(pc.utf8_length(trimmed), 0)
    trimmed = pc.if_else(blank, pa.nulls(len(arr), trimmed.type), trimmed)
    pattern = _INT_RE if target == "int64" else _FLOAT_RE
    good = pc.match_substring_regex(trimmed, pattern)
    bad = pc.and_(pc.invert(good), pc.is_valid(trimmed)).to_numpy(zero_copy_only=False)
    bad = np.asarray(bad, dtype=bool)
    if target == "float64":
        # Arrow parses "+3" and ".5" but not a leading '+' before inf/nan: strip it.
        trimmed = pc.replace_substring_regex(trimmed, r"^\+", "")
    kept = pc.if_else(pa.array(~bad), trimmed, pa.nulls(len(arr), trimmed.type))
    try:
        values = kept.cast(_TARGET[target])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # e.g. int64 overflow
        conv: list[int | float | None] = []
        for i, v in enumerate(kept.to_pylist()):
            parsed: int | float | None = None
            if v is not None:
                parsed = int(v) if target == "int64" else float(v)
                if target == "int64" and not -(2**63) <= parsed < 2**63:
                    parsed = None
                    bad[i] = True
            conv.append(parsed)
        values = pa.array(conv, _TARGET[target])
    return values, bad, (REASON_NUMBER if bad.any() else None)


def _normalize_flat(arr: pa.Array, target: str) -> tuple[pa.Array, np.ndarray, str | None]:
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        if target == "string" and (pa.types.is_string(t.value_type)
                                   or pa.types.is_large_string(t.value_type)):
            # Keep the encoding: only the (small) dictionary needs a type change.
            d = arr.dictionary.cast(pa.large_string())
            return (pa.DictionaryArray.from_arrays(arr.indices, d), _no_bad(n), None)
        return _normalize_flat(arr.dictionary_decode(), target)
    if pa.types.is_null(t):
        return pa.nulls(n, _TARGET[target]), _no_bad(n), None
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        as_str, bad, reason = _binary_to_string(arr)
        if target == "string":
            return as_str, bad, reason
        values, bad2, reason2 = _parse_numbers(as_str, target)
        return values, bad | bad2, reason or reason2
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if target == "string":
            return arr.cast(pa.large_string()), _no_bad(n), None
        return _parse_numbers(arr, target)
    if pa.types.is_integer(t):
        if target == "string":
            return arr.cast(pa.large_string()), _no_bad(n), None
        if target == "float64":  # beyond 2**53 rounds to the nearest double, as parsing does
            return arr.cast(pa.float64(), safe=False), _no_bad(n), None
        if t == pa.uint64():
            return _uint64_to_int64(arr)
        return arr.cast(pa.int64()), _no_bad(n), None
    if pa.types.is_floating(t):
        if target == "float64":
            return arr.cast(pa.float64()), _no_bad(n), None
        if target == "int64":
            f = arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
            with np.errstate(invalid="ignore"):
                integral = np.isfinite(f) & (np.floor(f) == f) & (np.abs(f) < 2.0**63)
            valid = np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)
            bad = valid & ~integral
            ints = np.where(integral, f, 0).astype(np.int64)
            mask = ~(valid & integral)
            return pa.array(ints, pa.int64(), mask=mask), bad, (REASON_TYPE if bad.any() else None)
        return _bad_all(arr, target)
    if pa.types.is_boolean(t) and target != "string":
        return arr.cast(_TARGET[target]), _no_bad(n), None
    return _bad_all(arr, target)


def _uint64_to_int64(arr: pa.Array) -> tuple[pa.Array, np.ndarray, str | None]:
    """uint64 → int64; values above 2**63 - 1 are bad (nulled), not wrapped around."""
    too_big = pc.fill_null(pc.greater(arr, pa.scalar(2**63 - 1, pa.uint64())), False)
    bad = np.asarray(too_big.to_numpy(zero_copy_only=False), dtype=bool)
    kept = pc.if_else(too_big, pa.nulls(len(arr), pa.uint64()), arr)
    return kept.cast(pa.int64()), bad, (REASON_RANGE if bad.any() else None)


def type_problem(t: pa.DataType) -> str | None:
    """Why a column of Arrow type ``t`` cannot feed a feature, or None when it can.

    Readable: null, boolean, integers, floats, (large) string and binary, dictionaries of
    those, and one level of list of them. Everything else (timestamps, dates, decimals,
    structs, maps, nested lists, ...) is refused up front rather than row by row: every row
    of such a column would be rejected.

    Example:
        >>> type_problem(pa.list_(pa.int32())) is None, type_problem(pa.timestamp("us"))
        (True, 'type timestamp[us] cannot be read as string, int64 or float64')
    """
    flat = t
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        flat = t.value_type
    if pa.types.is_dictionary(flat):
        flat = flat.value_type
    if (pa.types.is_null(flat) or pa.types.is_boolean(flat) or pa.types.is_integer(flat)
            or pa.types.is_floating(flat) or pa.types.is_string(flat)
            or pa.types.is_large_string(flat) or pa.types.is_binary(flat)
            or pa.types.is_large_binary(flat)):
        return None
    return f"type {t} cannot be read as string, int64 or float64"


def _bad_all(arr: pa.Array, target: str) -> tuple[pa.Array, np.ndarray, str]:
    valid = np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)
    return pa.nulls(len(arr), _TARGET[target]), valid, REASON_TYPE


def normalize(arr: pa.Array | pa.ChunkedArray, target: str
              ) -> tuple[pa.Array, np.ndarray, str | None]:
    """Converts a column to ``target`` (string, int64 or float64), keeping list nesting.

    Args:
        arr: Any Arrow column; list columns keep one level of nesting.
        target: One of :data:`COLUMN_TYPES`.

    Returns:
        ``(values, bad_rows, reason)``: converted column, a bool mask of rows holding a value
        that cannot be converted (those cells are nulled), and the reason when any is bad.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if pa.types.is_fixed_size_list(t):
            arr = arr.cast(pa.large_list(t.value_type))
        arr = arr.cast(pa.large_list(arr.type.value_type))
        flat, flat_bad, reason = _normalize_flat(arr.values, target)
        offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        row_bad = np.zeros(len(arr), dtype=bool)
        if flat_bad.any():
            owners = np.searchsorted(offsets, np.nonzero(flat_bad)[0], side="right") - 1
            row_bad[owners] = True
        # `arr.values` is already the slice-adjusted child array, so re-base the offsets.
        rebased = pa.array(offsets - offsets[0], pa.int64())
        out = pa.LargeListArray.from_arrays(rebased, flat, mask=pc.is_null(arr))
        return out, row_bad, reason
    return _normalize_flat(arr, target)


def flatten_values(arr: pa.Array) -> pa.Array:
    """Non-null leaf values of a (possibly list) column."""
    return leaf_values_with_nulls(arr).drop_null()


def leaf_weights(arr: pa.Array, row_weights: np.ndarray) -> np.ndarray:
    """The weight of each leaf value's row, aligned with :func:`leaf_values_with_nulls`.

    Example:
        >>> leaf_weights(pa.array([["a", "b"], None, ["c"]]), np.array([1., 2., 3.])).tolist()
        [1.0, 1.0, 3.0]
    """
    if pa.types.is_large_list(arr.type) or pa.types.is_list(arr.type):
        return row_weights[pc.list_parent_indices(arr).to_numpy(zero_copy_only=False)]
    return row_weights


def leaf_values_with_nulls(arr: pa.Array) -> pa.Array:
    """Leaf values of a (possibly list) column; a flat column keeps its nulls.

    For consumers that skip nulls themselves (the vocabulary counters): dropping them
    first would copy every string of the column.
    """
    if pa.types.is_large_list(arr.type) or pa.types.is_list(arr.type):
        return pc.list_flatten(arr)
    return arr


def missing_mask(arr: pa.Array) -> np.ndarray:
    """Rows with no value: null, or an empty list."""
    if pa.types.is_large_list(arr.type) or pa.types.is_list(arr.type):
        lengths = pc.fill_null(pc.list_value_length(arr), 0)
        return np.asarray(pc.equal(lengths, 0).to_numpy(zero_copy_only=False), dtype=bool)
    return np.asarray(pc.is_null(arr).to_numpy(zero_copy_only=False), dtype=bool)

