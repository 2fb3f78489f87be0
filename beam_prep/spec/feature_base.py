"""The base of every feature kind: shared fields, option types and error helpers.

The kinds themselves live in :mod:`beam_prep.spec.features` (string, integer, text),
:mod:`beam_prep.spec.numeric_feature` and :mod:`beam_prep.spec.hashed_feature`.

Example:
    >>> "min_max" in SCALING_OPTIONS
    True
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Literal, get_args

from beam_prep.config import check_fields, field_error, shown
from beam_prep.errors import SpecError
from beam_prep.spec.lists import is_list
from beam_prep.spec.weights import check_weights

Kind = Literal["string", "integer", "text", "numeric", "hashed"]
LookupOutputMode = Literal["int", "one_hot", "multi_hot", "count"]
TextOutputMode = Literal["int", "multi_hot", "count", "tf_idf"]
Standardize = Literal["lower_and_strip_punctuation", "lower", "strip_punctuation", "none"]
Split = Literal["whitespace", "character", "none"]
HashedDtype = Literal["string", "integer"]
Scaling = Literal["z_score", "min_max", "none", "log1p", "robust", "piecewise_linear"]

KINDS: tuple[str, ...] = get_args(Kind)
LOOKUP_OUTPUT_MODES: tuple[str, ...] = get_args(LookupOutputMode)
TEXT_OUTPUT_MODES: tuple[str, ...] = get_args(TextOutputMode)
STANDARDIZE_OPTIONS: tuple[str, ...] = get_args(Standardize)
SPLIT_OPTIONS: tuple[str, ...] = get_args(Split)
HASHED_DTYPES: tuple[str, ...] = get_args(HashedDtype)
SCALING_OPTIONS: tuple[str, ...] = get_args(Scaling)

# Fields added after the first artifacts were written: left out of ``to_dict`` while they
# hold their default, so the canonical spec (and every manifest fingerprint) of a spec
# that does not use them is unchanged.
_OPTIONAL_FIELDS: dict[str, Any] = {"expr": None, "scaling": "z_score", "cross": None,
                                    "max_values": None, "shape": None, "impute": None,
                                    "missing_indicator": False,
                                    "weights": None, "weights_expr": None,
                                    # label-aware vocabulary (spec.label_fields)
                                    "labels": None, "adjusted_mutual_info": False,
                                    "min_diff_from_avg": None, "min_mutual_info": None,
                                    "per_key": None, "per_key_count": False,
                                    # target encoding (spec.target_fields)
                                    "target_encoding": None}

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _where(feature: str) -> str:
    return f"Feature {shown(feature, 80)}"


def feature_error(feature: str, field: str, value: Any, allowed: str) -> SpecError:
    return field_error(_where(feature), field, value, allowed)


@dataclasses.dataclass(frozen=True)
class FeatureBase:
    """Fields shared by every kind.

    Attributes:
        name: Feature name: a Python identifier; also the file stem of its artifacts.
        column: Input column (CSV header, JSON key, Parquet column, tf.Example feature)
            to read. Defaults to ``name``.
        expr: A derived feature: an expression over input columns (docs/expressions.md),
            e.g. ``log1p(price)``, instead of ``column``; null = read ``column``.
        weights: Input column holding each row's instance weight (string, integer, text
            and numeric features; :mod:`beam_prep.spec.weights`); null = unweighted.
        weights_expr: The weight as an expression over input columns instead of
            ``weights``; null = none.
    """

    name: str
    column: str | None = dataclasses.field(default=None, kw_only=True)
    expr: str | None = dataclasses.field(default=None, kw_only=True)
    weights: str | None = dataclasses.field(default=None, kw_only=True)
    weights_expr: str | None = dataclasses.field(default=None, kw_only=True)

    kind: str = dataclasses.field(default="", init=False)

    @property
    def source_column(self) -> str:
        """The input column this feature reads."""
        return self.column if self.column is not None else self.name

    def expression(self) -> Any:
        """The typed expression tree of a derived feature (``expr``), else None."""
        if self.expr is None:
            return None
        from beam_prep.spec.derived import derived_expression

        return derived_expression(self.name, self.kind, self.expr, getattr(self, "dtype", None))

    def input_columns(self) -> dict[str, str]:
        """Input column -> the type it is read as (``float``, ``int`` or ``string``).

        A plain feature reads its ``source_column``; a derived one the columns of its
        expression, typed as :mod:`beam_prep.spec.derived` infers them.
        """
        tree = self.expression()
        if tree is None:
            plain = {"numeric": "float", "integer": "int"}.get(self.kind, "string")
            if self.kind == "hashed":
                plain = "int" if getattr(self, "dtype", "") == "integer" else "string"
            return {self.source_column: plain}
        from beam_prep.spec.derived import input_types

        return dict(input_types(tree))

    def is_list(self) -> bool:
        """Whether the feature takes a list of values per row (beam_prep.spec.lists)."""
        return is_list(self)

    def validate(self) -> None:
        """Raises SpecError if a field has the wrong type or option, or is out of range."""
        if not isinstance(self.name, str) or not _NAME_RE.fullmatch(self.name):
            raise SpecError(
                "Feature `name` must be a Python identifier (letters, digits, underscore; "
                f"not starting with a digit). Received: name={self.name!r}"
            )
        if self.column is not None and (not isinstance(self.column, str) or not self.column):
            raise feature_error(self.name, "column", self.column, "a non-empty string or null")
        if self.expr is not None and self.column is not None:
            raise feature_error(self.name, "expr", self.expr,
                        "null when `column` is set (a feature reads one column or computes "
                        "an expression: drop `column`, or `expr`)")
        check_fields(self, where=_where(self.name))
        self.expression()
        check_weights(self)

    def to_dict(self) -> dict[str, Any]:
        """Canonical dict (kind first, then fields in declaration order)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _OPTIONAL_FIELDS and value == _OPTIONAL_FIELDS[f.name]:
                continue
            if f.name not in ("name", "kind"):
                out[f.name] = (dataclasses.asdict(value) if dataclasses.is_dataclass(value)
                               else value)
        return out
