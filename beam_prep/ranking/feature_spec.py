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
* ``encoded`` (only in the output of ``make-elwc --artifacts``): the features written as the
  artifact directory's layers output them, ``{"artifacts_fingerprint": "<manifest sha256>",
  "features": [{"name", "output", "raw": <the feature as written without --artifacts>}]}``.
  The feature's entry in ``context`` / ``example`` then describes the encoded values
  (``int64`` ids or ``float`` values; shape ``[]`` for width 1, ``[w]``, or ``[null]`` for a
  ragged output). :meth:`ElwcFeatureSpec.raw` gives the spec of the raw features (what the
  exported model parses). Absent otherwise, so plain outputs are unchanged.

Loading goes through :func:`beam_prep.config.from_mapping`: unknown keys are errors (with the
closest known key), types and dtypes are checked against the dataclasses' annotations.

Example:
    >>> spec = ElwcFeatureSpec(
    ...     context=(), example=(FeatureInfo("f1", "float", (), 0.0),), label=LabelInfo())
    >>> ElwcFeatureSpec.from_json(spec.to_json()) == spec
    True
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Literal, get_args

from beam_prep.config import check_fields, check_keys, field_error, from_mapping
from beam_prep.errors import SpecError
from beam_prep.io import filesystem

DType = Literal["float", "int64", "string"]
DTYPES: tuple[str, ...] = get_args(DType)
LabelDType = Literal["float", "int64"]
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
        if not isinstance(self.name, str) or not self.name:
            raise field_error("", "name", self.name, "a non-empty string (the feature key)")
        where = f"Feature {self.name!r}"
        check_fields(self, where=where)
        if len(self.shape) > 1 or any(k is not None and k < 1 for k in self.shape):
            raise field_error(where, "shape", list(self.shape),
                              "[] (scalar), [k] with k >= 1 (fixed length) or [null] "
                              "(variable length)")
        if self.is_var_len and self.default is not None:
            raise field_error(where, "default", self.default,
                              "null for a variable-length feature (it takes no default)")

    @property
    def is_var_len(self) -> bool:
        """True for shape ``(None,)``."""
        return len(self.shape) == 1 and self.shape[0] is None

    def to_dict(self) -> dict[str, Any]:
        """The JSON entry of this feature."""
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "default": self.default}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FeatureInfo:
        """The feature of a JSON entry; SpecError names the feature, key and value."""
        name = d.get("name") if isinstance(d, Mapping) else None
        return from_mapping(cls, d, where=f"Feature {name!r}")


@dataclasses.dataclass(frozen=True)
class LabelInfo:
    """The per-example label.

    Attributes:
        name: feature key of the label (default ``relevance``).
        dtype: how it is stored, ``"float"`` or ``"int64"`` (the reader always returns float32).
        padding: label of padding examples in the reader output.
    """

    name: str = "relevance"
    dtype: LabelDType = "float"
    padding: float = -1.0

    def __post_init__(self) -> None:
        check_fields(self, where="`label`")


@dataclasses.dataclass(frozen=True)
class EncodedFeature:
    """One feature written encoded by ``make-elwc --artifacts``.

    Attributes:
        name: feature key (the entry of the same name in ``context`` / ``example``).
        output: the artifact plan's output written (``OUTPUT_SPECS`` key of the layers).
        raw: the feature as it is written without ``--artifacts`` (the serving input).
    """

    name: str
    output: str
    raw: FeatureInfo

    def to_dict(self) -> dict[str, Any]:
        """The JSON entry."""
        return {"name": self.name, "output": self.output, "raw": self.raw.to_dict()}


@dataclasses.dataclass(frozen=True)
class Encoding:
    """Which features hold the encoded outputs of which artifact directory.

    Attributes:
        artifacts_fingerprint: the artifact manifest's ``fingerprint`` (sha256).
        features: the encoded features, in spec order.
    """

    artifacts_fingerprint: str
    features: tuple[EncodedFeature, ...]

    @property
    def names(self) -> frozenset[str]:
        """Names of the encoded features."""
        return frozenset(f.name for f in self.features)

    def to_dict(self) -> dict[str, Any]:
        """The ``encoded`` JSON object."""
        return {"artifacts_fingerprint": self.artifacts_fingerprint,
                "features": [f.to_dict() for f in self.features]}

    @classmethod
    def from_dict(cls, d: Any) -> Encoding:
        """Validates the ``encoded`` JSON object (unknown keys are errors)."""
        where = f"{FILENAME} `encoded`"
        if not isinstance(d, Mapping):
            raise field_error(FILENAME, "encoded", d, "an object")
        check_keys(d, ("artifacts_fingerprint", "features"), where)
        fp = d.get("artifacts_fingerprint")
        if not isinstance(fp, str) or not fp:
            raise field_error(where, "artifacts_fingerprint", fp, "the artifacts' fingerprint")
        entries = d.get("features")
        if not isinstance(entries, list):
            raise field_error(where, "features", entries, "a list of encoded features")
        out = []
        for e in entries:
            if not isinstance(e, Mapping):
                raise field_error(where, "features", e, "objects with name, output, raw")
            check_keys(e, ("name", "output", "raw"), where)
            name, output = e.get("name"), e.get("output")
            if not isinstance(name, str) or not isinstance(output, str):
                raise field_error(where, "name", name, "string name and output")
            out.append(EncodedFeature(name, output, FeatureInfo.from_dict(e.get("raw", {}))))
        return cls(fp, tuple(out))


