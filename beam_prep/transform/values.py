"""A feature's value before its layers, from an Arrow batch: what the Keras layers see.

The generated module feeds each layer chain a ``(batch, 1)`` raw input (or a derived value);
this module builds the same value from a batch read by :mod:`beam_prep.io.inputs.readers`:

=========  ==========================  ===============================  ===================
value      Arrow column read as        "missing" (null) becomes         represented here as
=========  ==========================  ===============================  ===================
string     string                      ``""``                           ``pa.Array`` (no null)
int64      int64                       ``MISSING_INTEGER`` (-2⁶³)       ``np.int64`` (n,)
float32    float64, rounded to float32  ``NaN``                          ``np.float32`` (n,)
list       large_list<string|int64>    the row's missing values are     :class:`Ragged`
                                       dropped (they are the padding
                                       the lookups map to index 0)
cross      two scalars                 as above                         tuple of two values
=========  ==========================  ===============================  ===================

A feature with ``default_value`` (or an imputed value, ``impute``) then has its missing
values replaced (``FillMissing``; a float NaN counts as missing); a missing indicator output
reads the value before that (:func:`missing_mask`). A derived feature (``expr``) is evaluated by
:func:`beam_prep.expr.arrow.evaluate` on the int64/float64 columns and only its result is
cast to the layer dtype (float32 for numeric features), the semantics of the generated
module's ``DerivedFeature`` layer once its expression inputs keep int64/float64.

Example:
    >>> v = feature_value(plan_feature, batch)                    # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.codegen.plan import MISSING_INTEGER, FeaturePlan
from beam_prep.errors import SpecError
from beam_prep.expr import arrow as expr_arrow
from beam_prep.io.inputs.scalar_rows import flatten_scalar_columns  # noqa: F401 (re-exported)
from beam_prep.spec.derived import ARROW_TYPES, input_types
from beam_prep.transform.per_key_buckets import to_float32

#: Arrow type each raw layer dtype is read as.
READ_TYPES = {"string": "string", "int64": "int64", "float32": "float64"}


@dataclasses.dataclass(frozen=True)
class Ragged:
    """A list per row: ``values[row_splits[i]:row_splits[i + 1]]`` is row ``i``.

    Attributes:
        row_splits: int64, ``n + 1`` entries from 0.
        values: The flat values (a string ``pa.Array`` or an int64/float32 ndarray).
    """

    row_splits: np.ndarray
    values: Any


def read_columns(features: tuple[FeaturePlan, ...]) -> dict[str, str]:
    """Data column -> Arrow type to read (``string``, ``int64``, ``float64``).

    Raises:
        SpecError: One column is read with two types.
    """
    out: dict[str, str] = {}
    owner: dict[str, str] = {}
    for fp in features:
        if fp.crossed:
            reads = {c: READ_TYPES[fp.dtype] for c in fp.crossed}
        elif fp.derived is not None:
            reads = {c: ARROW_TYPES[t] for c, t in input_types(fp.derived.tree).items()}
        else:
            reads = {fp.column: READ_TYPES[fp.dtype]}
        if fp.keyed is not None:  # per_key: the key's column(s), as the analysis read them
            reads = {**reads, **({fp.keyed.column: "string"} if fp.keyed.derived is None else
                                 {c: ARROW_TYPES[t] for c, t in
                                  input_types(fp.keyed.derived.tree).items()})}
        for column, typ in reads.items():
            if out.setdefault(column, typ) != typ:
                raise SpecError(
                    f"Column {column!r} is read as {out[column]} by feature {owner[column]!r} "
                    f"and as {typ} by feature {fp.name!r}. Fix: read it with one type, or "
                    "convert it upstream into two columns.")
            owner.setdefault(column, fp.name)
    return out


def _strings(arr: pa.Array, *, keep_dictionary: bool = False) -> pa.Array:
    """A string column without nulls (``""``); a dictionary column (Parquet) may stay one,
    nulls included, when ``keep_dictionary`` (the layers then map its distinct values once,
    a null index as ``""``: :func:`beam_prep.transform.layers.per_distinct`)."""
    if pa.types.is_dictionary(arr.type):
        if keep_dictionary:
            return arr
        arr = arr.dictionary_decode()
    return pc.fill_null(arr, "") if arr.null_count else arr


def _scalar(arr: pa.Array, dtype: str, *, keep_dictionary: bool = False) -> Any:
    if dtype == "string":
        return _strings(arr, keep_dictionary=keep_dictionary)
    if dtype == "int64":
        return np.asarray(pc.fill_null(arr.cast(pa.int64()), MISSING_INTEGER)
                          .to_numpy(zero_copy_only=False), np.int64)
    floats = pc.fill_null(arr.cast(pa.float64()), float("nan"))
    return to_float32(floats.to_numpy(zero_copy_only=False))


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def list_columns(features: tuple[FeaturePlan, ...]) -> frozenset[str]:
    """The data columns read as a list per row (list features' own columns)."""
    return frozenset(fp.column for fp in features
                     if fp.list_input and fp.derived is None and not fp.crossed)


def _ragged(arr: pa.Array, dtype: str) -> Ragged:
    """A list column with its missing elements dropped (null rows are empty). A flat column
    (a tf.Example batch where every record holds one value) is one value per row."""
    if _is_list(arr.type):
        flat = pc.list_flatten(arr)
        parents = np.asarray(pc.list_parent_indices(arr).to_numpy(zero_copy_only=False),
                             np.int64)
    else:
        flat, parents = arr, np.arange(len(arr), dtype=np.int64)
    if pa.types.is_dictionary(flat.type):
        flat = flat.dictionary_decode()
    missing = "" if dtype == "string" else MISSING_INTEGER
    keep = pc.fill_null(pc.not_equal(flat, pa.scalar(missing, flat.type)), False)
    keep_np = np.asarray(keep.to_numpy(zero_copy_only=False), bool)
    splits = np.zeros(len(arr) + 1, np.int64)
    np.cumsum(np.bincount(parents[keep_np], minlength=len(arr)), out=splits[1:])
    values = flat.filter(keep)
    if dtype != "string":
        values = np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False), np.int64)
    return Ragged(splits, values)


