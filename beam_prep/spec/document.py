"""The whole feature spec: :class:`Spec`, an ordered tuple of uniquely named features.

Example:
    >>> spec = Spec.from_yaml_text('''
    ... features:
    ...   - {name: country, kind: string, top_k: 10, min_count: 2}
    ...   - {name: price, kind: numeric, num_buckets: 4}
    ... ''')
    >>> spec.feature("country").top_k
    10
    >>> spec.feature("price").resolved_epsilon()
    0.01
"""

from __future__ import annotations

import dataclasses
from typing import Any

from beam_prep.errors import SpecError
from beam_prep.spec.features import Feature
from beam_prep.spec.layer_names import check_spec_names
from beam_prep.spec.loading import SPEC_VERSION, features_from_document, parse_yaml


@dataclasses.dataclass(frozen=True)
class Spec:
    """The whole feature spec.

    Attributes:
        features: The features, in declaration order (artifact order follows it).

    Example:
        >>> from beam_prep.spec import NumericFeature, StringFeature
        >>> Spec((StringFeature("a"), NumericFeature("b"))).names()
        ('a', 'b')
    """

    features: tuple[Feature, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.features, tuple):
            object.__setattr__(self, "features", tuple(self.features))
        if not self.features:
            raise SpecError("The spec must declare at least one feature. Received: features=[]")
        seen: set[str] = set()
        for feature in self.features:
            feature.validate()
            if feature.name in seen:
                raise SpecError(
                    f"Feature names must be unique. Received: name={feature.name!r} twice"
                )
            seen.add(feature.name)
        check_spec_names(self.features)  # Keras names, before any analysis

    def names(self) -> tuple[str, ...]:
        """Feature names in order."""
        return tuple(f.name for f in self.features)

    def feature(self, name: str) -> Feature:
        """The feature called ``name``; SpecError if there is none."""
        for f in self.features:
            if f.name == name:
                return f
        raise SpecError(f"No feature named {name!r}. Known features: {list(self.names())}")

    def of_kind(self, *kinds: str) -> tuple[Feature, ...]:
        """Features of the given kinds, in order."""
        return tuple(f for f in self.features if f.kind in kinds)

    def source_columns(self) -> tuple[str, ...]:
        """Distinct input columns read by analysed features (hashed ones are not read).

        A derived feature (``expr``) reads the columns of its expression.
        """
        out: list[str] = []
        for f in self.features:
            for column in (f.input_columns() if f.kind != "hashed" else ()):
                if column not in out:
                    out.append(column)
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        """Canonical dict, as stored in the manifest."""
        return {"version": SPEC_VERSION, "features": [f.to_dict() for f in self.features]}

    @classmethod
    def from_dict(cls, raw: Any) -> Spec:
        """Validates a parsed spec document.

        Raises:
            SpecError: With the feature, field, value and what is allowed.
        """
        return cls(features_from_document(raw))

    @classmethod
    def from_yaml_text(cls, text: str, *, source: str | None = None) -> Spec:
        """Parses YAML text (see :meth:`from_dict`); a key repeated in a mapping is an error.

        ``source``, the file the text came from, is named in a syntax error (``path:line:col``).
        """
        return cls.from_dict(parse_yaml(text, source=source))

    @classmethod
    def load(cls, path: str) -> Spec:
        """Reads a YAML spec from any Beam filesystem path."""
        from beam_prep.io.filesystem import read_bytes

        try:
            data = read_bytes(path)
        except Exception as e:  # noqa: BLE001 - missing, a folder, no permission, no bucket
            cause = (str(e).strip().splitlines() or [""])[0][:200]
            if isinstance(e, OSError) and e.strerror:
                cause = e.strerror
            raise SpecError(f"Cannot read the spec file {path!r}: {type(e).__name__}: "
                            f"{cause}. Pass the path of a spec YAML file (see README: "
                            "Feature spec).") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SpecError(f"The spec file {path!r} is not UTF-8 text (byte {e.start}). "
                            "Received: a binary file? Pass the spec YAML file.") from None
        if not text.strip():
            raise SpecError(f"The spec file {path!r} is empty. Received: 0 features; "
                            "declare them under `features:` (see README: Feature spec).")
        return cls.from_yaml_text(text, source=path)
