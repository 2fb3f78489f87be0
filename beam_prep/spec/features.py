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
from typing import Any, Union

from beam_prep.spec.bounds import (
    LAYER_WHY,
    MAX_LAYER_SIZE,
    MAX_NGRAMS,
    check_positive_int,
)
from beam_prep.spec.feature_base import (  # noqa: F401  (re-exported: the public names)
    HASHED_DTYPES,
    KINDS,
    LOOKUP_OUTPUT_MODES,
    SCALING_OPTIONS,
    SPLIT_OPTIONS,
    STANDARDIZE_OPTIONS,
    TEXT_OUTPUT_MODES,
    FeatureBase,
    HashedDtype,
    Kind,
    LookupOutputMode,
    Scaling,
    Split,
    Standardize,
    TextOutputMode,
    feature_error,
)
from beam_prep.spec.hashed_feature import HashedFeature
from beam_prep.spec.imputation import Impute, canonicalize, check_imputation
from beam_prep.spec.label_fields import check_label_fields
from beam_prep.spec.lists import Shape, check_list_fields
from beam_prep.spec.numeric_feature import NumericFeature
from beam_prep.spec.target_fields import TargetEncoding, check_target_fields
from beam_prep.spec.weights import is_weighted


def _check_lookup_fields(f: Any) -> None:
    """Ranges of the fields shared by string and integer lookups."""
    check_positive_int(f.name, "top_k", f.top_k, optional=True)
    if not is_weighted(f):  # weighted: a number >= 0 (spec.weights.check_weights)
        if isinstance(f.min_count, float):
            raise feature_error(f.name, "min_count", f.min_count,
                                "a positive integer (a float such as 1e23 or 2.0 is not an "
                                "integer: write digits; a float count needs `weights`)")
        check_positive_int(f.name, "min_count", f.min_count, optional=False)
    check_positive_int(f.name, "num_oov_indices", f.num_oov_indices, optional=False, minimum=0,
                        maximum=MAX_LAYER_SIZE, why=LAYER_WHY)
    check_list_fields(f)
    check_label_fields(f)
    check_target_fields(f)


@dataclasses.dataclass(frozen=True)
class StringFeature(FeatureBase):
    """A string categorical feature: exact vocabulary, StringLookup.

    Attributes:
        top_k: Keep at most this many tokens (OOV and mask slots not included); null = all.
        min_count: Drop tokens seen fewer than this many times (TFT ``frequency_threshold``);
            with weights, tokens whose weighted count is below it (a number >= 0).
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
        impute: ``most_frequent``: a missing cell becomes the top entry of the vocabulary
            (in the layers, not in the counts). A string ``default_value`` is always a
            literal, ``default_value: most_frequent`` included (beam_prep.spec.imputation).
        missing_indicator: Adds the output ``<name>_missing``: 1.0 where the value was
            missing (``""`` at the layer input), else 0.0.
        labels: An integer label column: the vocabulary is ranked by mutual information
            with it (TFT ``tft.vocabulary(labels=...)``) instead of by count; null = by count
            (beam_prep.spec.label_fields, docs/label_vocabulary.md).
        adjusted_mutual_info: With ``labels``: rank by adjusted mutual information (MI minus
            its expected value by chance; TFT ``use_adjusted_mutual_info``).
        min_diff_from_avg: With ``labels``: a (token, label) pair adds to the score only
            when its count differs from the count expected by chance by at least this much
            (TFT ``min_diff_from_avg``); null = TFT's recommendation from the row count.
        min_mutual_info: With ``labels``: drop tokens scoring below this (TFT passes it as
            ``frequency_threshold`` when labels are given); null = keep all.
        target_encoding: Out-of-fold target encoding statistics of a numeric label
            (beam_prep.spec.target_fields, docs/target_encoding.md); null = none.

    Example:
        >>> StringFeature("country", top_k=100).min_count
        1
    """

    top_k: int | None = None
    min_count: int | float = 1
    num_oov_indices: int = 1
    mask_token: str | None = None
    output_mode: LookupOutputMode = "int"
    default_value: str | None = None
    shape: Shape | None = None
    max_values: int | None = None
    impute: Impute | None = None
    missing_indicator: bool = False
    labels: str | None = None
    adjusted_mutual_info: bool = False
    min_diff_from_avg: float | None = None
    min_mutual_info: float | None = None
    target_encoding: TargetEncoding | None = None
    kind: str = dataclasses.field(default="string", init=False)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        _check_lookup_fields(self)
        check_imputation(self)


