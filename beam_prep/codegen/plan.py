"""The layer plan: which Keras 3 layers an artifact directory turns into, as plain data.

The code generator (``render.py``) renders this plan into the generated module, which the
runtime twin (``runtime.py``, ``beam_prep.layers_from_artifacts``) runs in memory, and the
transform job (``beam_prep.transform``) encodes with numpy twins of the same layers. This
module imports neither Keras nor TensorFlow.

Conventions (one place; tested in tests/codegen):

=======  ===============  ================================  ==================================
kind     raw input        encoded output(s)                 layers (explicit names)
=======  ===============  ================================  ==================================
string   string (b, 1)    ``<name>``: int64 (b, 1), or      StringLookup ``<name>_lookup``
                          float32 (b, depth) for one_hot,   (+ CategoryEncoding
                          multi_hot, count                  ``<name>_encoding``)
integer  int64 (b, 1)     as string                         IntegerLookup (+ CategoryEncoding)
text     string (b, 1)    ``<name>``: int64 (b, L) for int  TextVectorization
                          mode, else (b, V + 1)             ``<name>_vectorizer`` (+ Reshape
                                                            ``<name>_flatten``)
numeric  float64 (b, 1)   ``<name>`` z-score float32;       Normalization
                          ``<name>_bucket`` int32 when      ``<name>_normalization``,
                          num_buckets is set                Discretization
                                                            ``<name>_discretization``
hashed   string or int64  ``<name>``: int64 (b, 1) or       Hashing ``<name>_hashing``
                          float32 (b, num_bins)             (+ CategoryEncoding)
=======  ===============  ================================  ==================================

A numeric feature's ``<name>`` output follows its ``scaling`` (z_score above; min_max, none,
log1p, robust, piecewise_linear: :mod:`beam_prep.codegen.scaling_plan`).

Raw inputs are data columns, one each (``beam_prep.codegen.derived_plan``); a numeric
feature's float64 column is cast to float32 inside the model before its layers.

Lookups always run in ``int`` mode; other output modes add a CategoryEncoding with
``depth = mask + OOV slots + vocabulary size`` (same values as the lookup's own mode,
but float32, as Keras declares it symbolically). A mask token with a non-int mode is
refused.

List features (``shape: list`` or ``expr: split(...)``; beam_prep.codegen.list_plan): raw
input ``(b, None)``, lookup index 0 = padding, a ``ListEncoding`` layer ``<name>_list``.

Stages: every output is computed in the ``data`` stage (``tf.data``) except the numeric
scaling layers of width 1 (Normalization, min_max's sigmoid, SignedLog1p, RobustScaling),
which are in the ``model`` stage: the TPU split of the Keras preprocessing guide.

Missing values (``default_value``): the analysis replaces a missing cell by the feature's
``default_value`` before counting, so the layers must too. At the layer input "missing" is
``""`` for string and text inputs, ``NaN`` for float32 inputs and :data:`MISSING_INTEGER`
(the smallest int64) for int64 inputs; a feature with a ``default_value`` gets a
``FillMissing`` layer ``<name>_fill_missing`` (:attr:`FeaturePlan.fill`) applied to the raw
input before every chain of that feature (one shared instance, so it also runs inside the
model stage before Normalization). Features without ``default_value`` get no such layer.
``impute`` plans the same layer with the manifest's ``imputed_value``, and
``missing_indicator`` an output ``<name>_missing`` read before it
(:mod:`beam_prep.codegen.impute_plan`).

Numeric statistics: a feature without a finite value in the data (``count`` 0) gets an
identity Normalization (mean 0, variance 1) and a single bucket, with ``#`` comments
(:attr:`FeaturePlan.notes`) saying why; a null mean or variance with data (beyond float64)
is refused with an :class:`ArtifactError` naming the feature.

Empty vocabularies: Keras cannot build a lookup table from an empty file or list, so an
empty vocabulary becomes a one-token *list* vocabulary holding a sentinel that real data
never contains; every real input then maps to OOV (``[UNK]`` for text). The layer's
``vocabulary_size()`` is one more than its mask and OOV slots.

Example:
    >>> plan = plan_from_artifacts(Artifacts("artifacts/"))     # doctest: +SKIP
    >>> [o.key for f in plan.features for o in f.outputs]       # doctest: +SKIP
    ['country', 'price', 'price_bucket']
"""