def _fill(value: Any, dtype: str, default: Any) -> Any:
    if dtype == "string":
        return pc.if_else(pc.equal(value, ""), pa.scalar(default, value.type), value)
    if dtype == "int64":
        return np.where(value == MISSING_INTEGER, np.int64(default), value)
    return np.where(np.isnan(value), np.float32(default), value)


def _derived(fp: FeaturePlan, batch: pa.RecordBatch) -> Any:
    d = fp.derived
    result = expr_arrow.evaluate(d.tree, batch)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    if d.list_output:
        return _ragged(result, "string")
    if d.output_dtype == "string":
        return _strings(result.cast(pa.string()) if not pa.types.is_string(result.type)
                        and not pa.types.is_large_string(result.type) else result)
    return _scalar(result, d.output_dtype)


def feature_value(fp: FeaturePlan, batch: pa.RecordBatch, *, fill: bool = True) -> Any:
    """The value ``fp``'s layers take, for every row of ``batch`` (see the module table).

    Args:
        fp: The feature's plan (``beam_prep.codegen.plan``).
        batch: Columns read with :func:`read_columns`' types.
        fill: Apply the feature's FillMissing; False gives the value before it (what a
            missing indicator reads; :func:`fill_missing` fills it afterwards).
    """
    if fp.crossed:
        return tuple(_scalar(batch.column(c), fp.dtype) for c in fp.crossed)
    if fp.derived is not None:
        value = _derived(fp, batch)
    elif fp.list_input:
        return _ragged(batch.column(fp.column), fp.dtype)
    else:
        value = _scalar(batch.column(fp.column), fp.dtype, keep_dictionary=fp.fill is None)
    if fill:
        value = fill_missing(fp, value)
    if fp.keyed is not None:  # (value, key): a missing key is "" as at the layer input
        key = fp.keyed
        if key.derived is None:
            return value, _strings(batch.column(key.column))
        result = expr_arrow.evaluate(key.derived.tree, batch)
        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        return value, _strings(result)
    return value


def fill_missing(fp: FeaturePlan, value: Any) -> Any:
    """``value`` with its missing entries replaced by the feature's FillMissing value."""
    if fp.fill is None or isinstance(value, (Ragged, tuple)):
        return value
    dtype = fp.derived.output_dtype if fp.derived is not None else fp.dtype
    return _fill(value, dtype, dict(fp.fill.args)["default_value"])


def missing_mask(value: Any) -> np.ndarray:
    """float32 1.0 where a value before FillMissing is missing (``""``, NaN, -2⁶³), else 0.0.

    A dictionary string column (Parquet) is mapped per distinct value, a null index as ``""``.
    """
    if isinstance(value, np.ndarray):
        missing = np.isnan(value) if value.dtype.kind == "f" else value == MISSING_INTEGER
        return missing.astype(np.float32)
    if pa.types.is_dictionary(value.type):
        indices = np.asarray(pc.fill_null(value.indices, -1).to_numpy(zero_copy_only=False),
                             np.int64)
        empty = np.asarray(pc.equal(value.dictionary, "").to_numpy(zero_copy_only=False), bool)
        return np.append(empty, True)[indices].astype(np.float32)  # null (-1): the last
    return np.asarray(pc.equal(value, "").to_numpy(zero_copy_only=False), np.float32)
