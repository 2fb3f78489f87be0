"""``feature_spec.json``: the contract between the ELWC job and the reader.

Format (version 1)::

    {
      "format": "beam_prep.elwc_feature_spec",
      "version": 1,
      "context": [{"name": "query_tokens", "dtype": "string", "shape": [null], "default": null}],
      "example": [{"name": "f1", "dtype": "float", "shape": [], "default": 0.0}, ...],
      "label": {"name": "relevance", "dtype": "float", "padding": -1.0}
    }

* ``dtype`` is ``"float"`` (float32), ``"int64"`` or ``"string"`` (bytes).
* ``shape`` is ``[]`` for a scalar, ``[k]`` for a fixed-length vector, ``[null]`` for a
  variable-length list (the reader returns a ``tf.RaggedTensor``; ``default`` is then ``null``).
* ``default`` fills absent values (and the padding examples) for fixed shapes.
* ``label.padding`` is the label of padding examples (the reader returns labels as float32).

Example:
    >>> spec = ElwcFeatureSpec(
    ...     context=(), example=(FeatureInfo("f1", "float", (), 0.0),), label=LabelInfo())
    >>> ElwcFeatureSpec.from_json(spec.to_json()) == spec
    True
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

from beam_prep.errors import SpecError
from beam_prep.io import filesystem

DType = Literal["float", "int64", "string"]
DTYPES: tuple[str, ...] = ("float", "int64", "string")
FORMAT = "beam_prep.elwc_feature_spec"
VERSION = 1
FILENAME = "feature_spec.json"


@dataclasses.dataclass(frozen=True)
class FeatureInfo:
    """One context or example feature.

    Attributes:
        name: feature key in the tf.Example.
        dtype: ``"float"``, ``"int64"`` or ``"string"``.
        shape: ``()`` scalar, ``(k,)`` fixed length, ``(None,)`` variable length.
        default: value used where the feature is absent (fixed shapes only), else ``None``.
    """

    name: str
    dtype: DType
    shape: tuple[int | None, ...] = ()
    default: float | int | str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise SpecError("feature `name` must be a non-empty string. Received: name=''")
        if self.dtype not in DTYPES:
            raise SpecError(f"`dtype` must be one of {DTYPES}. Received: dtype={self.dtype!r} "
                            f"(feature {self.name!r})")
        if len(self.shape) > 1:
            raise SpecError("`shape` must be [], [k] or [null]. Received: "
                            f"shape={list(self.shape)} (feature {self.name!r})")
        if self.is_var_len and self.default is not None:
            raise SpecError(f"a variable-length feature takes no `default`. Received: "
                            f"default={self.default!r} (feature {self.name!r}); set it to null.")

    @property
    def is_var_len(self) -> bool:
        """True for shape ``(None,)``."""
        return len(self.shape) == 1 and self.shape[0] is None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "default": self.default}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FeatureInfo:
        unknown = set(d) - {"name", "dtype", "shape", "default"}
        if unknown:
            raise SpecError(f"unknown keys {sorted(unknown)} in feature {d.get('name')!r}; "
                            "allowed: name, dtype, shape, default.")
        return cls(name=d["name"], dtype=d["dtype"], shape=tuple(d.get("shape", ())),
                   default=d.get("default"))


@dataclasses.dataclass(frozen=True)
class LabelInfo:
    """The per-example label.

    Attributes:
        name: feature key of the label (default ``relevance``).
        dtype: how it is stored, ``"float"`` or ``"int64"`` (the reader always returns float32).
        padding: label of padding examples in the reader output.
    """

    name: str = "relevance"
    dtype: Literal["float", "int64"] = "float"
    padding: float = -1.0

    def __post_init__(self) -> None:
        if self.dtype not in ("float", "int64"):
            raise SpecError(f"label `dtype` must be 'float' or 'int64'. Received: {self.dtype!r}")


@dataclasses.dataclass(frozen=True)
class ElwcFeatureSpec:
    """Context features, example features and the label of an ELWC dataset.

    Attributes:
        context: per-list features (from ``ExampleListWithContext.context``).
        example: per-document features (from ``ExampleListWithContext.examples``).
        label: the label feature.
    """

    context: tuple[FeatureInfo, ...]
    example: tuple[FeatureInfo, ...]
    label: LabelInfo = LabelInfo()

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for f in (*self.context, *self.example):
            if f.name in seen:
                raise SpecError(f"feature name {f.name!r} appears twice in the feature spec.")
            seen.add(f.name)
        if self.label.name in {f.name for f in self.example}:
            raise SpecError(f"label {self.label.name!r} is also listed as an example feature.")

    def to_json(self) -> str:
        d = {"format": FORMAT, "version": VERSION,
             "context": [f.to_dict() for f in self.context],
             "example": [f.to_dict() for f in self.example],
             "label": dataclasses.asdict(self.label)}
        return json.dumps(d, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ElwcFeatureSpec:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ElwcFeatureSpec:
        if d.get("format", FORMAT) != FORMAT or d.get("version", VERSION) != VERSION:
            raise SpecError(f"not a version-{VERSION} {FORMAT} file. Received: "
                            f"format={d.get('format')!r}, version={d.get('version')!r}")
        label = d.get("label", {})
        return cls(context=tuple(FeatureInfo.from_dict(f) for f in d.get("context", [])),
                   example=tuple(FeatureInfo.from_dict(f) for f in d.get("example", [])),
                   label=LabelInfo(**label))

    def save(self, path: str) -> None:
        filesystem.write_bytes(path, self.to_json().encode("utf-8"))

    @classmethod
    def load(cls, path: str) -> ElwcFeatureSpec:
        return cls.from_json(filesystem.read_text(path))
