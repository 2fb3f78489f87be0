"""Keras input and SavedModel signature names for data columns and ELWC features.

A data column may be called anything (``price/usd``, ``c d``, ``class``), but a
``keras.Input`` name may not contain ``/`` and a SavedModel signature argument must be a
Python identifier that is not a keyword. The dict keys of ``raw_inputs()`` stay the column
names; only the ``name=`` of each input (and of its ``tf.TensorSpec``) goes through
:func:`input_name`, a deterministic mapping documented in docs/generated_layers.md:

* a column matching ``[A-Za-z][A-Za-z0-9_]*`` that is not a Python keyword keeps its name;
* any other column: each character outside ``[A-Za-z0-9_]`` becomes ``_``, the result is
  cut to 40 characters, prefixed with ``c_`` unless it starts with a letter, and suffixed
  with ``_`` and the first 8 hex digits of the SHA-256 of the UTF-8 column name (so two
  columns that sanitise alike stay distinct, and the name never depends on other columns).

Example:
    >>> input_name("price")
    'price'
    >>> input_name("price/usd")
    'price_usd_82c96e70'
"""

from __future__ import annotations

import hashlib
import keyword
import re
from collections.abc import Iterable

from beam_prep.errors import SpecError

_KEPT = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_OTHER = re.compile(r"[^A-Za-z0-9_]")
_BASE_CHARS = 40


def input_name(column: str) -> str:
    """The Keras input / signature argument name of one data column (see the module doc)."""
    if _KEPT.fullmatch(column) and not keyword.iskeyword(column):
        return column
    base = _OTHER.sub("_", column)[:_BASE_CHARS]
    if not base[:1].isascii() or not base[:1].isalpha():
        base = "c_" + base
    digest = hashlib.sha256(column.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base}_{digest}"


def input_names(columns: Iterable[str]) -> dict[str, str]:
    """``{column: input name}`` for several columns, checked to be one-to-one.

    Raises:
        SpecError: Two columns map to one name (a column literally named like another's
            sanitised name), naming both and the fix.
    """
    out: dict[str, str] = {}
    owner: dict[str, str] = {}
    for column in columns:
        name = input_name(column)
        if name in owner and owner[name] != column:
            raise SpecError(
                f"Columns {owner[name]!r} and {column!r} both get the model input name "
                f"{name!r}. Fix: rename one of the columns.")
        owner[name] = column
        out[column] = name
    return out
