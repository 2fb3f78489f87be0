"""Configuration of the ELWC conversion (one frozen dataclass, validated at construction).

Example:
    >>> opts = ElwcOptions(input_format="letor", max_list_size=50)
    >>> opts.list_policy, opts.splits
    ('split', (('train', 1.0),))
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from beam_prep.errors import SpecError

InputFormat = Literal["letor", "lightgbm", "csv", "jsonl", "parquet"]
INPUT_FORMATS: tuple[str, ...] = ("letor", "lightgbm", "csv", "jsonl", "parquet")
ListPolicy = Literal["split", "truncate", "sample"]
LIST_POLICIES: tuple[str, ...] = ("split", "truncate", "sample")
Compression = Literal["none", "gzip"]
COMPRESSIONS: tuple[str, ...] = ("none", "gzip")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SpecError(f"`{name}` must be one of {choices}. Received: {name}={value!r}")


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
        num_shards: output files per split.
        compression: ``none`` or ``gzip``.
        query_id_feature: if set, the query id is written as a string context feature of that
            name (for evaluation and debugging; keep it out of model inputs).
        query_id_column, label_column: tabular columns holding the query id and the label.
        context_columns: tabular columns written as context features (value of the query's
            first row).
        example_columns: tabular columns written as example features; ``None`` = every column
            that is not the query id, the label or a context column.
        max_bad_fraction: the run fails when rejected lines / lines exceeds this.
    """

    input_format: InputFormat = "letor"
    label_name: str = "relevance"
    label_dtype: Literal["float", "int64"] = "float"
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
    num_shards: int = 1
    compression: Compression = "none"
    query_id_feature: str | None = None
    query_id_column: str = "qid"
    label_column: str = "label"
    context_columns: tuple[str, ...] = ()
    example_columns: tuple[str, ...] | None = None
    max_bad_fraction: float = 0.01

    def __post_init__(self) -> None:
        _check_choice("input_format", self.input_format, INPUT_FORMATS)
        _check_choice("list_policy", self.list_policy, LIST_POLICIES)
        _check_choice("compression", self.compression, COMPRESSIONS)
        _check_choice("label_dtype", self.label_dtype, ("float", "int64"))
        if self.max_list_size is not None and self.max_list_size < 1:
            raise SpecError("`max_list_size` must be a positive integer or None. "
                            f"Received: max_list_size={self.max_list_size}")
        if self.min_list_size < 1:
            raise SpecError("`min_list_size` must be >= 1. "
                            f"Received: min_list_size={self.min_list_size}")
        if self.max_list_size is not None and self.min_list_size > self.max_list_size:
            raise SpecError("`min_list_size` must not exceed `max_list_size`. Received: "
                            f"min_list_size={self.min_list_size}, "
                            f"max_list_size={self.max_list_size}")
        if self.num_shards < 1:
            raise SpecError(f"`num_shards` must be >= 1. Received: num_shards={self.num_shards}")
        if self.num_features is not None and self.num_features < 1:
            raise SpecError("`num_features` must be >= 1. "
                            f"Received: num_features={self.num_features}")
        if not 0.0 <= self.max_bad_fraction <= 1.0:
            raise SpecError("`max_bad_fraction` must be in [0, 1]. "
                            f"Received: max_bad_fraction={self.max_bad_fraction}")
        if "{id}" not in self.feature_name_format:
            raise SpecError("`feature_name_format` must contain '{id}'. "
                            f"Received: feature_name_format={self.feature_name_format!r}")
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
            raise SpecError("`label_name` must be non-empty.")

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
