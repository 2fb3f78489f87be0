"""Configuration of the ELWC conversion (one frozen dataclass, validated at construction).

Types and ``Literal`` options are checked by :func:`beam_prep.config.check_fields`;
:meth:`ElwcOptions.from_dict` builds the options from a mapping (unknown keys are errors).

Example:
    >>> opts = ElwcOptions(input_format="letor", max_list_size=50)
    >>> opts.list_policy, opts.splits
    ('split', (('train', 1.0),))
    >>> ElwcOptions.from_dict({"input_format": "csv", "splits": [["a", 0.5], ["b", 0.5]]}).splits
    (('a', 0.5), ('b', 0.5))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Literal, get_args

from beam_prep.config import check_fields, field_error, from_mapping
from beam_prep.errors import SpecError

InputFormat = Literal["letor", "lightgbm", "csv", "jsonl", "parquet"]
INPUT_FORMATS: tuple[str, ...] = get_args(InputFormat)
ListPolicy = Literal["split", "truncate", "sample"]
LIST_POLICIES: tuple[str, ...] = get_args(ListPolicy)
Compression = Literal["none", "gzip"]
COMPRESSIONS: tuple[str, ...] = get_args(Compression)
LabelDType = Literal["float", "int64"]


@dataclasses.dataclass(frozen=True)
class ElwcOptions:
    """Everything that decides the content of the ELWC output.

    Attributes:
        input_format: ``letor`` (``qid:`` lines), ``lightgbm`` (``.query`` group files),
            ``csv``, ``jsonl`` or ``parquet``.
        label_name: feature key of the label in every example (default ``relevance``).
        label_dtype: ``float`` or ``int64`` storage of the label.
        feature_name_format: LETOR id → feature name, a ``str.format`` pattern with ``{id}``.
        feature_names: explicit ``(id, name)`` pairs overriding ``feature_name_format``.
        num_features: LETOR ids must lie in ``[1, num_features]``; all of them are written. When
            ``None`` the ids seen anywhere in the input are written.
        missing_value: value written (and declared as default) for absent LETOR ids.
        max_list_size: longest list written; ``None`` = no limit.
        list_policy: for longer lists: ``split`` into balanced consecutive parts (no document
            lost), ``truncate`` (keep the first documents in input order) or ``sample`` (seeded
            sample without replacement, kept in input order).
        min_list_size: lists shorter than this (after splitting) are dropped.
        drop_no_positive: drop lists whose labels are all ``<= 0``.
        seed: seed of the ``sample`` policy.
        splits: ``(name, fraction)`` pairs; a query goes to one split by a hash of its id.
        split_seed: salt of the split hash (change it to draw a different split).
        num_shards: output files per split (and rejected-line files); ``None``: chosen from
            the input size by :func:`beam_prep.ranking.data.sharding.resolve_num_shards`
            before the transforms are built.
        compression: ``none`` or ``gzip``.
        query_id_feature: if set, the query id is written as a string context feature of that
            name (for evaluation and debugging; keep it out of model inputs).
        query_id_column, label_column: tabular columns holding the query id and the label.
        context_columns: tabular columns written as context features (value of the query's
            first row).
        example_columns: tabular columns written as example features; ``None`` = every column
            that is not the query id, the label or a context column.
        max_bad_fraction: the run fails when rejected lines / lines exceeds this.
        artifacts: artifact directory (``beam-prep analyze``) whose layers encode the features
            they cover (ids / normalised values written instead of the raw values; see
            :mod:`beam_prep.ranking.data.artifact_encode`); ``None``: raw features.
    """

    input_format: InputFormat = "letor"
    label_name: str = "relevance"
    label_dtype: LabelDType = "float"
    feature_name_format: str = "f{id}"
    feature_names: tuple[tuple[int, str], ...] = ()
    num_features: int | None = None
    missing_value: float = 0.0
    max_list_size: int | None = None
    list_policy: ListPolicy = "split"
    min_list_size: int = 1
    drop_no_positive: bool = False
    seed: int = 0
    splits: tuple[tuple[str, float], ...] = (("train", 1.0),)
    split_seed: str = "beam_prep"
    num_shards: int | None = 1
    compression: Compression = "none"
    query_id_feature: str | None = None
    query_id_column: str = "qid"
    label_column: str = "label"
    context_columns: tuple[str, ...] = ()
    example_columns: tuple[str, ...] | None = None
    max_bad_fraction: float = 0.01
    artifacts: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        if self.max_list_size is not None and self.max_list_size < 1:
            raise field_error("", "max_list_size", self.max_list_size,
                              "a positive integer or None")
        if self.min_list_size < 1:
            raise field_error("", "min_list_size", self.min_list_size, ">= 1")
        if self.max_list_size is not None and self.min_list_size > self.max_list_size:
            raise SpecError("`min_list_size` must not exceed `max_list_size`. Received: "
                            f"min_list_size={self.min_list_size}, "
                            f"max_list_size={self.max_list_size}")
        if self.num_shards is not None and self.num_shards < 1:
            raise field_error("", "num_shards", self.num_shards, ">= 1")
        if self.num_features is not None and self.num_features < 1:
            raise field_error("", "num_features", self.num_features, ">= 1")
        if not 0.0 <= self.max_bad_fraction <= 1.0:
            raise field_error("", "max_bad_fraction", self.max_bad_fraction, "in [0, 1]")
        if "{id}" not in self.feature_name_format:
            raise field_error("", "feature_name_format", self.feature_name_format,
                              "a pattern containing '{id}'")
        if not self.splits:
            raise SpecError("`splits` must name at least one split, e.g. (('train', 1.0),)")
        names = [n for n, _ in self.splits]
        if len(set(names)) != len(names) or any(not n or "-" in n or "/" in n for n in names):
            raise SpecError(f"split names must be unique, non-empty, without '-' or '/'. "
                            f"Received: {names}")
        fracs = [f for _, f in self.splits]
        if any(f < 0 for f in fracs) or not math.isclose(sum(fracs), 1.0, abs_tol=1e-6):
            raise SpecError(f"split fractions must be >= 0 and sum to 1. Received: {self.splits}")
        if not self.label_name:
            raise field_error("", "label_name", self.label_name, "non-empty")

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ElwcOptions:
        """Options from a mapping (e.g. parsed YAML/JSON); lists become tuples.

        Raises:
            SpecError: Unknown key (with the closest known one), wrong type or option, or a
                value out of range.
        """
        return from_mapping(cls, raw)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (lists for tuples), the inverse of :meth:`from_dict`."""
        def conv(v: Any) -> Any:
            return [conv(x) for x in v] if isinstance(v, tuple) else v
        return {f.name: conv(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def feature_name(self, feature_id: int) -> str:
        """Name of a LETOR feature id."""
        for i, name in self.feature_names:
            if i == feature_id:
                return name
        return self.feature_name_format.format(id=feature_id)

    @property
    def is_letor(self) -> bool:
        return self.input_format in ("letor", "lightgbm")


def parse_splits(text: str) -> tuple[tuple[str, float], ...]:
    """Parses ``"train"`` or ``"train:0.8,validation:0.1,test:0.1"``.

    Example:
        >>> parse_splits("train:0.8,test:0.2")
        (('train', 0.8), ('test', 0.2))
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) == 1 and ":" not in parts[0]:
        return ((parts[0], 1.0),)
    out = []
    for p in parts:
        name, sep, frac = p.partition(":")
        try:
            out.append((name.strip(), float(frac)))
        except ValueError:
            raise SpecError(f"`--splits` entries must be name:fraction. Received: {p!r}") from None
        if not sep:
            raise SpecError(f"`--splits` entries must be name:fraction. Received: {p!r}")
    return tuple(out)
