"""Which input columns a spec reads, as which Arrow type, and which of them hold lists.

The analysis reads exactly :func:`required_columns`; its manifest records them and the
analysis cache key hashes them. :func:`list_columns` names the columns read as a list per
row (list features' own columns), where a JSONL line may hold an array.

Example:
    >>> spec = Spec.from_dict({"features": [                        # doctest: +SKIP
    ...     {"name": "tags", "kind": "string", "shape": "list"}, {"name": "n", "kind": "numeric"}]})
    >>> required_columns(spec), list_columns(spec)                  # doctest: +SKIP
    ({'tags': 'string', 'n': 'float64'}, frozenset({'tags'}))
"""

from __future__ import annotations

from beam_prep.analyzers.target import stats as target_stats
from beam_prep.errors import SpecError
from beam_prep.spec import Spec
from beam_prep.spec.derived import ARROW_TYPES
from beam_prep.spec.label_fields import has_labels
from beam_prep.spec.lists import is_list
from beam_prep.spec.target_fields import has_target_encoding
from beam_prep.spec.weights import weight_columns

_TYPE_OF_KIND = {"string": "string", "text": "string", "integer": "int64", "numeric": "float64"}


def required_columns(spec: Spec) -> dict[str, str]:
    """Input column → Arrow target type for every feature, hashed ones included.

    A derived feature (``expr``) reads its expression's input columns, typed as
    ``beam_prep.spec.derived`` infers them. Hashed features are not analysed, but their
    columns (``column``, ``expr`` inputs, both ``cross`` columns) are read too: a column
    missing from the data is found before the pipeline starts, values the layer could not
    take are rejected like any other, and a spec of hashed features only still counts rows.

    Raises:
        SpecError: When one column is read with two incompatible types.
    """
    out: dict[str, str] = {}
    owner: dict[str, str] = {}
    for f in spec.features:
        if f.expr is None and f.kind != "hashed":
            reads = {f.source_column: _TYPE_OF_KIND[f.kind]}
        else:  # an expression's inputs, or a hashed feature's column(s) as its dtype
            reads = {c: ARROW_TYPES[t] for c, t in f.input_columns().items()}
        if f.weights_expr is not None:  # instance weights computed from columns
            for c, t in weight_columns(f).items():
                reads.setdefault(c, ARROW_TYPES[t])
        if has_labels(f):  # the label column of a label-aware vocabulary
            reads.setdefault(f.labels, "int64")
        for col, typ in reads.items():
            if col in out and out[col] != typ:
                raise SpecError(
                    f"Column {col!r} is read as {out[col]} by feature {owner[col]!r} and as "
                    f"{typ} by feature {f.name!r}. Read it once, or convert it upstream into "
                    "two columns.")
            out.setdefault(col, typ)
            owner.setdefault(col, f.name)
        if getattr(f, "per_key", None) is not None:  # the key's columns (per_key.py)
            from beam_prep.spec.per_key import key_columns

            for col, typ in key_columns(f).items():
                typ = ARROW_TYPES[typ]
                if col in out and out[col] != typ:
                    raise SpecError(
                        f"Column {col!r} is read as {out[col]} by feature {owner[col]!r} and "
                        f"as {typ} by the per_key of feature {f.name!r}. Fix: per_key: "
                        f"{{expr: \"str({col})\"}} for an integer column, or convert it "
                        "upstream.")
                out.setdefault(col, typ)
                owner.setdefault(col, f.name)
    for f in spec.features:  # `weights`, target label: as another feature reads it, or float64
        label = f.target_encoding.labels if has_target_encoding(f) else None
        for col, what in ((f.weights, "`weights`"), (label, "target_encoding.labels")):
            if col is not None and out.setdefault(col, "float64") not in ("float64", "int64"):
                raise SpecError(
                    f"Column {col!r} is read as {out[col]} by feature {owner[col]!r} and as the "
                    f"{what} of feature {f.name!r}, which must be numbers. Use a numeric "
                    "column.")
    for f in filter(has_target_encoding, spec.features):  # fold: hashed as text, any type
        out.setdefault(f.target_encoding.fold_column, "string")
    return out


def column_owners(spec: Spec) -> dict[str, str]:
    """Input column → the first feature that reads it (for error messages)."""
    owners: dict[str, str] = {}
    for f in spec.features:
        for col in [*f.input_columns(), *weight_columns(f), *target_stats.columns_of(f),
                    *([f.labels] if has_labels(f) else [])]:
            owners.setdefault(col, f.name)
    return owners


def list_columns(spec: Spec) -> frozenset[str]:
    """The input columns read as a list per row: the own columns of list features (a
    derived list, ``split(...)``, reads a scalar column)."""
    return frozenset(f.source_column for f in spec.features if f.expr is None and is_list(f))
