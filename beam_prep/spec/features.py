"""Feature spec dataclasses: the five kinds of feature and their validation.

A spec lists the features to analyse. Each feature is one of five kinds:

=========  ===============================  ==========================================
kind       analysis                         Keras layer(s) generated from it
=========  ===============================  ==========================================
string     vocabulary (exact counts)        StringLookup (+ CategoryEncoding modes)
integer    vocabulary of decimal strings    IntegerLookup
text       token / n-gram vocabulary, df    TextVectorization
numeric    count/mean/variance/min/max,     Normalization, Discretization
           quantile boundaries
hashed     none                             Hashing (+ CategoryEncoding modes)
=========  ===============================  ==========================================

Types and ``Literal`` options are checked by :func:`beam_prep.config.check_fields` (the same
checks the YAML loader applies); each ``validate()`` adds the range checks.

Example:
    >>> StringFeature("country", top_k=10).validate()
    >>> NumericFeature("price", default_value=float("nan")).validate()
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: Feature 'price': `default_value` must be a finite number or \
null (NaN and infinity cannot stand in for a missing value). Received: default_value=nan
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Literal, Union, get_args

from beam_prep.config import check_fields, field_error, shown
from beam_prep.errors import SpecError
from beam_prep.spec.bounds import (
    LAYER_WHY,
    MAX_LAYER_SIZE,
    MAX_NGRAMS,
    MAX_NUM_BUCKETS,
    MIN_EPSILON,
    check_positive_int,
)
from beam_prep.spec.lists import Shape, check_list_fields, is_list

Kind = Literal["string", "integer", "text", "numeric", "hashed"]
LookupOutputMode = Literal["int", "one_hot", "multi_hot", "count"]
TextOutputMode = Literal["int", "multi_hot", "count", "tf_idf"]
Standardize = Literal["lower_and_strip_punctuation", "lower", "strip_punctuation", "none"]
Split = Literal["whitespace", "character", "none"]
HashedDtype = Literal["string", "integer"]
Scaling = Literal["z_score", "min_max", "none"]

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
                                    "max_values": None, "shape": None}

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _where(feature: str) -> str:
    return f"Feature {shown(feature, 80)}"


def _fail(feature: str, field: str, value: Any, allowed: str) -> SpecError:
    return field_error(_where(feature), field, value, allowed)




def _check_lookup_fields(f: Any) -> None:
    """Ranges of the fields shared by string and integer lookups."""
    check_positive_int(f.name, "top_k", f.top_k, optional=True)
    check_positive_int(f.name, "min_count", f.min_count, optional=False)
    check_positive_int(f.name, "num_oov_indices", f.num_oov_indices, optional=False, minimum=0,
                        maximum=MAX_LAYER_SIZE, why=LAYER_WHY)
    check_list_fields(f)


@dataclasses.dataclass(frozen=True)
class _FeatureBase:
    """Fields shared by every kind.

    Attributes:
        name: Feature name: a Python identifier; also the file stem of its artifacts.
        column: Input column (CSV header, JSON key, Parquet column, tf.Example feature)
            to read. Defaults to ``name``.
        expr: A derived feature: an expression over input columns (docs/expressions.md),
            e.g. ``log1p(price)``, instead of ``column``; null = read ``column``.
    """

    name: str
    column: str | None = dataclasses.field(default=None, kw_only=True)
    expr: str | None = dataclasses.field(default=None, kw_only=True)

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
            raise _fail(self.name, "column", self.column, "a non-empty string or null")
        if self.expr is not None and self.column is not None:
            raise _fail(self.name, "expr", self.expr,
                        "null when `column` is set (a feature reads one column or computes "
                        "an expression: drop `column`, or `expr`)")
        check_fields(self, where=_where(self.name))
        self.expression()

    def to_dict(self) -> dict[str, Any]:
        """Canonical dict (kind first, then fields in declaration order)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _OPTIONAL_FIELDS and value == _OPTIONAL_FIELDS[f.name]:
                continue
            if f.name not in ("name", "kind"):
                out[f.name] = value
        return out


@dataclasses.dataclass(frozen=True)
class StringFeature(_FeatureBase):
    """A string categorical feature: exact vocabulary, StringLookup.

    Attributes:
        top_k: Keep at most this many tokens (OOV and mask slots not included); null = all.
        min_count: Drop tokens seen fewer than this many times (TFT ``frequency_threshold``).
        num_oov_indices: OOV slots of the lookup layer.
        mask_token: Optional mask token (index 0 of the layer when set).
        output_mode: Lookup layer output: int, one_hot, multi_hot or count.
        default_value: Value that replaces a missing (null) cell; null = missing cells are
            skipped by the analysis and counted in ``missing_count``.
        shape: ``list`` for a list column (Parquet list, multi-value tf.Example feature,
            JSONL array); null = scalar, or list for ``expr: split(...)``
            (beam_prep.spec.lists).
        max_values: A list feature's int output padded/truncated to ``[batch, N]``; null =
            ragged.

    Example:
        >>> StringFeature("country", top_k=100).min_count
        1
    """

    top_k: int | None = None
    min_count: int = 1
    num_oov_indices: int = 1
    mask_token: str | None = None
    output_mode: LookupOutputMode = "int"
    default_value: str | None = None
    shape: Shape | None = None
    max_values: int | None = None
    kind: str = dataclasses.field(default="string", init=False)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        _check_lookup_fields(self)


