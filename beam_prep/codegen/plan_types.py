"""The plan's data types and constants: plain frozen dataclasses, no logic.

Shared by :mod:`beam_prep.codegen.plan` (which builds a :class:`ModulePlan` from artifacts
and re-exports every name here) and :mod:`beam_prep.codegen.list_plan` (which rewrites a
feature's plan for list inputs), so neither imports the other's builder. Imports neither
Keras nor TensorFlow.

Example:
    >>> LayerPlan("Hashing", "h_hashing", (("num_bins", 8),)).cls
    'Hashing'
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from beam_prep.codegen.derived_plan import DerivedPlan, RawInput
from beam_prep.codegen.scaling_plan import NUMERIC_LAYER_CLASSES
from beam_prep.input_names import input_names

Stage = Literal["data", "model"]

# The string sentinel of an empty vocabulary (NUL bytes never come out of real text
# columns) and the integer one (the smallest int64).
EMPTY_VOCABULARY_TOKEN = "\x00beam_prep:empty_vocabulary\x00"
EMPTY_VOCABULARY_INTEGER = -(2**63)

# "Missing" at an int64 layer input (the analysis' null); never a real value in practice.
MISSING_INTEGER = -(2**63)
FILL_MISSING_CLASS = "FillMissing"
INDICATOR_CLASS = "MissingIndicator"

INPUT_DTYPES = {"string": "string", "integer": "int64", "text": "string", "numeric": "float32"}
BUCKET_SUFFIX = "_bucket"


@dataclasses.dataclass(frozen=True)
class VocabularyFile:
    """A constructor argument that is the path of an artifact file.

    Attributes:
        relpath: Path relative to the artifact directory, e.g. ``vocab/country.txt``.
    """

    relpath: str


@dataclasses.dataclass(frozen=True)
class TfIdfState:
    """Marks the ``vocabulary`` / ``idf_weights`` arguments loaded at build time.

    Attributes:
        part: ``vocabulary`` or ``idf_weights``.
    """

    part: Literal["vocabulary", "idf_weights"]


@dataclasses.dataclass(frozen=True)
class TargetState:
    """Marks the ``vocabulary`` / ``weights`` arguments of a target encoding, read from
    ``vocab/<name>.target.jsonl`` at build time (docs/target_encoding.md).

    Attributes:
        part: ``vocabulary`` (the tokens) or ``values`` (``[[global_mean], [encoding],
            ...]``, float32, row 0 for OOV and missing).
    """

    part: Literal["vocabulary", "values"]


@dataclasses.dataclass(frozen=True)
class TargetPlan:
    """Where a target-encoded feature's statistics are.

    Attributes:
        path: Relative path of ``vocab/<name>.target.jsonl``.
        integer: The tokens are integers (an integer feature).
        global_mean: The encoding of OOV and missing values.
    """

    path: str
    integer: bool
    global_mean: float


#: Suffix of a target-encoded feature's extra output (float32, (batch, 1)).
TARGET_SUFFIX = "_target_encoding"
#: The OOV token of a target encoding's lookup: never a real value (NUL bytes / the
#: second-smallest int64), so no token of the file can clash with it.
TARGET_OOV_TOKEN = "\x00beam_prep:target_oov\x00"
TARGET_OOV_INTEGER = -(2**63) + 1


@dataclasses.dataclass(frozen=True)
class PerKeyState:
    """Marks a ``PerKeyScaling`` argument loaded from the per-key file at build time.

    Attributes:
        part: ``keys``, ``shifts``, ``scales``, ``sigmoid`` or ``counts``; with per-key
            buckets ``bucket_keys``, ``boundaries`` or ``lengths`` (``PerKeyBucketize``).
    """

    part: Literal["keys", "shifts", "scales", "sigmoid", "counts", "bucket_keys",
                  "boundaries", "lengths"]


@dataclasses.dataclass(frozen=True)
class KeyPlan:
    """The key of a numeric feature with ``per_key`` (beam_prep.codegen.per_key_plan).

    Attributes:
        column: The raw input holding the key (a column key), else ``""``.
        derived: How an expression key is computed (a string ``DerivedFeature``), else None.
        relpath: The per-key file (``per_key/<feature>.jsonl``).
        scaling: ``z_score``, ``min_max`` or ``none`` (per-key buckets alone: identity rows).
        global_row: ``(shift, scale, sigmoid)`` of an unknown or missing key.
        buckets: The per-key bucket file (``per_key/<feature>.buckets.jsonl``) with
            ``num_buckets``, else None.
        num_buckets: ``num_buckets`` of the feature (0 without per-key buckets).
        global_boundaries: The global boundaries (an unknown or missing key's).
    """

    column: str
    derived: DerivedPlan | None
    relpath: str
    scaling: str
    global_row: tuple[float, float, bool]
    buckets: str | None = None
    num_buckets: int = 0
    global_boundaries: tuple[float, ...] = ()


@dataclasses.dataclass(frozen=True)
class LayerPlan:
    """One Keras layer.

    Attributes:
        cls: Class name in ``keras.layers``.
        name: The layer's explicit name.
        args: Constructor keyword arguments in order; values are Python literals,
            :class:`VocabularyFile` or :class:`TfIdfState`.
    """

    cls: str
    name: str
    args: tuple[tuple[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class OutputPlan:
    """One encoded output: a chain of layers applied to the feature's raw input.

    Attributes:
        key: Key of the encoded feature in the preprocessor's output dict.
        layers: Layers applied in order.
        stage: ``data`` (tf.data) or ``model`` (allowed inside a TPU model).
        dtype: Dtype of the encoded tensor (what the layers really return).
        width: Size of its last axis; shape is ``(batch, width)``; None = varies.
        ragged: A ``tf.RaggedTensor`` (a list feature's int output without max_values).
        before_fill: Reads the value before the feature's FillMissing (the missing
            indicator, beam_prep.codegen.impute_plan).
    """

    key: str
    layers: tuple[LayerPlan, ...]
    stage: Stage = "data"
    dtype: str = "int64"
    width: int | None = 1
    ragged: bool = False
    before_fill: bool = False


@dataclasses.dataclass(frozen=True)
class TfIdfPlan:
    """Where a tf_idf text feature's vocabulary and document frequencies are.

    Attributes:
        vocabulary: Relative path of the vocabulary file.
        counts: Relative path of the ``[token, count, df]`` sidecar.
        document_count: Number of documents of the analysis.
    """

    vocabulary: str
    counts: str
    document_count: int


@dataclasses.dataclass(frozen=True)
class FeaturePlan:
    """Everything generated for one feature.

    Attributes:
        name: Feature name (the key of its value and outputs).
        kind: Spec kind.
        dtype: The dtype its layers take (``string``, ``int64`` or ``float32``), shape
            ``(batch, 1)``; its column's raw input may be wider (float64, cast in the model).
        outputs: Encoded outputs.
        summary: One-line description for docstrings.
        tf_idf: Set for tf_idf text features.
        column: Data column it reads: the name of its raw input (one per column).
        fill: The ``FillMissing`` layer (arg ``default_value``) applied to the raw input
            before each output's ``layers`` (except ``before_fill`` ones); None when the
            feature has no default_value nor imputed value.
        imputed: The ``impute`` strategy when the fill value is the analysed statistic
            (``mean``, ``median``, ``most_frequent``); ``""`` otherwise.
        notes: Why a layer deviates from the statistics (``#`` comments in generated code).
        derived: For a derived feature (``expr``): how its value is computed from raw
            inputs (beam_prep.codegen.derived_plan); None for a plain feature.
        crossed: The raw inputs of a hashed cross (its value is their tuple).
        list_input: Its raw input is a list column, ``(batch, None)`` (codegen.list_plan).
        target: Set for a target-encoded feature (its ``<name>_target_encoding`` output).
        keyed: A numeric feature with ``per_key``: its value is the tuple (value, key).
    """

    name: str
    kind: str
    dtype: str
    outputs: tuple[OutputPlan, ...]
    summary: str
    tf_idf: TfIdfPlan | None = None
    column: str = ""
    fill: LayerPlan | None = None
    imputed: str = ""
    notes: tuple[str, ...] = ()
    derived: DerivedPlan | None = None
    crossed: tuple[str, ...] = ()
    list_input: bool = False
    target: TargetPlan | None = None
    keyed: KeyPlan | None = None

    def chain(self, output: OutputPlan) -> tuple[LayerPlan, ...]:
        """Every layer applied to the raw input for ``output`` (the fill layer first)."""
        fill = self.fill is not None and not output.before_fill
        return ((self.fill,) if fill else ()) + output.layers


@dataclasses.dataclass(frozen=True)
class ModulePlan:
    """The whole preprocessing plan of one artifact directory.

    Attributes:
        fingerprint: The manifest fingerprint the plan was made from.
        features: Per-feature plans in spec order.
        files: ``(relpath, sha256, bytes)`` of every artifact file the layers read.
        raw_inputs: The preprocessor's raw inputs (deduplicated; see derived_plan).
    """

    fingerprint: str
    features: tuple[FeaturePlan, ...]
    files: tuple[tuple[str, str, int], ...]
    raw_inputs: tuple[RawInput, ...] = ()

    def has_derived(self) -> bool:
        """Whether any feature (or per-key key) is computed by an expression."""
        return any(f.derived is not None or (f.keyed is not None and f.keyed.derived is not None)
                   for f in self.features)

    def has_per_key(self) -> bool:
        """Whether any numeric feature is scaled per key (``PerKeyScaling``)."""
        return any(f.keyed is not None for f in self.features)

    def has_per_key_buckets(self) -> bool:
        """Whether any numeric feature is bucketized per key (``PerKeyBucketize``)."""
        return any(f.keyed is not None and f.keyed.buckets is not None for f in self.features)

    def has_computed(self) -> bool:
        """Whether any feature's value is not simply the raw input of its name and dtype.

        True with an expr or a cross, a plain feature reading another column (``column:``)
        or one whose column dtype is not its layers' (a numeric float64 column -> float32).
        """
        return any(f.derived is not None or f.crossed or f.column != f.name or f.keyed
                   or self.input_dtype(f.column) != f.dtype for f in self.features)

    def input_names(self) -> dict[str, str]:
        """Data column -> its ``keras.Input`` / signature argument name (``input_name``)."""
        return input_names(r.name for r in self.raw_inputs)

    def has_renamed_inputs(self) -> bool:
        """Whether a column's ``keras.Input`` name is not the column (``input_name``)."""
        return any(column != name for column, name in self.input_names().items())

    def input_dtype(self, column: str) -> str:
        """The dtype of the raw input of a data column (``""`` if no raw input reads it)."""
        return next((r.dtype for r in self.raw_inputs if r.name == column), "")

    def outputs(self) -> tuple[OutputPlan, ...]:
        """All outputs in feature order."""
        return tuple(o for f in self.features for o in f.outputs)

    def has_lists(self) -> bool:
        """Whether any feature takes a list of values per row (codegen.list_plan)."""
        return any(layer.cls == "ListEncoding" for o in self.outputs() for layer in o.layers)

    def has_targets(self) -> bool:
        """Whether any feature has a target encoding output."""
        return any(f.target is not None for f in self.features)

    def numeric_layer_classes(self) -> tuple[str, ...]:
        """The ``beam_prep.codegen.numeric_layers`` classes the plan uses (rendered ones)."""
        used = {layer.cls for o in self.outputs() for layer in o.layers}
        return tuple(c for c in NUMERIC_LAYER_CLASSES if c in used)

    def missing_layer_classes(self) -> tuple[str, ...]:
        """The ``beam_prep.codegen.missing`` classes the plan uses (fill first, then indicator)."""
        return (((FILL_MISSING_CLASS,) if self.has_defaults() else ())
                + ((INDICATOR_CLASS,) if self.has_indicators() else ()))

    def has_defaults(self) -> bool:
        """Whether any feature replaces missing inputs by its default_value."""
        return any(f.fill is not None for f in self.features)

    def has_indicators(self) -> bool:
        """Whether any output is a missing indicator (``missing_indicator: true``)."""
        return any(layer.cls == INDICATOR_CLASS for o in self.outputs() for layer in o.layers)

    def has_imputed(self) -> bool:
        """Whether any FillMissing value comes from the analysis (``impute``)."""
        return any(f.imputed for f in self.features)

    def indicators(self) -> dict[str, str]:
        """Missing indicator output key -> the feature it flags."""
        return {o.key: f.name for f in self.features for o in f.outputs
                if any(layer.cls == INDICATOR_CLASS for layer in o.layers)}
