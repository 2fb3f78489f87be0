"""The value and label rules every make-elwc reader applies (LETOR, CSV, JSONL, Parquet).

ELWC stores labels and float features as float32, and the training reader pads lists with
label ``-1``. So a document is rejected (its line or row named, counted per reason) when

* its label is not a number (NaN), negative (``-1`` would make it padding: it would vanish
  from the loss and the metrics), or beyond the float32 range (``inf``, ``1e39``);
* a float feature value is beyond the float32 range (``1e39`` would be written as ``inf``;
  ``inf`` itself too). NaN feature values are kept: in tabular input NaN is a value, the
  missing-value marker that the analysis counts and the layers impute.

Example:
    >>> for i, why in label_problems(np.array([1.0, -1.0, np.inf, np.nan])).items():
    ...     print(i, why[:40])
    1 label -1.0 is negative; labels must be >
    2 label inf is beyond the float32 range (|
    3 label nan is not a number
    >>> beyond_float32(np.array([1.0, 1e39, np.nan, -np.inf])).tolist()
    [False, True, False, True]
"""

from __future__ import annotations

import numpy as np

FLOAT32_MAX = float(np.finfo(np.float32).max)


def beyond_float32(values: np.ndarray) -> np.ndarray:
    """Mask of the values that float32 cannot hold (``|x| > FLOAT32_MAX``, ``±inf``); NaN is
    not beyond the range."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.isinf(values.astype(np.float32))


def label_problems(labels: np.ndarray) -> dict[int, str]:
    """``{index: reason}`` of the labels a document cannot have (see the module docstring)."""
    labels = np.asarray(labels, dtype=np.float64)
    out: dict[int, str] = {}
    for i in np.flatnonzero(np.isnan(labels)).tolist():
        out[i] = f"label {float(labels[i])!r} is not a number"
    for i in np.flatnonzero(labels < 0).tolist():
        out[i] = (f"label {float(labels[i])!r} is negative; labels must be >= 0 "
                  "(-1 marks padding examples in the reader output)")
    for i in np.flatnonzero(beyond_float32(labels) & ~(labels < 0)).tolist():
        out[i] = (f"label {float(labels[i])!r} is beyond the float32 range "
                  f"(|x| <= {FLOAT32_MAX:.8g}); rescale the labels")
    return dict(sorted(out.items()))


def value_problem(feature: str, value: float) -> str:
    """The reason for a float feature value beyond the float32 range."""
    return (f"feature {feature} value {float(value)!r} is beyond the float32 range "
            f"(|x| <= {FLOAT32_MAX:.8g}); rescale the feature")
