"""Runtime twin of the generated module: the rendered, checked module run in memory.

``layers_from_artifacts(path)`` renders the module of an artifact directory exactly as
``beam-prep generate`` does (:func:`beam_prep.codegen.render.render_plan`: the same plan,
templates and ``module_check``), executes that text in a fresh module object (nothing is
written, nothing is imported from a path) and binds its functions to ``path``. The twin
therefore has no layer code of its own: its layers, inputs, signatures, errors and exports
are the generated module's.

Example:
    >>> import beam_prep
    >>> pp = beam_prep.layers_from_artifacts("artifacts/")           # doctest: +SKIP
    >>> ds = ds.batch(64).map(pp.make_dataset_fn())                  # doctest: +SKIP
    >>> inference = pp.build_inference_model(trained_model)          # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import hashlib
import linecache
import types
from collections.abc import Callable, Iterator
from typing import Any

from beam_prep.codegen.per_key_plan import per_key_state
from beam_prep.codegen.plan import MISSING_INTEGER, ModulePlan, plan_from_artifacts
from beam_prep.codegen.render import default_location, render_plan
from beam_prep.errors import ArtifactError, SpecError
from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.io.contract.target_file import read_target


def load_module(source: str) -> types.ModuleType:
    """Executes rendered module text in a new module object, without a file or an import.

    The text must come from :func:`~beam_prep.codegen.render.render_plan`, which has run
    ``module_check`` on it (top level: imports of keras, tensorflow and the standard
    library, literal constants, classes and functions). The module is not added to
    ``sys.modules``; its source is registered with :mod:`linecache` under a name derived
    from its sha256, so tracebacks, ``inspect.getsource`` and AutoGraph (``tf.data``) see
    its lines as they see a generated file's.

    Args:
        source: The module text.

    Returns:
        The executed module.
    """
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    filename = f"<beam_prep generated module {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType(f"beam_prep_generated_{digest}")
    exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
    return module


class _Constant:
    """A read-only attribute of the twin that is a constant of its module (or ``default``)."""

    def __init__(self, constant: str, default: Callable[[], Any] | None = None) -> None:
        self.constant, self.default = constant, default

    def __get__(self, twin: PreprocessingLayers | None, owner: type) -> Any:
        if twin is None:
            return self
        if self.default is not None and not hasattr(twin.module, self.constant):
            return self.default()
        return getattr(twin.module, self.constant)


class PreprocessingLayers:
    """The generated module of one artifact directory, bound to it (module docstring).

    Every method is the module function of the same name with ``artifacts_dir=path`` and
    ``verify=False`` (``verify`` applies once, when the twin is made; the manifest
    fingerprint is still compared at each build), except ``build_feature_layers(name)``,
    the module's ``BUILDERS[name]``. Before a build, the files the module parses itself
    (tf-idf counts, target encodings, per-key statistics and buckets) are read through the
    checked readers of :mod:`beam_prep.io`, so a damaged file is refused with the same
    ``ArtifactError`` as in ``beam-prep transform``, ``report`` and ``diff``. The module's
    ``ArtifactMismatchError`` is raised as a subclass of it that is also an
    :class:`~beam_prep.errors.ArtifactError`.

    Args:
        path: Artifact directory (local or ``gs://``).
        verify: Check every artifact file's size and sha256 against the manifest first.

    Attributes:
        path: The artifact directory.
        artifacts: The opened :class:`~beam_prep.Artifacts`.
        plan: The layer plan the module was rendered from.
        source: The module text (what ``beam-prep generate`` writes for ``path``).
        module: The executed module.
        missing_values: Raw dtype -> the value that means "missing" at the layer input.

    Aliases of the module's constants (the lower-case names of earlier versions):
    ``fingerprint`` = ``FINGERPRINT``, ``input_dtypes`` = ``INPUT_DTYPES``,
    ``input_columns`` = ``INPUT_COLUMNS``, ``input_names`` = ``INPUT_NAMES``, ``outputs`` =
    ``OUTPUTS``, ``output_specs`` = ``OUTPUT_SPECS``, and, empty when the module has no such
    constant, ``list_inputs`` = ``LIST_INPUTS``, ``ragged_outputs`` = ``RAGGED_OUTPUTS``,
    ``default_values`` = ``DEFAULT_VALUES``, ``imputed`` = ``IMPUTED``,
    ``missing_indicators`` = ``MISSING_INDICATORS``.
    """

    missing_values: dict[str, Any] = {"string": "", "float32": float("nan"),
                                      "float64": float("nan"), "int64": MISSING_INTEGER}
    fingerprint = _Constant("FINGERPRINT")
    input_dtypes = _Constant("INPUT_DTYPES")
    input_columns = _Constant("INPUT_COLUMNS")
    input_names = _Constant("INPUT_NAMES")
    outputs = _Constant("OUTPUTS")
    output_specs = _Constant("OUTPUT_SPECS")
    list_inputs = _Constant("LIST_INPUTS", tuple)
    ragged_outputs = _Constant("RAGGED_OUTPUTS", tuple)
    default_values = _Constant("DEFAULT_VALUES", dict)
    imputed = _Constant("IMPUTED", dict)
    missing_indicators = _Constant("MISSING_INDICATORS", dict)

    def __init__(self, path: str, *, verify: bool = True) -> None:
        self.path = path
        self.artifacts = Artifacts(path, verify=verify)
        self.plan: ModulePlan = plan_from_artifacts(self.artifacts)
        # As `beam-prep generate --artifacts path` renders it (render.render_module).
        self.source = render_plan(self.plan, default_artifacts_dir=default_location(path))
        self.module = load_module(self.source)
        self._mismatch = type("ArtifactMismatchError",
                              (ArtifactError, self.module.ArtifactMismatchError),
                              {"__module__": __name__})

    @contextlib.contextmanager
    def _checked(self, names: list[str]) -> Iterator[None]:
        """Reads the named features' parsed files through the checked readers, then runs
        the block with the module's ``ArtifactMismatchError`` raised as ``ArtifactError``."""
        for fp in self.plan.features:
            if fp.name not in names:
                continue
            if fp.tf_idf:
                self.artifacts.vocabulary(fp.name)
                self.artifacts.document_frequencies(fp.name)
            if fp.target:
                read_target(self.artifacts, fp.name)
            if fp.keyed is not None:
                per_key_state(self.artifacts, fp.name, fp.keyed)
        try:
            yield
        except self.module.ArtifactMismatchError as err:
            raise self._mismatch(str(err)) from err

    def _all(self) -> Any:
        return self._checked([fp.name for fp in self.plan.features])

    def build_feature_layers(self, name: str) -> dict[str, list[Any]]:
        """One feature's layers: encoded key -> layers applied in order to the raw input."""
        if name not in self.module.BUILDERS:
            raise SpecError(f"No feature named {name!r}. Known features: "
                            f"{list(self.module.BUILDERS)}")
        with self._checked([name]):
            self.module.check_artifacts(self.path, verify_files=False)
            return self.module.BUILDERS[name](self.path, check=False)

    def build_layers(self) -> dict[str, list[Any]]:
        """Every feature's layers, keyed by encoded output (the module's ``build_layers``)."""
        with self._all():
            return self.module.build_layers(self.path, verify=False)

    def build_preprocessor(self, *, stage: str = "all") -> Any:
        """Dict-to-dict Keras model (the module's ``build_preprocessor``; all/data/model)."""
        with self._all():
            return self.module.build_preprocessor(self.path, stage=stage, verify=False)

    def make_dataset_fn(self, *, stage: str = "all") -> Callable[..., Any]:
        """A function for ``tf.data.Dataset.map`` (the module's ``make_dataset_fn``)."""
        with self._all():
            return self.module.make_dataset_fn(self.path, stage=stage, verify=False)

    def build_inference_model(self, trainer: Any) -> Any:
        """Raw inputs -> preprocessing -> ``trainer`` (the module's ``build_inference_model``)."""
        with self._all():
            return self.module.build_inference_model(trainer, self.path, verify=False)

    def feature_values(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Each feature's value before its layers (the module's ``feature_values``; a module
        without one feeds every feature the raw input of its name)."""
        if hasattr(self.module, "feature_values"):
            return self.module.feature_values(inputs)
        return {fp.name: inputs[fp.name] for fp in self.plan.features}

    def raw_inputs(self) -> dict[str, Any]:
        """One ``keras.Input`` per data column (the module's ``raw_inputs``)."""
        return self.module.raw_inputs()

    def input_signature(self) -> dict[str, Any]:
        """``tf.TensorSpec`` of the raw inputs (the module's ``input_signature``)."""
        return self.module.input_signature()

    def encoded_inputs(self) -> dict[str, Any]:
        """``keras.Input``s of the ``data`` stage outputs (the module's ``encoded_inputs``)."""
        return self.module.encoded_inputs()

    def raw_columns(self, features: dict[str, Any]) -> dict[str, Any]:
        """The raw inputs of a batch dict (the module's ``raw_columns``)."""
        return self.module.raw_columns(features)

    def parse_examples(self, serialized: Any) -> dict[str, Any]:
        """Serialized ``tf.Example`` protos -> the raw inputs (the module's ``parse_examples``)."""
        return self.module.parse_examples(serialized)

    def export_saved_model(self, inference: Any, export_dir: str) -> None:
        """SavedModel with ``serve`` and ``serve_tf_examples`` (the module's function)."""
        self.module.export_saved_model(inference, export_dir)

    def __repr__(self) -> str:
        return f"PreprocessingLayers({self.path!r}, outputs={list(self.outputs)})"


def layers_from_artifacts(path: str, *, verify: bool = True) -> PreprocessingLayers:
    """The generated module of an artifact directory, rendered and run in memory.

    Args:
        path: Artifact directory (local or ``gs://``).
        verify: Check every artifact file's size and sha256 against the manifest.

    Returns:
        A :class:`PreprocessingLayers` with the generated module's API bound to ``path``.

    Raises:
        ArtifactError: Incomplete or inconsistent artifacts (as ``beam-prep generate``).

    Example:
        >>> pp = layers_from_artifacts("artifacts/")                 # doctest: +SKIP
        >>> pp.build_preprocessor()({"country": [["US"]]})           # doctest: +SKIP
    """
    return PreprocessingLayers(path, verify=verify)