from __future__ import annotations

import dataclasses
from typing import Any

from beam_prep.codegen.derived_plan import (
    check_names,
    crossing_layer,
    derived_plan,
    raw_inputs_of,
)
from beam_prep.codegen.impute_plan import fill_value, indicator_output, no_value_note
from beam_prep.codegen.list_plan import as_list
from beam_prep.codegen.per_key_plan import keyed_plan
from beam_prep.codegen.plan_types import (
    BUCKET_SUFFIX,
    EMPTY_VOCABULARY_INTEGER,
    EMPTY_VOCABULARY_TOKEN,
    FILL_MISSING_CLASS,
    INDICATOR_CLASS,
    INPUT_DTYPES,
    MISSING_INTEGER,
    FeaturePlan,
    LayerPlan,
    ModulePlan,
    OutputPlan,
    Stage,
    TfIdfPlan,
    TfIdfState,
    VocabularyFile,
)
from beam_prep.codegen.scaling_plan import (
    min_max_layer,
    normalization_moments,
    piecewise_layers,
    robust_layer,
)
from beam_prep.codegen.target_plan import target_output
from beam_prep.errors import ArtifactError, SpecError
from beam_prep.io.contract.artifacts import Artifacts

# The plan types are defined in plan_types and importable from here too.
__all__ = [
    "BUCKET_SUFFIX",
    "EMPTY_VOCABULARY_INTEGER",
    "EMPTY_VOCABULARY_TOKEN",
    "FILL_MISSING_CLASS",
    "INDICATOR_CLASS",
    "INPUT_DTYPES",
    "MISSING_INTEGER",
    "FeaturePlan",
    "LayerPlan",
    "ModulePlan",
    "OutputPlan",
    "Stage",
    "TfIdfPlan",
    "TfIdfState",
    "VocabularyFile",
    "plan_from_artifacts",
]

def _vocabulary_arg(art: Artifacts, name: str, empty_token: Any) -> tuple[Any, bool, int]:
    meta = art.manifest["features"][name]["files"]["vocabulary"]
    size = int(art.stats(name).get("vocabulary_size", 0))
    if int(meta["bytes"]) == 0:
        return [empty_token], True, 0
    return VocabularyFile(art.relpath(name, "vocabulary")), False, size


def _check_oov(name: str, empty: bool, num_oov_indices: int) -> None:
    if empty and num_oov_indices == 0:
        raise ArtifactError(
            f"Feature {name!r} has an empty vocabulary and num_oov_indices=0, so every input "
            "would fail the lookup. Received: vocabulary_size=0. Fix: set num_oov_indices >= 1 "
            "or lower min_count/top_k filtering, then re-run the analysis."
        )


def _lookup(art: Artifacts, f: Any, cls: str, empty_token: Any) -> FeaturePlan:
    vocabulary, empty, size = _vocabulary_arg(art, f.name, empty_token)
    _check_oov(f.name, empty, f.num_oov_indices)
    if f.mask_token is not None and f.output_mode != "int":
        raise SpecError(
            f"Feature {f.name!r}: a mask_token with output_mode={f.output_mode!r} is not "
            f"supported by the generated layers. Received: mask_token={f.mask_token!r}. Fix: "
            "drop mask_token (a mask only matters for int sequences) or use output_mode='int'."
        )
    args = (("vocabulary", vocabulary), ("num_oov_indices", f.num_oov_indices),
            ("mask_token", f.mask_token), ("output_mode", "int"))
    first = (1 if f.mask_token is not None else 0) + f.num_oov_indices
    summary = (f"{f.kind} feature {f.name!r}: {size} tokens"
               + (" (empty vocabulary: every input is OOV)" if empty else "")
               + f"; mask={f.mask_token!r}, {f.num_oov_indices} OOV slot(s), tokens from index "
               + f"{first}; output_mode={f.output_mode!r}.")
    layers = [LayerPlan(cls, f"{f.name}_lookup", args)]
    output = OutputPlan(f.name, (layers[0],))
    if f.output_mode != "int":
        # Keras lookups return int64 one/multi-hot while declaring float32 symbolically;
        # an int lookup + CategoryEncoding gives the same values, float32 both ways.
        depth = first + (1 if empty else size)
        layers.append(LayerPlan("CategoryEncoding", f"{f.name}_encoding",
                                (("num_tokens", depth), ("output_mode", f.output_mode))))
        output = OutputPlan(f.name, tuple(layers), dtype="float32", width=depth)
    if getattr(f, "target_encoding", None) is None:
        return FeaturePlan(f.name, f.kind, INPUT_DTYPES[f.kind], (output,), summary)
    target, state = target_output(art, f, cls)
    te = f.target_encoding
    summary += (f" {target.key!r}: mean of {te.labels!r} per token over {te.folds} folds, "
                f"smoothing {te.smoothing!r}; OOV/missing -> {state.global_mean!r}.")
    return FeaturePlan(f.name, f.kind, INPUT_DTYPES[f.kind], (output, target), summary,
                       target=state)