@dataclasses.dataclass(frozen=True)
class IntegerFeature(_FeatureBase):
    """An integer categorical feature: vocabulary of integers, IntegerLookup.

    Integers are counted exactly and ordered like TFT orders them: count descending,
    ties broken by the decimal string of the value in reverse byte order.

    Attributes:
        top_k: Keep at most this many values; null = all.
        min_count: Drop values seen fewer than this many times.
        num_oov_indices: OOV slots of the lookup layer.
        mask_token: Optional integer mask value.
        output_mode: Lookup layer output: int, one_hot, multi_hot or count.
        default_value: Integer that replaces a missing cell; null = skip and count.
        shape: ``list`` for a list column (Parquet list, multi-value tf.Example feature,
            JSONL array); null = scalar, or list for ``expr: split(...)``
            (beam_prep.spec.lists).
        max_values: A list feature's int output padded/truncated to ``[batch, N]``; null =
            ragged.

    Example:
        >>> IntegerFeature("item_id", top_k=1000).num_oov_indices
        1
    """

    top_k: int | None = None
    min_count: int = 1
    num_oov_indices: int = 1
    mask_token: int | None = None
    output_mode: LookupOutputMode = "int"
    default_value: int | None = None
    shape: Shape | None = None
    max_values: int | None = None
    kind: str = dataclasses.field(default="integer", init=False)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        _check_lookup_fields(self)


@dataclasses.dataclass(frozen=True)
class TextFeature(_FeatureBase):
    """A free-text feature: tokens (and n-grams) counted as TextVectorization sees them.

    Attributes:
        standardize: lower_and_strip_punctuation, lower, strip_punctuation or none.
        split: whitespace, character or none.
        ngrams: Largest n-gram width; tokens of widths 1..ngrams are counted (Keras
            ``ngrams=int``). null or 1 = unigrams only.
        max_tokens: As in Keras: the layer's vocabulary size *including* the OOV token and,
            in ``int`` mode, the padding token: at most ``max_tokens - 2`` tokens are written
            (``max_tokens - 1`` in the other modes). null = all tokens.
        output_mode: int, multi_hot, count or tf_idf (tf_idf also records document
            frequencies and the document count).
        output_sequence_length: Pad/truncate length for ``int`` output; null = ragged
            to the longest in the batch.
        default_value: Text that replaces a missing cell; null = the row is skipped
            for this feature (not counted as a document).

    Example:
        >>> TextFeature("title", ngrams=2, output_mode="tf_idf").max_vocabulary_tokens()
    """

    standardize: Standardize = "lower_and_strip_punctuation"
    split: Split = "whitespace"
    ngrams: int | None = None
    max_tokens: int | None = None
    output_mode: TextOutputMode = "int"
    output_sequence_length: int | None = None
    default_value: str | None = None
    kind: str = dataclasses.field(default="text", init=False)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        check_positive_int(self.name, "ngrams", self.ngrams, optional=True,
                            maximum=MAX_NGRAMS, why="each width is one more pass over every "
                            "token; wider n-grams are nearly all distinct")
        check_positive_int(self.name, "output_sequence_length", self.output_sequence_length,
                            optional=True, maximum=MAX_LAYER_SIZE, why=LAYER_WHY)
        if self.max_tokens is not None:
            check_positive_int(self.name, "max_tokens", self.max_tokens, optional=True,
                                minimum=3, maximum=MAX_LAYER_SIZE, why=LAYER_WHY)
        if self.ngrams not in (None, 1) and self.split == "none":
            raise _fail(self.name, "ngrams", self.ngrams,
                        "null or 1 when split='none' (n-grams need split tokens)")
        if self.output_sequence_length is not None and self.output_mode != "int":
            raise _fail(self.name, "output_sequence_length", self.output_sequence_length,
                        "null unless output_mode='int'")

    def max_vocabulary_tokens(self) -> int | None:
        """Tokens written to the vocabulary file at most, as Keras counts them.

        ``max_tokens`` minus the OOV slot, and minus the padding slot in ``int`` mode (Keras
        has a padding index only when ``output_mode='int'``).
        """
        if self.max_tokens is None:
            return None
        return self.max_tokens - (2 if self.output_mode == "int" else 1)

    def ngram_widths(self) -> tuple[int, ...]:
        """The n-gram widths counted, e.g. (1, 2) for ``ngrams=2``."""
        return tuple(range(1, (self.ngrams or 1) + 1))