@dataclasses.dataclass(frozen=True)
class ElwcFeatureSpec:
    """Context features, example features and the label of an ELWC dataset.

    Attributes:
        context: per-list features (from ``ExampleListWithContext.context``).
        example: per-document features (from ``ExampleListWithContext.examples``).
        label: the label feature.
        encoded: features written encoded (``make-elwc --artifacts``), else None.
    """

    context: tuple[FeatureInfo, ...]
    example: tuple[FeatureInfo, ...]
    label: LabelInfo = LabelInfo()
    encoded: Encoding | None = None

    def __post_init__(self) -> None:
        check_fields(self, skip=("encoded",))
        if self.encoded is not None:
            known = {f.name for f in (*self.context, *self.example)}
            extra = sorted(self.encoded.names - known)
            if extra:
                raise SpecError(f"{FILENAME} `encoded` names feature(s) {extra} that are "
                                "neither context nor example features; re-run make-elwc.")
        seen: set[str] = set()
        for f in (*self.context, *self.example):
            if f.name in seen:
                raise SpecError(f"feature name {f.name!r} appears twice in the feature spec.")
            seen.add(f.name)
        if self.label.name in {f.name for f in self.example}:
            raise SpecError(f"label {self.label.name!r} is also listed as an example feature.")

    def to_json(self) -> str:
        """The ``feature_spec.json`` text."""
        d = {"format": FORMAT, "version": VERSION,
             "context": [f.to_dict() for f in self.context],
             "example": [f.to_dict() for f in self.example],
             "label": dataclasses.asdict(self.label)}
        if self.encoded is not None:
            d["encoded"] = self.encoded.to_dict()
        return json.dumps(d, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ElwcFeatureSpec:
        """Parses ``feature_spec.json`` text (see :meth:`from_dict`)."""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise SpecError(f"{FILENAME} is not valid JSON: {e}") from e
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ElwcFeatureSpec:
        """Validates a parsed ``feature_spec.json``: format, version, keys, every feature."""
        if not isinstance(d, Mapping):
            raise SpecError(f"{FILENAME} must hold a JSON object. Received: {type(d).__name__}")
        if d.get("format", FORMAT) != FORMAT or d.get("version", VERSION) != VERSION:
            raise SpecError(f"not a version-{VERSION} {FORMAT} file. Received: "
                            f"format={d.get('format')!r}, version={d.get('version')!r}")
        check_keys(d, ("format", "version", "context", "example", "label", "encoded"),
                   FILENAME)
        lists = {}
        for part in ("context", "example"):
            entries = d.get(part, [])
            if not isinstance(entries, list):
                raise field_error(FILENAME, part, entries, "a list of features")
            lists[part] = tuple(FeatureInfo.from_dict(f) for f in entries)
        label = from_mapping(LabelInfo, d.get("label", {}), where="`label`")
        encoded = Encoding.from_dict(d["encoded"]) if "encoded" in d else None
        return cls(context=lists["context"], example=lists["example"], label=label,
                   encoded=encoded)

    def raw(self) -> ElwcFeatureSpec:
        """The spec of the raw features (the encoded ones as written without --artifacts).

        Example:
            >>> raw = FeatureInfo("c", "string", (), "")
            >>> enc = ElwcFeatureSpec((FeatureInfo("c", "int64", (), 3),), (),
            ...                       encoded=Encoding("f0", (EncodedFeature("c", "c", raw),)))
            >>> enc.raw().context == (raw,), enc.raw().encoded
            (True, None)
        """
        if self.encoded is None:
            return self
        raw = {f.name: f.raw for f in self.encoded.features}
        return ElwcFeatureSpec(context=tuple(raw.get(f.name, f) for f in self.context),
                               example=tuple(raw.get(f.name, f) for f in self.example),
                               label=self.label)

    def save(self, path: str) -> None:
        """Writes ``to_json()`` to any Beam filesystem path."""
        filesystem.write_bytes(path, self.to_json().encode("utf-8"))

    @classmethod
    def load(cls, path: str) -> ElwcFeatureSpec:
        """Reads and validates a ``feature_spec.json`` from any Beam filesystem path."""
        return cls.from_json(filesystem.read_text(path))