@dataclasses.dataclass(frozen=True)
class IntegerFeature(FeatureBase):
    """An integer categorical feature: vocabulary of integers, IntegerLookup.

    Integers are counted exactly and ordered like TFT orders them: count descending,
    ties broken by the decimal string of the value in reverse byte order.

    Attributes:
        top_k: Keep at most this many values; null = all.
        min_count: Drop values seen fewer than this many times; with weights, values whose
            weighted count is below it (a number >= 0).
        num_oov_indices: OOV slots of the lookup layer.
        mask_token: Optional integer mask value.
        output_mode: Lookup layer output: int, one_hot, multi_hot or count.
        default_value: Integer that replaces a missing cell; null = skip and count.
        shape: ``list`` for a list column (Parquet list, multi-value tf.Example feature,
            JSONL array); null = scalar, or list for ``expr: split(...)``
            (beam_prep.spec.lists).
        max_values: A list feature's int output padded/truncated to ``[batch, N]``; null =
            ragged.
        impute: ``most_frequent``: a missing cell becomes the top entry of the vocabulary
            (ties as the vocabulary orders them); ``default_value: most_frequent`` is the
            same (beam_prep.spec.imputation).
        missing_indicator: Adds the output ``<name>_missing``: 1.0 where the value was
            missing, else 0.0.
        labels, adjusted_mutual_info, min_diff_from_avg, min_mutual_info: As for
            :class:`StringFeature` (the tokens are the values' decimal strings).
        target_encoding: As for :class:`StringFeature`.

    Example:
        >>> IntegerFeature("item_id", top_k=1000).num_oov_indices
        1
    """

    top_k: int | None = None
    min_count: int | float = 1
    num_oov_indices: int = 1
    mask_token: int | None = None
    output_mode: LookupOutputMode = "int"
    default_value: int | None = None
    shape: Shape | None = None
    max_values: int | None = None
    impute: Impute | None = None
    missing_indicator: bool = False
    labels: str | None = None
    adjusted_mutual_info: bool = False
    min_diff_from_avg: float | None = None
    min_mutual_info: float | None = None
    target_encoding: TargetEncoding | None = None
    kind: str = dataclasses.field(default="integer", init=False)

    def __post_init__(self) -> None:
        canonicalize(self)

    def validate(self) -> None:  # noqa: D102
        super().validate()
        _check_lookup_fields(self)
        check_imputation(self)


@dataclasses.dataclass(frozen=True)
class TextFeature(FeatureBase):
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
        missing_indicator: Adds the output ``<name>_missing``: 1.0 where the text was
            missing (``""`` at the layer input), else 0.0.

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
    missing_indicator: bool = False
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
            raise feature_error(self.name, "ngrams", self.ngrams,
                        "null or 1 when split='none' (n-grams need split tokens)")
        if self.output_sequence_length is not None and self.output_mode != "int":
            raise feature_error(self.name, "output_sequence_length", self.output_sequence_length,
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


Feature = Union[StringFeature, IntegerFeature, TextFeature, NumericFeature, HashedFeature]
VocabularyFeature = Union[StringFeature, IntegerFeature, TextFeature]

KIND_CLASSES: dict[str, type] = {
    "string": StringFeature,
    "integer": IntegerFeature,
    "text": TextFeature,
    "numeric": NumericFeature,
    "hashed": HashedFeature,
}