@dataclasses.dataclass(frozen=True)
class NumericFeature(_FeatureBase):
    """A numeric feature: moments for Normalization, quantiles for Discretization.

    Statistics ignore missing cells and NaN (both counted). Variance is the population
    variance (as ``tft.var`` and ``keras.layers.Normalization``).

    Attributes:
        num_buckets: When set, ``num_buckets - 1`` quantile boundaries are computed.
        epsilon: Quantile sketch error; null = ``min(1 / num_buckets, 0.01)`` (TFT's default).
        default_value: Number that replaces a missing cell; null = skip and count.
        scaling: The float output: ``z_score`` (Normalization with the mean and variance),
            ``min_max`` (``(x - min) / (max - min)`` from the analysed min and max, TF
            Transform's ``scale_to_0_1``: not clipped, and ``sigmoid(x)`` when
            ``min == max`` or there was no finite value) or ``none`` (the raw value).

    Example:
        >>> NumericFeature("price", num_buckets=20).resolved_epsilon()
        0.01
    """

    num_buckets: int | None = None
    epsilon: float | None = None
    default_value: float | None = None
    scaling: Scaling = "z_score"
    kind: str = dataclasses.field(default="numeric", init=False)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        if self.num_buckets is not None:
            check_positive_int(self.name, "num_buckets", self.num_buckets, optional=True,
                                minimum=2, maximum=MAX_NUM_BUCKETS,
                                why="the quantile sketch of 1/num_buckets error would need "
                                "gigabytes per worker; set a larger epsilon to keep "
                                "memory small")
        if self.epsilon is not None:
            if (isinstance(self.epsilon, bool) or not isinstance(self.epsilon, (int, float))
                    or not MIN_EPSILON <= self.epsilon < 1):
                raise _fail(self.name, "epsilon", self.epsilon,
                            f"a number in [{MIN_EPSILON:g}, 1) or null (the quantile sketch "
                            "buffers about log2(eps * rows) / eps values: 1.2 GB per worker "
                            "at 1e-6 on 20M rows, bad_alloc below 1e-9)")
            if self.num_buckets is None:
                raise _fail(self.name, "epsilon", self.epsilon,
                            "null unless num_buckets is set")
        if self.default_value is not None and not math.isfinite(self.default_value):
            raise _fail(self.name, "default_value", self.default_value,
                        "a finite number or null (NaN and infinity cannot stand in for a "
                        "missing value)")

    def resolved_epsilon(self) -> float | None:
        """The sketch epsilon actually used (TFT's default when not set)."""
        if self.num_buckets is None:
            return None
        if self.epsilon is not None:
            return float(self.epsilon)
        return min(1.0 / self.num_buckets, 0.01)


@dataclasses.dataclass(frozen=True)
class HashedFeature(_FeatureBase):
    """A hashed categorical feature: no analysis, Hashing layer settings carried through.

    Attributes:
        num_bins: Number of hash bins (required).
        salt: Optional integer salt of ``keras.layers.Hashing``.
        dtype: Input dtype, string or integer.
        output_mode: int, one_hot, multi_hot or count.
        cross: Two input columns hashed together by ``keras.layers.HashedCrossing``
            (FeatureSpace's ``crosses``; its exact semantics, so its limit of two
            columns), both of ``dtype``; instead of ``column`` / ``expr``, no ``salt``.
            An exact vocabulary of a cross is a string feature with ``expr: cross(a, b)``.
        shape: ``list`` for a list column (Parquet list, multi-value tf.Example feature,
            JSONL array); null = scalar, or list for ``expr: split(...)``
            (beam_prep.spec.lists).
        max_values: A list feature's int output padded/truncated to ``[batch, N]``; null =
            ragged.

    Example:
        >>> HashedFeature("user_id", num_bins=1024).salt is None
        True
        >>> HashedFeature("pair", num_bins=64, cross=("country", "device")).validate()
    """

    num_bins: int = 0
    salt: int | None = None
    dtype: HashedDtype = "string"
    output_mode: LookupOutputMode = "int"
    cross: tuple[str, ...] | None = None
    shape: Shape | None = None
    max_values: int | None = None
    kind: str = dataclasses.field(default="hashed", init=False)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        check_positive_int(self.name, "num_bins", self.num_bins, optional=False,
                            maximum=MAX_LAYER_SIZE, why=LAYER_WHY)
        check_list_fields(self)
        if self.cross is None:
            return
        if len(self.cross) != 2 or len(set(self.cross)) != 2 or not all(self.cross):
            raise _fail(self.name, "cross", list(self.cross),
                        "a list of two distinct column names (keras.layers.HashedCrossing "
                        "crosses exactly two inputs; cross more columns with "
                        "expr: cross(a, b, c) on a string feature)")
        for field in ("column", "expr", "salt"):
            if getattr(self, field) is not None:
                raise _fail(self.name, field, getattr(self, field),
                            "null when `cross` is set (HashedCrossing reads the crossed "
                            "columns and has no salt)")

    def input_columns(self) -> dict[str, str]:  # noqa: D102
        if self.cross is None:
            return super().input_columns()
        return {c: "int" if self.dtype == "integer" else "string" for c in self.cross}


Feature = Union[StringFeature, IntegerFeature, TextFeature, NumericFeature, HashedFeature]
VocabularyFeature = Union[StringFeature, IntegerFeature, TextFeature]

KIND_CLASSES: dict[str, type] = {
    "string": StringFeature,
    "integer": IntegerFeature,
    "text": TextFeature,
    "numeric": NumericFeature,
    "hashed": HashedFeature,
}

