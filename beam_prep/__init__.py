"""beam_prep: preprocessing state for Keras 3 models, computed at scale with Apache Beam.

Public facade. Heavy modules (TensorFlow, Beam pipelines) are imported lazily so that
``import beam_prep`` stays fast.

Example:
    >>> import beam_prep
    >>> spec = beam_prep.Spec((beam_prep.StringFeature("country", top_k=10),))
    >>> spec.names()
    ('country',)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from beam_prep import _compat
from beam_prep.errors import ArtifactError, BeamPrepError, InputError, SpecError
from beam_prep.spec import (
    HashedFeature,
    IntegerFeature,
    NumericFeature,
    Spec,
    StringFeature,
    TextFeature,
)
from beam_prep.version import __version__

if TYPE_CHECKING:
    from beam_prep.io.contract.artifacts import Artifacts

_compat.install()  # old import paths (moved modules) keep working, with a warning

__all__ = [
    "ArtifactError",
    "Artifacts",
    "BeamPrepError",
    "HashedFeature",
    "InputError",
    "IntegerFeature",
    "NumericFeature",
    "Spec",
    "SpecError",
    "StringFeature",
    "TextFeature",
    "layers_from_artifacts",
    "__version__",
]


def layers_from_artifacts(path: str, **kwargs: Any) -> Any:
    """Builds the Keras layers described by an artifact directory (runtime twin of codegen).

    See :func:`beam_prep.codegen.runtime.layers_from_artifacts`.
    """
    from beam_prep.codegen.runtime import layers_from_artifacts as _impl

    return _impl(path, **kwargs)


def __getattr__(name: str) -> Any:
    # `Artifacts` is built on Beam's FileSystems: imported on first use, so `import beam_prep`
    # (and `beam-prep train --help`) does not load Apache Beam.
    if name == "Artifacts":
        from beam_prep.io.contract.artifacts import Artifacts

        return Artifacts
    raise AttributeError(f"module 'beam_prep' has no attribute {name!r}")