def _text(art: Artifacts, f: Any) -> FeaturePlan:
    head: tuple[tuple[str, Any], ...] = (
        ("max_tokens", f.max_tokens),
        ("standardize", None if f.standardize == "none" else f.standardize),
        ("split", None if f.split == "none" else f.split),
        ("ngrams", f.ngrams),
        ("output_mode", f.output_mode),
        ("output_sequence_length", f.output_sequence_length),
    )
    tf_idf = None
    meta = art.manifest["features"][f.name]["files"]
    size = int(art.stats(f.name).get("vocabulary_size", 0))
    empty = int(meta["vocabulary"]["bytes"]) == 0
    if f.output_mode == "tf_idf":
        tf_idf = TfIdfPlan(art.relpath(f.name, "vocabulary"), art.relpath(f.name, "counts"),
                           art.document_count(f.name))
        tail: tuple[tuple[str, Any], ...] = (("vocabulary", TfIdfState("vocabulary")),
                                             ("idf_weights", TfIdfState("idf_weights")))
    else:
        vocabulary, empty, size = _vocabulary_arg(art, f.name, EMPTY_VOCABULARY_TOKEN)
        tail = (("vocabulary", vocabulary),)
    first = 2 if f.output_mode == "int" else 1
    summary = (f"text feature {f.name!r}: {size} tokens"
               + (" (empty vocabulary: every token is [UNK])" if empty else "")
               + f"; tokens from index {first}; output_mode={f.output_mode!r}"
               + (f" over {tf_idf.document_count} documents" if tf_idf else "") + ".")
    layers = [LayerPlan("TextVectorization", f"{f.name}_vectorizer", head + tail)]
    if f.output_mode == "int":
        output = OutputPlan(f.name, tuple(layers), width=f.output_sequence_length)
    else:
        # Keras declares (batch, 1, V) symbolically for (batch, 1) input but returns
        # (batch, V): the Reshape makes the declared shape the real one.
        width = 1 + (1 if empty else size)
        layers.append(LayerPlan("Reshape", f"{f.name}_flatten", (("target_shape", [width]),)))
        dtype = "float32" if f.output_mode == "tf_idf" else "int64"
        output = OutputPlan(f.name, tuple(layers), dtype=dtype, width=width)
    return FeaturePlan(f.name, "text", "string", (output,), summary, tf_idf)


