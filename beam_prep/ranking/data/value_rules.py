"""The value and label rules every make-elwc reader applies (LETOR, CSV, JSONL, Parquet), and
the reason codes of every rejected line.

ELWC stores labels and float features as float32, and the training reader pads lists with
label ``-1``. So a document is rejected (its line or row named, counted per reason) when

* its label is not a number (NaN), negative (``-1`` would make it padding: it would vanish
  from the loss and the metrics), or beyond the float32 range (``inf``, ``1e39``);
* a float feature value is beyond the float32 range (``1e39`` would be written as ``inf``;
  ``inf`` itself too). NaN feature values are kept: in tabular input NaN is a value, the
  missing-value marker that the analysis counts and the layers impute.

Every rejected line carries one short, stable reason code from :data:`REJECT_CODES` (the one
registry: the readers, ``stats.json``'s ``input.rejected_by_reason`` and the run summary use
these names) beside its human-readable reason (:class:`Problem`).

Example:
    >>> for i, p in label_problems(np.array([1.0, -1.0, np.inf, np.nan])).items():
    ...     print(i, p.code, "|", p.reason[:25])
    1 label_negative | label -1.0 is negative; l
    2 label_out_of_range | label inf is beyond the f
    3 label_not_a_number | label nan is not a number
    >>> beyond_float32(np.array([1.0, 1e39, np.nan, -np.inf])).tolist()
    [False, True, False, True]
    >>> count_codes([{"code": "label_negative"}, {"code": "unparsable"},
    ...              {"code": "label_negative"}])
    {'label_negative': 2, 'unparsable': 1}
    >>> format_code_counts({"label_negative": 2, "value_out_of_range": 1})
    'label_negative 2, value_out_of_range 1'
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

UNPARSABLE = "unparsable"
MISSING_QUERY_ID = "missing_query_id"
LABEL_NOT_A_NUMBER = "label_not_a_number"
LABEL_NEGATIVE = "label_negative"
LABEL_OUT_OF_RANGE = "label_out_of_range"
VALUE_OUT_OF_RANGE = "value_out_of_range"
INT_OUT_OF_RANGE = "int_out_of_range"
FEATURE_ID_OUT_OF_RANGE = "feature_id_out_of_range"
TYPE_MISMATCH = "type_mismatch"
OUT_OF_VOCABULARY = "out_of_vocabulary"

REJECT_CODES: dict[str, str] = {
    UNPARSABLE: "the line does not parse: not the LETOR grammar, malformed JSON or not a "
                "JSON object, a CSV row with the wrong number of fields",
    MISSING_QUERY_ID: "no query id (LETOR: no or an empty qid:; tables: a null or empty "
                      "query id cell)",
    LABEL_NOT_A_NUMBER: "the label is not a number (text, null, NaN)",
    LABEL_NEGATIVE: "the label is negative (-1 is the padding label of the reader output)",
    LABEL_OUT_OF_RANGE: "the label is beyond the float32 range (inf, 1e39)",
    VALUE_OUT_OF_RANGE: "a float feature value is beyond the float32 range (inf, 1e39)",
    INT_OUT_OF_RANGE: "an integer feature value is beyond the int64 range",
    FEATURE_ID_OUT_OF_RANGE: "a LETOR feature id outside [1, --num_features]",
    TYPE_MISMATCH: "a JSONL value whose JSON type differs from the rest of its column",
    OUT_OF_VOCABULARY: "with --artifacts: a value outside the vocabulary of a lookup without "
                       "OOV slots",
}
"""Reason code -> what it means: the one registry of why make-elwc rejects a line."""


class Problem(NamedTuple):
    """Why one line or row is rejected: a code of :data:`REJECT_CODES` and the readable
    reason (naming the value, and the fix where there is one)."""

    code: str
    reason: str


def rejected_record(file: str, line: int, problem: Problem, text: str) -> dict[str, Any]:
    """The JSON object of one rejected line: ``{"file", "line", "code", "reason", "text"}``
    (``text``: the line's first 200 characters; ``""`` for a row of a binary file)."""
    if problem.code not in REJECT_CODES:
        raise ValueError(f"unknown reject code {problem.code!r}; add it to REJECT_CODES")
    return {"file": file, "line": line, "code": problem.code, "reason": problem.reason,
            "text": text[:200]}


def count_codes(rejected: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{code: rejected lines}`` in code order (the ``rejected_by_reason`` of the counts)."""
    return dict(sorted(collections.Counter(str(r["code"]) for r in rejected).items()))


def format_code_counts(by_code: Mapping[str, int]) -> str:
    """``"label_negative 2, value_out_of_range 1"`` (code order; ``""`` for none)."""
    return ", ".join(f"{code} {int(n):,}" for code, n in sorted(by_code.items()))


FLOAT32_MAX = float(np.finfo(np.float32).max)


def beyond_float32(values: np.ndarray) -> np.ndarray:
    """Mask of the values that float32 cannot hold (``|x| > FLOAT32_MAX``, ``±inf``); NaN is
    not beyond the range."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.isinf(values.astype(np.float32))


def label_problems(labels: np.ndarray) -> dict[int, Problem]:
    """``{index: problem}`` of the labels a document cannot have (see the module docstring)."""
    labels = np.asarray(labels, dtype=np.float64)
    out: dict[int, Problem] = {}
    for i in np.flatnonzero(np.isnan(labels)).tolist():
        out[i] = label_not_a_number(labels[i])
    for i in np.flatnonzero(labels < 0).tolist():
        out[i] = Problem(LABEL_NEGATIVE, f"label {float(labels[i])!r} is negative; labels must "
                         "be >= 0 (-1 marks padding examples in the reader output)")
    for i in np.flatnonzero(beyond_float32(labels) & ~(labels < 0)).tolist():
        out[i] = Problem(LABEL_OUT_OF_RANGE, f"label {float(labels[i])!r} is beyond the float32 "
                         f"range (|x| <= {FLOAT32_MAX:.8g}); rescale the labels")
    return dict(sorted(out.items()))


def label_not_a_number(label: Any) -> Problem:
    """The problem of a label that is not a number (text, null, NaN); ``label`` as read."""
    shown = repr(float(label)) if isinstance(label, (float, np.floating)) else repr(label)[:40]
    return Problem(LABEL_NOT_A_NUMBER, f"label {shown} is not a number")


def value_problem(feature: str, value: float) -> Problem:
    """The problem of a float feature value beyond the float32 range."""
    return Problem(VALUE_OUT_OF_RANGE, f"feature {feature} value {float(value)!r} is beyond the "
                   f"float32 range (|x| <= {FLOAT32_MAX:.8g}); rescale the feature")
