"""Runtime twin of the generated module: the same Keras layers, built without codegen.

``layers_from_artifacts(path)`` reads the same layer plan as ``beam-prep generate``
(:mod:`beam_prep.codegen.plan`) and offers the generated module's functions as methods:
``raw_inputs``, ``input_signature``, ``build_layers``, ``build_preprocessor(stage=...)``,
``encoded_inputs``, ``raw_columns``, ``make_dataset_fn``, ``build_inference_model``,
``parse_examples`` and ``export_saved_model``.
Layer classes, arguments and names are identical, so outputs are too (tested), including
the ``FillMissing`` layer (:mod:`beam_prep.codegen.missing`) that replaces missing raw
inputs by a feature's ``default_value``, and the numeric scaling layers of
:mod:`beam_prep.codegen.numeric_layers` (whose source the generated module copies).

Example:
    >>> import beam_prep
    >>> pp = beam_prep.layers_from_artifacts("artifacts/")           # doctest: +SKIP
    >>> ds = ds.batch(64).map(pp.make_dataset_fn())                  # doctest: +SKIP
    >>> inference = pp.build_inference_model(trained_model)          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from beam_prep.codegen.list_plan import LIST_LAYER_CLASS, PADDING
from beam_prep.codegen.per_key_bucket_plan import BUCKET_LAYER_CLASS
from beam_prep.codegen.per_key_plan import (
    PER_KEY_COUNT_CLASS,
    PER_KEY_LAYER_CLASS,
    per_key_state,
)
from beam_prep.codegen.plan import (
    EMPTY_VOCABULARY_INTEGER,
    EMPTY_VOCABULARY_TOKEN,
    FILL_MISSING_CLASS,
    INDICATOR_CLASS,
    MISSING_INTEGER,
    LayerPlan,
    TfIdfPlan,
    TfIdfState,
    VocabularyFile,
    plan_from_artifacts,
)
from beam_prep.codegen.plan_types import PerKeyState, TargetPlan, TargetState
from beam_prep.codegen.scaling_plan import NUMERIC_LAYER_CLASSES
from beam_prep.errors import SpecError
from beam_prep.io import filesystem as fs
from beam_prep.io.artifacts import Artifacts
from beam_prep.io.counts_sidecar import read_document_frequencies
from beam_prep.io.target_file import read_target

STAGES = ("all", "data", "model")


def _artifact_path(artifacts_dir: str, relpath: str) -> str:
    # Same string as the generated module builds, so layer configs are identical too.
    return artifacts_dir.rstrip("/") + "/" + relpath


def tf_idf_state(artifacts_dir: str, plan: TfIdfPlan, art: Artifacts | None = None,
                 name: str = "") -> tuple[list[str], Any]:
    """Vocabulary with ``[UNK]`` first and idf weights, exactly as ``adapt()`` sets them.

    idf = ``ln(1 + N / (1 + df))`` computed in float64 by TensorFlow and cast to float32;
    the ``[UNK]`` weight is the float32 mean of the others (Keras ``finalize_state``).
    With ``art`` (and the feature's ``name``) the files are read through the checked reader
    (regular files of the manifest's size, bounded lines).
    """
    import tensorflow as tf

    if art is not None:
        tokens, df = art.vocabulary(name), art.document_frequencies(name)
    else:
        text = fs.read_text(_artifact_path(artifacts_dir, plan.vocabulary))
        tokens = text.split("\n")[:-1] if text else []
        df = read_document_frequencies(_artifact_path(artifacts_dir, plan.counts))
    if not tokens:
        tokens, df = [EMPTY_VOCABULARY_TOKEN], [0]
    n = tf.constant(plan.document_count, tf.int64)
    idf = tf.cast(tf.math.log(1 + n / (1 + tf.constant(df, tf.int64))), "float32")
    weights = tf.concat([tf.reshape(tf.reduce_mean(idf), [1]), idf], axis=0)
    return ["[UNK]"] + tokens, weights.numpy()


def target_state(art: Artifacts, name: str, plan: TargetPlan) -> tuple[list[Any], list[Any]]:
    """Tokens and ``[[global_mean], [encoding], ...]`` as float32, as the generated
    module's ``_target_state`` reads them (row 0: OOV and missing; a null encoding: NaN),
    read through the checked reader (:func:`beam_prep.io.target_file.read_target`)."""
    import tensorflow as tf

    table = read_target(art, name)
    tokens: list[Any] = list(table.tokens)
    values = [plan.global_mean] + table.encoding.tolist()
    if not tokens:
        tokens = [EMPTY_VOCABULARY_INTEGER if plan.integer else EMPTY_VOCABULARY_TOKEN]
        values.append(plan.global_mean)
    table_t = tf.cast(tf.constant(values, tf.float64, shape=[len(values), 1]), tf.float32)
    return tokens, [table_t.numpy()]


def _keyed_state(art: Artifacts, name: str, key: Any) -> dict[str, Any]:
    """:func:`per_key_state` with the keys as a string tensor (built from Arrow buffers)."""
    from beam_prep.codegen.per_key_layer import arrow_key_tensor

    state = per_key_state(art, name, key)
    return {**state, "keys": arrow_key_tensor(state["keys"])}


class PreprocessingLayers:
    """Keras layers of one artifact directory (see the module docstring).

    Args:
        path: Artifact directory (local or ``gs://``).
        verify: Check every vocabulary file's sha256 against the manifest first.

    Attributes:
        path: The artifact directory.
        artifacts: The opened :class:`~beam_prep.Artifacts`.
        plan: The layer plan shared with the code generator.
        input_dtypes: Raw input name -> dtype (shape ``(batch, 1)``): one per data column
            read by any feature (the name is the column's), float64, int64 or string.
        list_inputs: Raw inputs of list features: ``(batch, None)``, padded with the
            missing value (beam_prep.codegen.list_plan).
        ragged_outputs: Encoded keys that are ``tf.RaggedTensor`` (list, int, no max_values).
        input_columns: Raw input name -> data column read by ``raw_columns`` (the same).
        outputs: Encoded key -> (raw input name, stage).
        output_specs: Encoded key -> (dtype, shape) of what the layers return.
        default_values: Feature name -> default_value (or imputed value), for the features
            whose missing raw inputs are replaced (the generated module's ``DEFAULT_VALUES``).
        imputed: Feature name -> ``impute`` strategy of the imputed ones (``IMPUTED``).
        missing_indicators: Indicator output -> feature (``MISSING_INDICATORS``).
        missing_values: Raw dtype -> the value that means "missing" at the layer input.
    """

    missing_values: dict[str, Any] = {"string": "", "float32": float("nan"),
                                      "float64": float("nan"), "int64": MISSING_INTEGER}

    def __init__(self, path: str, *, verify: bool = True) -> None:
        self.path = path
        self.artifacts = Artifacts(path, verify=verify)
        self.plan = plan_from_artifacts(self.artifacts)
        self.input_dtypes = {r.name: r.dtype for r in self.plan.raw_inputs}
        self.input_columns = {r.name: r.column for r in self.plan.raw_inputs}
        self.input_names = self.plan.input_names()
        self.outputs = {o.key: (f.name, o.stage) for f in self.plan.features for o in f.outputs}
        self.output_specs = {o.key: (o.dtype, (None, o.width)) for o in self.plan.outputs()}
        self.list_inputs = tuple(r.name for r in self.plan.raw_inputs if r.is_list)
        self.ragged_outputs = tuple(o.key for o in self.plan.outputs() if o.ragged)
        self.default_values = {f.name: f.fill.args[0][1] for f in self.plan.features
                               if f.fill is not None}
        self.imputed = {f.name: f.imputed for f in self.plan.features if f.imputed}
        self.missing_indicators = self.plan.indicators()

    @property
    def fingerprint(self) -> str:
        """The manifest fingerprint."""
        return self.plan.fingerprint

    def _layer(self, lp: LayerPlan, tf_idf: tuple[list[str], Any] | None,
               per_key: dict[str, list] | None = None,
               target: tuple[list[Any], list[Any]] | None = None) -> Any:
        import keras

        kwargs: dict[str, Any] = {}
        for key, value in lp.args:
            if isinstance(value, VocabularyFile):
                value = _artifact_path(self.path, value.relpath)
            elif isinstance(value, TfIdfState):
                assert tf_idf is not None
                value = tf_idf[0] if value.part == "vocabulary" else tf_idf[1]
            elif isinstance(value, TargetState):
                assert target is not None
                value = target[0] if value.part == "vocabulary" else target[1]
            elif isinstance(value, PerKeyState):
                assert per_key is not None
                value = per_key[value.part]
            kwargs[key] = value
        if lp.cls == BUCKET_LAYER_CLASS:
            from beam_prep.codegen.per_key_bucket_layer import PerKeyBucketize

            return PerKeyBucketize(**kwargs, name=lp.name)
        if lp.cls in (PER_KEY_LAYER_CLASS, PER_KEY_COUNT_CLASS):
            from beam_prep.codegen import per_key_layer

            return getattr(per_key_layer, lp.cls)(**kwargs, name=lp.name)
        if lp.cls == FILL_MISSING_CLASS:
            from beam_prep.codegen.missing import FillMissing

            return FillMissing(**kwargs, name=lp.name)
        if lp.cls == INDICATOR_CLASS:
            from beam_prep.codegen.missing import MissingIndicator

            return MissingIndicator(**kwargs, name=lp.name)
        if lp.cls == LIST_LAYER_CLASS:
            from beam_prep.codegen.list_layer import ListEncoding

            return ListEncoding(**kwargs, name=lp.name)
        if lp.cls in NUMERIC_LAYER_CLASSES:
            from beam_prep.codegen import numeric_layers

            return getattr(numeric_layers, lp.cls)(**kwargs, name=lp.name)
        return getattr(keras.layers, lp.cls)(**kwargs, name=lp.name)

    def build_feature_layers(self, name: str) -> dict[str, list[Any]]:
        """One feature's layers: encoded key -> layers applied in order to the raw input."""
        for fp in self.plan.features:
            if fp.name == name:
                state = (tf_idf_state(self.path, fp.tf_idf, self.artifacts, fp.name)
                         if fp.tf_idf else None)
                # One FillMissing instance shared by the feature's outputs (unique name).
                fill = [self._layer(fp.fill, None)] if fp.fill is not None else []
                keyed = (_keyed_state(self.artifacts, fp.name, fp.keyed)
                         if fp.keyed is not None else None)
                target = (target_state(self.artifacts, fp.name, fp.target) if fp.target
                          else None)
                return {o.key: ([] if o.before_fill else fill)
                        + [self._layer(lp, state, keyed, target) for lp in o.layers]
                        for o in fp.outputs}
        known = [fp.name for fp in self.plan.features]
        raise SpecError(f"No feature named {name!r}. Known features: {known}")

    def build_layers(self) -> dict[str, list[Any]]:
        """Every feature's layers, keyed by encoded output."""
        layers: dict[str, list[Any]] = {}
        for fp in self.plan.features:
            layers.update(self.build_feature_layers(fp.name))
        return layers

    def raw_inputs(self) -> dict[str, Any]:
        """One ``keras.Input`` per raw input, shape ``(batch, 1)`` (lists: ``(batch, None)``)."""
        import keras

        return {name: keras.Input(shape=(None,) if name in self.list_inputs else (1,),
                                  dtype=dtype, name=self.input_names[name])
                for name, dtype in self.input_dtypes.items()}

    def input_signature(self) -> dict[str, Any]:
        """``tf.TensorSpec`` of the raw inputs."""
        import tensorflow as tf

        return {name: tf.TensorSpec(shape=(None, None if name in self.list_inputs else 1),
                                    dtype=dtype, name=self.input_names[name])
                for name, dtype in self.input_dtypes.items()}

    def build_preprocessor(self, *, stage: str = "all") -> Any:
        """Dict-to-dict Keras model; ``stage`` as in the generated module (all/data/model)."""
        if stage not in STAGES:
            raise SpecError(f"`stage` must be one of {STAGES}. Received: stage={stage!r}")
        layers = self.build_layers()

        def apply(chain: list[Any], x: Any) -> Any:
            for layer in chain:
                x = layer(x)
            return x

        if stage == "model":
            inputs = self.encoded_inputs()
            outputs = {key: apply(layers[key], inputs[key]) if where == "model" else inputs[key]
                       for key, (_, where) in self.outputs.items()}
        else:
            inputs = self.raw_inputs()
            values = self.feature_values(inputs)
            outputs = {key: values[name] if stage == "data" and where == "model"
                       else apply(layers[key], values[name])
                       for key, (name, where) in self.outputs.items()}
        from beam_prep.codegen.keras_model import keras_model

        return keras_model(inputs, outputs, f"beam_prep_preprocessor_{stage}")

    def feature_values(self, inputs: dict[str, Any], *, on_tf: bool = False) -> dict[str, Any]:
        """Each feature's value before its layers: its raw input, or its computed value.

        A derived feature's ``DerivedFeature`` layer runs ``beam_prep.expr.tf.evaluate`` on
        the same typed tree the generated module renders as ``derive_<feature>``. ``on_tf``:
        the inputs are tf.data's tensors under another Keras backend (JAX), so casts are
        ``tf.cast`` and layers run through ``call`` (Keras would convert to the backend's arrays).
        """
        values: dict[str, Any] = {}
        for fp in self.plan.features:
            if fp.crossed:
                values[fp.name] = tuple(inputs[c] for c in fp.crossed)
                continue
            if fp.derived is None:
                value = inputs[fp.column]
                if self.input_dtypes[fp.column] != fp.dtype:
                    import keras
                    import tensorflow as tf

                    value = (tf.cast if on_tf else keras.ops.cast)(value, fp.dtype)
                values[fp.name] = value
                continue
            import functools

            from beam_prep.codegen.derived_layer import DerivedFeature
            from beam_prep.expr import tf as expr_tf

            d = fp.derived
            layer = DerivedFeature(functools.partial(expr_tf.evaluate, d.tree), list(d.columns),
                                   d.output_dtype, list_output=d.list_output, name=d.layer)
            x = {c: inputs[c] for c in d.columns}
            values[fp.name] = layer.call(x) if on_tf else layer(x)
        for fp in self.plan.features:  # per_key: the value and its key (per_key_plan)
            if fp.keyed is not None:
                values[fp.name] = (values[fp.name], self._key(fp.name, fp.keyed, inputs, on_tf))
        return values

    @staticmethod
    def _key(name: str, key: Any, inputs: dict[str, Any], on_tf: bool) -> Any:
        if key.derived is None:
            return inputs[key.column]
        import functools

        from beam_prep.codegen.derived_layer import DerivedFeature
        from beam_prep.expr import tf as expr_tf

        d = key.derived
        layer = DerivedFeature(functools.partial(expr_tf.evaluate, d.tree), list(d.columns),
                               "string", name=d.layer)
        x = {c: inputs[c] for c in d.columns}
        return layer.call(x) if on_tf else layer(x)

    def encoded_inputs(self) -> dict[str, Any]:
        """``keras.Input``s matching the ``data`` stage outputs (inputs of a TPU model)."""
        import keras

        return {key: keras.Input(shape=shape[1:], dtype=dtype, name=key,
                                 ragged=key in self.ragged_outputs)
                for key, (dtype, shape) in self.output_specs.items()}

    def raw_columns(self, features: dict[str, Any]) -> dict[str, Any]:
        """Selects raw inputs from a batch dict as ``(batch, 1)`` tensors (see codegen).

        A list input may be a RaggedTensor, a SparseTensor or a dense ``(batch, L)`` tensor
        padded with the missing value; it becomes ``(batch, None)`` padded that way.
        """
        import tensorflow as tf

        out = {}
        for name, column in self.input_columns.items():
            if column not in features:
                raise KeyError(
                    f"Column {column!r} is read by the layers but is not in the batch. "
                    f"Received keys: {sorted(features)}"
                )
            value = features[column]
            if name in self.list_inputs:
                from beam_prep.codegen.list_layer import padded_list

                dtype_name = self.input_dtypes[name]
                value = padded_list(value, dtype_name, PADDING[dtype_name])
            dtype = tf.as_dtype(self.input_dtypes[name])
            value = tf.convert_to_tensor(value, dtype_hint=dtype)
            if value.dtype != dtype:
                if value.dtype == tf.string or dtype == tf.string or (
                        dtype.is_integer and not value.dtype.is_integer):
                    raise TypeError(f"Column {column!r} must be {dtype.name} (or an integer type "
                                    f"for a float64 column). Received: dtype={value.dtype.name}")
                value = tf.cast(value, dtype)
            if value.shape.rank == 1:
                value = tf.expand_dims(value, -1)
            out[name] = value
        return out

    def make_dataset_fn(self, *, stage: str = "all") -> Callable[..., Any]:
        """A function for ``tf.data.Dataset.map``: ``fn(features, *rest)``."""
        if stage not in ("all", "data"):
            raise SpecError(f"`stage` must be 'all' or 'data' in tf.data. Received: {stage!r}")
        import keras

        if keras.backend.backend() == "tensorflow":
            preprocessor = self.build_preprocessor(stage=stage)
        else:  # JAX/torch: no keras.Model on tf.data's tensors (see the generated module)
            layers = self.build_layers()

            def preprocessor(raw: dict[str, Any]) -> dict[str, Any]:
                values = self.feature_values(raw, on_tf=True)
                out = {}
                for key, (name, where) in self.outputs.items():
                    x = values[name]
                    if not (stage == "data" and where == "model"):
                        x = _apply_on_tf(layers[key], x)
                    out[key] = x
                return out

        def preprocess(features: dict[str, Any], *rest: Any) -> Any:
            raw = self.raw_columns(features)
            encoded = preprocessor(raw)
            batch = next(iter(raw.values())).shape[0]
            for key, value in encoded.items():
                if key not in self.ragged_outputs:
                    value.set_shape((batch, self.output_specs[key][1][1]))
            return (encoded, *rest) if rest else encoded

        return preprocess

    def build_inference_model(self, trainer: Any) -> Any:
        """Raw inputs -> preprocessing -> ``trainer``: the model to export."""
        inputs = self.raw_inputs()
        encoded = self.build_preprocessor(stage="all")(inputs)
        from beam_prep.codegen.keras_model import keras_model

        return keras_model(inputs, trainer(encoded), "beam_prep_inference")

    def parse_examples(self, serialized: Any) -> dict[str, Any]:
        """Serialized ``tf.Example`` protos (1-D string tensor) -> the raw inputs.

        Numeric columns are FloatList (float32) features cast to float64 here; an absent
        feature gives the missing value; a list input is a variable-length feature.
        """
        import tensorflow as tf

        features = {}
        for name, column in self.input_columns.items():
            dtype = self.input_dtypes[name]
            wire = tf.float32 if dtype == "float64" else tf.as_dtype(dtype)
            features[column] = (tf.io.VarLenFeature(wire) if name in self.list_inputs else
                                tf.io.FixedLenFeature([1], wire,
                                                      default_value=self.missing_values[dtype]))
        return self.raw_columns(tf.io.parse_example(serialized, features))

    def export_saved_model(self, inference: Any, export_dir: str) -> None:
        """SavedModel of ``inference`` with the signatures ``serve`` (= ``serving_default``,
        float64 tensors) and ``serve_tf_examples`` (serialized tf.Examples, float32 numbers
        cast inside), as the generated module's ``export_saved_model``."""
        import keras
        import tensorflow as tf

        archive = keras.export.ExportArchive()
        serve = archive.track_and_add_endpoint("serve", inference, [self.input_signature()])
        examples = tf.TensorSpec(shape=(None,), dtype=tf.string, name="examples")
        archive.add_endpoint("serve_tf_examples", tf.function(
            lambda e: serve(self.parse_examples(e)), input_signature=[examples],
            autograph=False))  # plain tracing, as the generated module's
        archive.write_out(export_dir, verbose=False)

    def __repr__(self) -> str:
        return f"PreprocessingLayers({self.path!r}, outputs={list(self.outputs)})"


def _apply_on_tf(chain: list[Any], x: Any) -> Any:
    """The generated module's ``_apply_on_tf``: a layer chain on tf.Tensors on any backend."""
    import keras
    import tensorflow as tf

    for layer in chain:
        if isinstance(layer, keras.layers.Reshape):
            x = tf.reshape(x, (-1, *layer.target_shape))
        elif type(layer).__module__.startswith("beam_prep."):
            x = layer.call(x)
        else:
            if not layer.built:  # a Model builds them on its symbolic inputs
                layer.build(x.shape)
            x = layer(x)
    return x


def layers_from_artifacts(path: str, *, verify: bool = True) -> PreprocessingLayers:
    """Builds the preprocessing layers of an artifact directory without generating code.

    Args:
        path: Artifact directory (local or ``gs://``).
        verify: Check vocabulary file checksums against the manifest.

    Returns:
        A :class:`PreprocessingLayers` with the generated module's API.

    Example:
        >>> pp = layers_from_artifacts("artifacts/")                 # doctest: +SKIP
        >>> pp.build_preprocessor()({"country": [["US"]]})           # doctest: +SKIP
    """
    return PreprocessingLayers(path, verify=verify)