def _numeric(art: Artifacts, f: Any) -> FeaturePlan:
    stats = art.stats(f.name)
    no_data = int(stats.get("count") or 0) == 0
    if f.scaling == "z_score":
        mean, variance, no_data = normalization_moments(f.name, stats)
        norm = LayerPlan("Normalization", f"{f.name}_normalization",
                         (("mean", mean), ("variance", variance)))
        outputs = [OutputPlan(f.name, (norm,), stage="model", dtype="float32")]
        summary = (f"numeric feature {f.name!r}: mean={mean!r}, variance={variance!r}"
                   + (" (no finite value in the data: all missing, NaN or inf; identity "
                      "normalization)" if no_data else ""))
    elif f.scaling == "min_max":
        layer = LayerPlan(*min_max_layer(f.name, stats))
        outputs = [OutputPlan(f.name, (layer,), stage="model", dtype="float32")]
        summary = (f"numeric feature {f.name!r}: min_max scaling, min={stats.get('min')!r}, "
                   f"max={stats.get('max')!r}" + (" (sigmoid: min == max or no data)"
                                                  if layer.cls == "Activation" else ""))
    elif f.scaling == "none":
        outputs = [OutputPlan(f.name, (), stage="data", dtype="float32")]
        summary = f"numeric feature {f.name!r}: no scaling (the raw value)"
    else:
        outputs, summary = _numeric_transform(f, stats)
    if f.num_buckets is not None:
        boundaries = stats.get("boundaries")
        if no_data or boundaries is None:
            boundaries = []
            summary += "; no boundaries (no finite value): every value in bucket 0"
        else:
            summary += f"; {len(boundaries) + 1} buckets" + (
                ", NaN in the last one" if f.default_value is None and f.impute is None
                else "")
        disc = LayerPlan("Discretization", f"{f.name}_discretization",
                         (("bin_boundaries", [float(b) for b in boundaries]),))
        outputs.append(OutputPlan(f.name + BUCKET_SUFFIX, (disc,), dtype="int32"))
    notes = (f"{f.name!r} had no finite value in the analysed data (all missing, NaN or inf):",
             "identity Normalization (mean 0, variance 1)"
             + (" and a single bucket (no boundaries)." if f.num_buckets is not None else "."),
             ) if no_data and f.scaling == "z_score" else ()
    return FeaturePlan(f.name, "numeric", "float32", tuple(outputs), summary + ".",
                       notes=notes)


def _numeric_transform(f: Any, stats: dict[str, Any]) -> tuple[list[OutputPlan], str]:
    """The output of ``scaling`` log1p, robust or piecewise_linear (codegen.scaling_plan)."""
    if f.scaling == "log1p":
        layer = LayerPlan("SignedLog1p", f"{f.name}_log1p", ())
        summary = f"numeric feature {f.name!r}: signed log1p, sign(x) * log1p(|x|)"
        return [OutputPlan(f.name, (layer,), stage="model", dtype="float32")], summary
    if f.scaling == "robust":
        spec, identity = robust_layer(f.name, stats)
        layer = LayerPlan(*spec)
        args = dict(layer.args)
        summary = (f"numeric feature {f.name!r}: robust scaling, median={args['median']!r}, "
                   f"iqr={args['iqr']!r}" + (" (no finite value in the data: identity)"
                                             if identity else ""))
        return [OutputPlan(f.name, (layer,), stage="model", dtype="float32")], summary
    piecewise, reshape, width = piecewise_layers(f.name, stats, f.num_buckets)
    layers = (LayerPlan(*piecewise), LayerPlan(*reshape))
    summary = (f"numeric feature {f.name!r}: piecewise linear encoding, {width} bins between "
               f"min={stats.get('min')!r} and max={stats.get('max')!r}")
    if int(stats.get("count") or 0) == 0:
        summary += " (no finite value in the data: step bins at 0)"
    elif stats.get("min") == stats.get("max"):
        summary += " (a constant: step bins at that value)"
    # Data stage (as Discretization): the model stage's inputs have the outputs' width.
    return [OutputPlan(f.name, layers, stage="data", dtype="float32", width=width)], summary


def _hashed(f: Any) -> FeaturePlan:
    hashing = (("num_bins", f.num_bins), ("salt", f.salt))
    layers = [LayerPlan(*crossing_layer(f)) if f.cross else
              LayerPlan("Hashing", f"{f.name}_hashing", hashing)]
    if f.output_mode != "int":
        layers.append(LayerPlan("CategoryEncoding", f"{f.name}_encoding",
                                (("num_tokens", f.num_bins), ("output_mode", f.output_mode))))
    dtype = "string" if f.dtype == "string" else "int64"
    summary = (f"hashed feature {f.name!r}: {f.num_bins} bins, salt={f.salt!r}, "
               f"output_mode={f.output_mode!r}.")
    output = (OutputPlan(f.name, tuple(layers)) if f.output_mode == "int" else
              OutputPlan(f.name, tuple(layers), dtype="float32", width=f.num_bins))
    if f.cross:
        summary = summary.replace(f", salt={f.salt!r}", f", HashedCrossing of {list(f.cross)}")
    return FeaturePlan(f.name, "hashed", dtype, (output,), summary, crossed=tuple(f.cross or ()))


