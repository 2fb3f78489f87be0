"""The Keras names a feature will own, and the one check that they do not collide.

The generated module (and ``beam_prep.layers_from_artifacts``) names everything after the
feature: raw inputs after their data column (sanitised by :func:`beam_prep.input_names.
input_name`), encoded outputs ``<name>``, ``<name>_missing``, ``<name>_bucket``,
``<name>_target_encoding``, ``<name>_key_count``, and layers ``<name>_lookup``,
``<name>_normalization``, ... (the table in ``beam_prep/codegen/plan.py``). Keras needs
unique names in two namespaces: the raw inputs and layers of the ``all``/``data`` model, and
the encoded outputs (the inputs of the ``model`` stage) and layers.

:func:`spec_names` predicts a feature's names from the spec alone (a superset of what any
analysis can plan: both layers of ``min_max`` scaling, the fill layer of an ``impute``
without a value), so :class:`beam_prep.spec.Spec` refuses a collision when it is loaded,
before the analysis. :func:`check_unique` is the one collision check; ``beam-prep generate``
runs it again on the planned names (``beam_prep.codegen.derived_plan.check_names``), and
tests/codegen check that every planned name is predicted here.

Example:
    >>> from beam_prep.spec import NumericFeature, StringFeature
    >>> [n.name for n in spec_names(StringFeature("a", output_mode="one_hot"))]
    ['a', 'a', 'a_lookup', 'a_encoding']
    >>> check_unique([("a", spec_names(StringFeature("a"))),
    ...               ("a_lookup", spec_names(NumericFeature("a_lookup")))])
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: Feature 'a': its layer 'a_lookup' collides with the model \
input of column 'a_lookup' (read by feature 'a_lookup'). Fix: rename one of the features \
(or the column).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable
from typing import Any, Literal

from beam_prep.errors import SpecError
from beam_prep.input_names import input_name

Kind = Literal["input", "output", "layer"]
#: The two namespaces: a name may appear once in each (shared raw inputs excepted).
NAMESPACES: tuple[tuple[str, ...], ...] = (("input", "layer"), ("output", "layer"))


@dataclasses.dataclass(frozen=True)
class OwnedName:
    """One Keras name a feature owns.

    Attributes:
        name: The Keras name (a raw input's is the sanitised column name).
        kind: ``input``, ``output`` or ``layer``.
        what: How the message calls it (``output``, ``missing indicator output``, ...).
        column: The data column of an input, else ``""``.
        primary: A name the user wrote (a column, the feature's own output): checked first,
            so a collision blames the derived name.
        received: The field that adds the name, as ``field=value`` (``""`` when none).
        drop: A field whose removal also fixes a collision (``""`` when none).
    """

    name: str
    kind: Kind
    what: str = ""
    column: str = ""
    primary: bool = False
    received: str = ""
    drop: str = ""


def input_owned(column: str) -> OwnedName:
    """The raw input of a data column."""
    return OwnedName(input_name(column), "input", "model input", column, True)


def spec_names(f: Any) -> list[OwnedName]:
    """Every input, output and layer name feature ``f`` (validated) can get when planned."""
    from beam_prep.spec.per_key import key_columns

    columns = list(f.cross) if getattr(f, "cross", None) else list(f.input_columns())
    keys = key_columns(f) if getattr(f, "per_key", None) is not None else {}
    names = [input_owned(c) for c in [*columns, *keys]]
    names.append(OwnedName(f.name, "output", "output", primary=True))
    names += [OwnedName(f"{f.name}_{s}", "layer", "layer") for s in _layer_suffixes(f)]
    return names + _extra_outputs(f)


def _layer_suffixes(f: Any) -> list[str]:
    out = ["expr"] if f.expr is not None else []
    if getattr(f, "default_value", None) is not None or getattr(f, "impute", None):
        out.append("fill_missing")
    if getattr(f, "missing_indicator", False):
        out.append("missing_indicator")
    one_hot = getattr(f, "output_mode", "int") != "int" and not f.is_list()
    if f.kind in ("string", "integer"):
        out += ["lookup"] + (["encoding"] if one_hot else [])
    elif f.kind == "hashed":
        out += ["crossing" if f.cross else "hashing"] + (["encoding"] if one_hot else [])
    elif f.kind == "text":
        out += ["vectorizer"] + (["flatten"] if f.output_mode != "int" else [])
    elif f.kind == "numeric" and f.per_key is not None:
        out += ["per_key"] + (["key_expr"] if not isinstance(f.per_key, str) else [])
        out += ["count_lookup"] if f.per_key_count else []
        out += ["per_key_bucketize"] if f.num_buckets is not None else []  # per-key buckets
    elif f.kind == "numeric":
        out += {"z_score": ["normalization"], "min_max": ["scaling", "normalization"],
                "none": [], "log1p": ["log1p"], "robust": ["robust"],
                "piecewise_linear": ["piecewise", "flatten"]}[f.scaling]
        out += ["discretization"] if f.num_buckets is not None else []
    if getattr(f, "target_encoding", None) is not None:
        out += ["target_lookup", "target_table", "target_flatten"]
    return out + (["list"] if f.is_list() else [])


def _extra_outputs(f: Any) -> list[OwnedName]:
    """``<name>_missing``, ``_bucket``, ``_target_encoding``, ``_key_count`` and the field."""
    out = []
    if getattr(f, "missing_indicator", False):
        out.append(OwnedName(f"{f.name}_missing", "output", "missing indicator output",
                             received="missing_indicator=True", drop="missing_indicator"))
    if f.kind == "numeric" and f.num_buckets is not None:
        out.append(OwnedName(f"{f.name}_bucket", "output", "output",
                             received=f"num_buckets={f.num_buckets!r}", drop="num_buckets"))
    if getattr(f, "target_encoding", None) is not None:
        out.append(OwnedName(f"{f.name}_target_encoding", "output", "output",
                             received="target_encoding set", drop="target_encoding"))
    if getattr(f, "per_key_count", False):
        out.append(OwnedName(f"{f.name}_key_count", "output", "output",
                             received="per_key_count=True", drop="per_key_count"))
    return out


class UnpredictedNameWarning(UserWarning):
    """A planned name :func:`spec_names` does not predict (a bug: add it there)."""


def warn_unpredicted(feature: str, planned: Iterable[OwnedName],
                     predicted: Iterable[OwnedName]) -> None:
    """Warns about planned names missing from the spec-time prediction of ``feature``."""
    known = {(n.kind, n.name) for n in predicted}
    missing = sorted({f"{n.kind} {n.name!r}" for n in planned if (n.kind, n.name) not in known})
    if missing:
        warnings.warn(
            f"Feature {feature!r}: the plan names {', '.join(missing)}, which "
            "beam_prep/spec/layer_names.py:spec_names does not predict, so spec load cannot "
            "refuse their collisions (generate still does). Fix: add them to spec_names.",
            UnpredictedNameWarning, stacklevel=3)


def check_spec_names(features: Iterable[Any]) -> None:
    """:func:`check_unique` over the :func:`spec_names` of validated spec features."""
    check_unique([(f.name, spec_names(f)) for f in features])


def check_unique(owners: Iterable[tuple[str, Iterable[OwnedName]]]) -> None:
    """Refuses two names that collide in one namespace (:data:`NAMESPACES`).

    Args:
        owners: ``(feature name, the names it owns)`` in spec order.

    Raises:
        SpecError: One line naming both features, the name and the fix.
    """
    items = [(feature, n) for feature, names in owners for n in names]
    items = [i for i in items if i[1].primary] + [i for i in items if not i[1].primary]
    for space in NAMESPACES:
        seen: dict[str, tuple[str, OwnedName]] = {}
        for feature, n in items:
            if n.kind not in space:
                continue
            if n.name in seen:
                other, o = seen[n.name]
                if not (n.kind == o.kind == "input" and n.column == o.column):
                    raise SpecError(_message(feature, n, other, o))
            seen.setdefault(n.name, (feature, n))


def _describe(feature: str, n: OwnedName) -> str:
    if n.kind == "input":
        return f"the model input of column {n.column!r} (read by feature {feature!r})"
    if n.primary:
        return f"feature {n.name!r}" if n.name == feature else f"the output of {feature!r}"
    return f"the {n.what} of feature {feature!r}"


def _message(feature: str, n: OwnedName, other: str, o: OwnedName) -> str:
    its = f"its {n.what} {n.name!r}" + (f" (column {n.column!r})" if n.kind == "input" else "")
    received = f" Received: {n.received}." if n.received else ""
    if n.kind == o.kind == "input":
        fix = "rename one of the columns"
    else:
        fix = "rename one of the features" + (
            " (or the column)" if "input" in (n.kind, o.kind) else "")
    if n.drop:
        fix += f", or drop {n.drop}"
    return (f"Feature {feature!r}: {its} collides with {_describe(other, o)}.{received} "
            f"Fix: {fix}.")