def _with_fill(fp: FeaturePlan, f: Any, stats: dict[str, Any]) -> FeaturePlan:
    """Adds the FillMissing layer (and a note in the summary) when ``f`` has a default or an
    imputed value, and the ``<name>_missing`` output (beam_prep.codegen.impute_plan)."""
    if f.expr is not None:
        fp = dataclasses.replace(fp, derived=derived_plan(f, fp.dtype),
                                 summary=fp.summary + f" Computed as `{f.expr}`.")
    if getattr(f, "missing_indicator", False):
        fp = dataclasses.replace(fp, outputs=fp.outputs + (indicator_output(f),),
                                 summary=fp.summary + " Output "
                                 f"{f.name + '_missing'!r}: 1.0 where the value is missing.")
    found = fill_value(f, stats)
    if found is None:
        return dataclasses.replace(fp, column=f.source_column,
                                   summary=fp.summary + no_value_note(f, stats))
    default, described = found
    if fp.dtype == "float32":
        default = float(default)
    missing = {"string": '""', "int64": "the smallest int64", "float32": "NaN"}[fp.dtype]
    fill = LayerPlan(FILL_MISSING_CLASS, f"{f.name}_fill_missing", (("default_value", default),))
    summary = fp.summary + f" Missing ({missing}) is replaced by {described}."
    return dataclasses.replace(fp, column=f.source_column, fill=fill, summary=summary,
                               imputed=getattr(f, "impute", None) or "")


def plan_from_artifacts(art: Artifacts) -> ModulePlan:
    """Builds the layer plan of an artifact directory.

    Args:
        art: An opened artifact directory.

    Returns:
        The plan, in spec order.

    Raises:
        ArtifactError: A feature cannot be turned into a working layer.
        SpecError: Two features produce clashing input/layer names.

    Example:
        >>> plan_from_artifacts(Artifacts("artifacts/")).fingerprint   # doctest: +SKIP
        '3f1c...'
    """
    features: list[FeaturePlan] = []
    for f in art.spec.features:
        if f.kind == "string":
            features.append(_lookup(art, f, "StringLookup", EMPTY_VOCABULARY_TOKEN))
        elif f.kind == "integer":
            features.append(_lookup(art, f, "IntegerLookup", EMPTY_VOCABULARY_INTEGER))
        elif f.kind == "text":
            features.append(_text(art, f))
        elif f.kind == "numeric":
            fp = _numeric(art, f)
            features.append(fp if f.per_key is None else keyed_plan(art, f, fp))
        else:
            features.append(_hashed(f))
    planned = tuple(as_list(_with_fill(fp, f, art.stats(f.name)), f) if f.is_list()
                    else _with_fill(fp, f, art.stats(f.name))
                    for fp, f in zip(features, art.spec.features))
    check_names(planned, art.spec.features)
    files = []
    for name in art.feature_names:
        for role in sorted(art.manifest["features"][name].get("files", {})):
            meta = art.manifest["features"][name]["files"][role]
            used = role == "vocabulary" or (role == "counts" and any(
                fp.tf_idf is not None for fp in planned if fp.name == name)) or (
                role in ("target_encoding", "per_key", "per_key_buckets"))
            if used:
                files.append((art.relpath(name, role), meta["sha256"], int(meta["bytes"])))
    raw_inputs = raw_inputs_of(planned)
    _check_column_types(art, raw_inputs)
    return ModulePlan(art.fingerprint, planned, tuple(files), raw_inputs)


def _check_column_types(art: Artifacts, raw_inputs: Any) -> None:
    """Refuses raw input dtypes other than the column types the analysis recorded.

    Manifests of specs with derived features record ``input.column_types`` (column -> the
    type the reader converted it to); others record nothing and are not checked.
    """
    recorded = art.manifest.get("input", {}).get("column_types") or {}
    for raw in raw_inputs:
        if raw.name in recorded and recorded[raw.name] != raw.dtype:
            raise ArtifactError(
                f"Column {raw.name!r} was read as {recorded[raw.name]} by the analysis, but "
                f"the layers would read it as {raw.dtype}. Received: column_types="
                f"{recorded!r}. Fix: generate with the beam_prep version that ran the "
                "analysis, or re-run `beam-prep analyze`.")
