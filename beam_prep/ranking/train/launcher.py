"""Ranking launcher: dataset builder + model builder + strategy + training loop + export.

:class:`DatasetBuilder` reads TFRecord files of serialized ELWC, shuffles serialized records,
batches them (``drop_remainder`` for static shapes), parses each batch with the ELWC reader
(``reader.parse_elwc_batch``: padded to ``list_size``, labels ``-1`` on padding) and runs the
:class:`~beam_prep.ranking.train.model.Preprocessor` in ``tf.data``.

:class:`RankingLauncher` trains under the configured strategy with either Keras ``fit``
(callbacks: ``ModelCheckpoint`` every N steps, ``BackupAndRestore`` for preemption,
``TensorBoard``, ``EarlyStopping``) or the custom loop of :mod:`.loop` (``strategy.run`` inside
a ``tf.function`` looping ``steps_per_execution`` times; ``tf.train.CheckpointManager``, resume
from the latest checkpoint, TensorBoard scalars, early stopping). Only the chief writes to
``model_dir``; other workers write to a scratch directory (Keras 3 callbacks have no chief
logic). Then it exports the SavedModel (:mod:`.export`).

Example:
    >>> hp = RankingHparams.load("train.yaml")                       # doctest: +SKIP
    >>> result = RankingLauncher(hp).run()                            # doctest: +SKIP
    >>> result.history["val_ndcg_10"][-1]                             # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import Any

import keras
import tensorflow as tf

from beam_prep.errors import BeamPrepError, InputError, SpecError
from beam_prep.ranking.feature_spec import ElwcFeatureSpec
from beam_prep.ranking.train.encoded_input import input_layers, serving_inputs
from beam_prep.ranking.train.epoch_log import EpochPrinter, keras_callback
from beam_prep.ranking.train.hparams import DataHparams, RankingHparams
from beam_prep.ranking.train.loop import CustomLoop, LoopSettings
from beam_prep.ranking.train.losses import get_loss
from beam_prep.ranking.train.metrics import ranking_metrics
from beam_prep.ranking.train.model import RankingModelBuilder, compile_ranker
from beam_prep.ranking.train.optimizers import make_optimizer, tensorboard_available
from beam_prep.ranking.train.preprocessor import Preprocessor
from beam_prep.ranking.train.scorers.ensemble import run_ensemble
from beam_prep.ranking.train.scorers.input_stats import model_parts
from beam_prep.ranking.train.strategy import (
    is_chief,
    make_strategy,
    resolve_loop,
    validate_tpu_settings,
)

ParseFn = Callable[[Any], tuple[dict[str, Any], Any]]


def default_parse_fn(spec: ElwcFeatureSpec, list_size: int) -> ParseFn:
    """The ELWC reader's batch parser: serialized ``[B]`` -> (features, labels ``[B, L]``).

    Uses :func:`beam_prep.ranking.train.reader.parse_elwc_batch` (mask as int32; the model does not
    take it: padded entries are recognised by their label ``-1``).
    """
    from beam_prep.ranking.train.reader import parse_elwc_batch

    def parse(serialized: Any) -> tuple[dict[str, Any], Any]:
        return parse_elwc_batch(serialized, spec, list_size=list_size, mask_dtype=tf.int32)

    return parse


class DatasetBuilder:
    """Training / validation datasets of ``(preprocessed features, labels)``.

    Args:
        data: ``DataHparams``.
        preprocessor: Applied per batch in ``tf.data``.
        parse_fn: Batch parser (default: the ELWC reader for ``preprocessor.spec``).
        seed: Shuffle seed.
    """

    def __init__(self, data: DataHparams, preprocessor: Preprocessor, *,
                 parse_fn: ParseFn | None = None, seed: int = 0) -> None:
        self.data = data
        self.preprocessor = preprocessor
        self.parse_fn = parse_fn or default_parse_fn(preprocessor.spec, data.list_size)
        self.seed = seed

    def files(self, pattern: str) -> list[str]:
        """Sorted files matching ``pattern``; InputError when there is none."""
        files = sorted(tf.io.gfile.glob(pattern))
        if not files:
            raise InputError(f"No file matches {pattern!r}. Check `data.train_pattern` / "
                             "`data.valid_pattern` (a glob of ELWC TFRecord files).")
        return files

    def _field(self, pattern: str) -> str:
        return ("`data.train_pattern`" if pattern == self.data.train_pattern
                else "`data.valid_pattern`")

    def nonempty_files(self, pattern: str) -> list[str]:
        """:meth:`files`, and InputError when they hold no record at all.

        Reads until the first record only (empty shards cost one open each), so an empty
        training set fails before anything is trained or exported.
        """
        files = self.files(pattern)
        if not has_records(files):
            raise InputError(
                f"{self._field(pattern)} matches {len(files)} file(s) but they hold no record "
                f"(0 ELWC lists). Received: pattern={pattern!r}. Point it at non-empty ELWC "
                "TFRecord files (re-run `beam-prep make-elwc` if its output is empty).")
        return files

    def build(self, pattern: str, batch_size: int, *, training: bool) -> tf.data.Dataset:
        """Batched, parsed, preprocessed dataset; repeats forever when ``training``.

        Raises:
            InputError: No file matches ``pattern``, or the files hold no record.
        """
        ds = tf.data.TFRecordDataset(self.nonempty_files(pattern))
        if training and self.data.shuffle_buffer:
            ds = ds.shuffle(self.data.shuffle_buffer, seed=self.seed,
                            reshuffle_each_iteration=True)
        if training:
            ds = ds.repeat()
        ds = ds.batch(batch_size, drop_remainder=self.data.drop_remainder or training)
        pre = self.preprocessor
        parse = self.parse_fn

        static = self.data.drop_remainder or training

        def fix(x: Any) -> Any:
            # Parsing loses the static batch size; TPUs need it back (drop_remainder holds).
            return tf.ensure_shape(x, [batch_size, *x.shape[1:]]) if static else x

        def transform(serialized: Any) -> tuple[dict[str, Any], Any]:
            features, labels = parse(serialized)
            out = {k: fix(v) for k, v in pre(features).items()}
            return out, fix(tf.cast(labels, tf.float32))

        ds = ds.map(transform, num_parallel_calls=tf.data.AUTOTUNE)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA)
        return ds.with_options(options).prefetch(tf.data.AUTOTUNE)

    def check_inputs(self) -> None:
        """InputError unless the training (and validation) files exist and hold a record.

        Cheap (no parsing, no tracing): run it before building datasets or a model.
        """
        self.nonempty_files(self.data.train_pattern)
        if self.data.valid_pattern:
            self.nonempty_files(self.data.valid_pattern)

    def train_dataset(self) -> tf.data.Dataset:  # noqa: D102
        return self.build(self.data.train_pattern, self.data.train_batch_size, training=True)

    def valid_dataset(self) -> tf.data.Dataset | None:  # noqa: D102
        if not self.data.valid_pattern:
            return None
        return self.build(self.data.valid_pattern, self.data.resolved_valid_batch_size,
                          training=False)


@dataclasses.dataclass
class TrainResult:
    """What :meth:`RankingLauncher.run` returns.

    Attributes:
        model: The trained Keras model (preprocessed features -> scores).
        history: Metric name -> per-epoch values (``loss``, ``val_ndcg_10``, ...).
        steps: Optimizer steps taken (including those restored from a checkpoint).
        seconds: Wall time of training.
        export_path: Where the SavedModel was written (None if not exported).
    """

    model: keras.Model
    history: dict[str, list[float]]
    steps: int
    seconds: float
    export_path: str | None = None


class ValidationRemainderWarning(UserWarning):
    """``data.drop_remainder`` drops part of the validation set (see
    :meth:`RankingLauncher.check_validation_remainder`)."""


def has_records(files: list[str]) -> bool:
    """True when the TFRecord ``files`` hold at least one record (stops at the first one).

    Raises:
        InputError: A file is not a TFRecord file (corrupt framing).
    """
    try:
        for _ in tf.data.TFRecordDataset(files).take(1):
            return True
    except tf.errors.DataLossError as e:
        raise InputError(f"Cannot read ELWC TFRecord files {files[:3]!r}: "
                         f"{e.message.splitlines()[0]}. Check that they are uncompressed "
                         "TFRecord files written by `beam-prep make-elwc`.") from e
    return False


def load_feature_spec(path: str) -> ElwcFeatureSpec:
    """``ElwcFeatureSpec.load`` with one-line errors naming ``data.feature_spec``.

    Raises:
        InputError: The file cannot be read (missing, a directory, no permission).
        SpecError: It is not a valid ``feature_spec.json``.
    """
    try:
        return ElwcFeatureSpec.load(path)
    except BeamPrepError:
        raise
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise InputError(f"Cannot read `data.feature_spec` ({reason}). Received: "
                         f"feature_spec={path!r}. Point it at the feature_spec.json that "
                         "`beam-prep make-elwc` writes next to the ELWC files.") from e
    except ValueError as e:
        raise SpecError(f"`data.feature_spec` is not a valid feature_spec.json "
                        f"({type(e).__name__}). Received: feature_spec={path!r}. Re-run "
                        "`beam-prep make-elwc` or fix the file.") from e


def count_records(files: list[str]) -> int:
    """Number of records in TFRecord ``files`` (reads the framing, parses nothing)."""
    ds = tf.data.TFRecordDataset(files)
    return int(ds.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))


class RankingLauncher:
    """Builds everything from :class:`RankingHparams` and trains.

    Args:
        hparams: The config.
        layers: Feature name -> preprocessing layer (the generated module's, or
            ``beam_prep.layers_from_artifacts``). Default: built from ``data.artifacts``.
        vocab_rows: Feature name -> embedding rows (default: from ``data.artifacts``).
        parse_fn: Batch ELWC parser (default: the reader's).
        strategy: A ready strategy (tests); default: from ``distribution.strategy``.
        epoch_printer: Shows a line per epoch (loss, metrics, seconds) in both loops
            (``beam-prep train``; see :mod:`.epoch_log`). Default: none.
        verbose: Keras ``fit`` verbosity (0 silent, 1 progress bar, 2 a line per epoch).
    """

    def __init__(self, hparams: RankingHparams, *, layers: Mapping[str, Any] | None = None,
                 vocab_rows: Mapping[str, int] | None = None, parse_fn: ParseFn | None = None,
                 strategy: tf.distribute.Strategy | None = None,
                 epoch_printer: EpochPrinter | None = None, verbose: int = 0) -> None:
        self.hp = hparams
        self.epoch_printer = epoch_printer
        self.verbose = verbose
        # First: MultiWorkerMirroredStrategy must exist before TensorFlow runs any op.
        self.strategy = strategy or make_strategy(hparams.distribution.strategy,
                                                  tpu=hparams.distribution.tpu)
        self.spec = load_feature_spec(hparams.data.feature_spec)
        # Encoded ELWC (make-elwc --artifacts): identity inputs, artifacts checked.
        layers, vocab_rows = input_layers(hparams.data.artifacts, self.spec, layers, vocab_rows)
        self.preprocessor = Preprocessor(self.spec, layers, list_size=hparams.data.list_size,
                                         sequence_length=hparams.data.sequence_length,
                                         vocab_rows=vocab_rows,
                                         include_mask=hparams.model.scorer == "dasalc")
        self._shared = dict(layers=layers, vocab_rows=vocab_rows, parse_fn=parse_fn,
                            strategy=self.strategy, epoch_printer=epoch_printer, verbose=verbose)
        self.datasets = DatasetBuilder(hparams.data, self.preprocessor, parse_fn=parse_fn,
                                       seed=hparams.training.seed)
        self.loop = resolve_loop(hparams.training.loop, hparams.distribution.strategy,
                                 hparams.training.steps_per_execution)
        self.chief = is_chief(self.strategy)
        self.jit_compile = hparams.distribution.strategy == "tpu"

    def validate(self, element_spec: Any) -> None:
        """Strategy-specific checks (TPU: static shapes, batch divisibility, ...)."""
        if self.hp.distribution.strategy == "tpu":
            validate_tpu_settings(
                list_size=self.hp.data.list_size, drop_remainder=self.hp.data.drop_remainder,
                global_batch_size=self.hp.data.train_batch_size,
                num_replicas=self.strategy.num_replicas_in_sync,
                steps_per_execution=self.hp.training.steps_per_execution, loop=self.loop,
                element_spec=element_spec)

    def build_model(self, element_spec: Any) -> keras.Model:
        """The model under the strategy's scope (compiled for the fit loop)."""
        hp = self.hp
        keras.utils.set_random_seed(hp.training.seed)
        with self.strategy.scope():
            model = RankingModelBuilder(self.preprocessor, hp.model,
                                        global_batch_size=hp.data.train_batch_size,
                                        **model_parts(self)).build(element_spec[0])
            if self.loop == "fit":
                compile_ranker(model, hp.training, jit_compile=self.jit_compile)
        return model

    def _dir(self, sub: str) -> str:
        if self.chief:
            return os.path.join(self.hp.training.model_dir, sub)
        return os.path.join(tempfile.mkdtemp(prefix="beam_prep_worker_"), sub)

    def run(self) -> TrainResult:
        """Trains (resuming if ``model_dir`` holds state), then exports if configured.

        Raises:
            InputError: The training or validation files are missing or hold no record.
        """
        self.datasets.check_inputs()
        if self.hp.model.ensemble > 1:  # N members, one averaged model (scorers.ensemble)
            return run_ensemble(self, RankingLauncher, TrainResult)
        train_ds = self.datasets.train_dataset()
        valid_ds = self.datasets.valid_dataset()
        self.validate(train_ds.element_spec)
        self.check_validation_remainder()
        model = self.build_model(train_ds.element_spec)
        start = time.perf_counter()
        if self.epoch_printer is not None:
            self.epoch_printer.begin()
        if self.loop == "fit":
            history, steps = self._fit(model, train_ds, valid_ds)
        else:
            history, steps = self._custom(model, train_ds, valid_ds)
        seconds = time.perf_counter() - start
        return TrainResult(model, history, steps, seconds,
                           self._export(model, train_ds.element_spec))

    def _export(self, model: keras.Model, element_spec: Any) -> str | None:
        """:meth:`export` if ``training.export_dir`` is set and this is the chief, else None."""
        if not (self.hp.training.export_dir and self.chief):
            return None
        return self.export(model, element_spec)

    def export(self, model: keras.Model, element_spec: Any) -> str:
        """Writes the SavedModel to ``training.export_dir`` (:mod:`.export`); returns it."""
        from beam_prep.ranking.train.export import export_ranker

        pre, parse = serving_inputs(self)  # raw features in, even from encoded ELWC
        return export_ranker(model, pre, self.hp.training.export_dir, parse_fn=parse)

    def steps_per_epoch(self) -> int:
        """``training.steps_per_epoch`` or one pass over the training files."""
        if self.hp.training.steps_per_epoch:
            return self.hp.training.steps_per_epoch
        n = count_records(self.datasets.files(self.hp.data.train_pattern))
        return max(1, n // self.hp.data.train_batch_size)

    def check_validation_remainder(self) -> int:
        """Warns when ``data.drop_remainder`` would silently drop validation lists.

        With ``drop_remainder: true`` (required on TPU) the last partial validation batch is
        dropped, so validation metrics would skip ``n % valid_batch_size`` lists. Counting the
        lists reads the record framing of the validation files once (no parsing). Nothing is
        checked when ``training.validation_steps`` is set (validation is capped anyway).

        Returns:
            The number of validation lists that are dropped (0 when none or not checked).
        """
        data = self.hp.data
        if (not data.valid_pattern or not data.drop_remainder
                or self.hp.training.validation_steps):
            return 0
        n = count_records(self.datasets.files(data.valid_pattern))
        batch = data.resolved_valid_batch_size
        dropped = n % batch
        if dropped:
            import warnings

            divisors = [d for d in range(batch, 0, -1) if n % d == 0]
            warnings.warn(
                f"`data.drop_remainder: true` drops {dropped} of the {n} validation lists "
                f"(valid_batch_size={batch}): validation metrics ignore them. Set "
                f"`data.valid_batch_size` to a divisor of {n} (e.g. {divisors[0]}), or "
                "`data.drop_remainder: false` when not training on TPU.",
                ValidationRemainderWarning, stacklevel=2)
        return dropped

    def _custom(self, model: keras.Model, train_ds: tf.data.Dataset,
                valid_ds: tf.data.Dataset | None) -> tuple[dict[str, list[float]], int]:
        tr = self.hp.training
        settings = LoopSettings(
            epochs=tr.epochs, steps_per_epoch=self.steps_per_epoch(),
            global_batch_size=self.hp.data.train_batch_size,
            steps_per_execution=tr.steps_per_execution,
            checkpoint_every_steps=tr.checkpoint_every_steps,
            validation_steps=tr.validation_steps,
            early_stopping_metric=tr.early_stopping_metric,
            early_stopping_patience=tr.early_stopping_patience)
        with self.strategy.scope():
            loss = get_loss(tr.loss, softmax_targets=tr.softmax_targets, reduction=None)
        loop = CustomLoop(
            model, strategy=self.strategy,
            make_optimizer=lambda: make_optimizer(tr.optimizer, tr.learning_rate),
            loss=loss, make_metrics=lambda: ranking_metrics(tr.metrics_k), settings=settings,
            checkpoint_dir=self._dir("ckpt"),
            log_dir=self._dir("logs") if tensorboard_available() else None,
            on_epoch_end=self.epoch_printer)
        return loop.run(train_ds, valid_ds)

    def backend_callbacks(self) -> list[Any]:
        """Callbacks the backend adds to ``fit`` (none on TensorFlow)."""
        return []

    def fit_input(self, train_ds: tf.data.Dataset) -> Any:
        """What ``fit`` trains on: the dataset itself on TensorFlow (``tf.data`` prefetches)."""
        return train_ds

    def _fit(self, model: keras.Model, train_ds: tf.data.Dataset,
             valid_ds: tf.data.Dataset | None) -> tuple[dict[str, list[float]], int]:
        tr = self.hp.training
        save_freq: Any = tr.checkpoint_every_steps or "epoch"
        callbacks: list[Any] = [
            keras.callbacks.BackupAndRestore(self._dir("backup"), save_freq=save_freq,
                                             delete_checkpoint=False),
            keras.callbacks.ModelCheckpoint(
                os.path.join(self._dir("ckpt"), "ckpt-{epoch:04d}.weights.h5"),
                save_weights_only=True, save_freq=save_freq),
        ]
        if tensorboard_available():
            callbacks.append(keras.callbacks.TensorBoard(self._dir("logs"), update_freq="epoch",
                                                         write_graph=False))
        if tr.early_stopping_metric and valid_ds is not None:
            callbacks.append(keras.callbacks.EarlyStopping(
                monitor=tr.early_stopping_metric, patience=tr.early_stopping_patience,
                mode="min" if "loss" in tr.early_stopping_metric else "max",
                restore_best_weights=True))
        if self.epoch_printer is not None:
            callbacks.append(keras_callback(self.epoch_printer))
        callbacks.extend(self.backend_callbacks())
        # shuffle=False: the dataset shuffles itself (DatasetBuilder.build); Keras ignores
        # `shuffle` for a tf.data.Dataset and warns when it is left at True.
        history = model.fit(self.fit_input(train_ds), epochs=tr.epochs,
                            steps_per_epoch=self.steps_per_epoch(), validation_data=valid_ds,
                            validation_steps=tr.validation_steps,
                            callbacks=callbacks, verbose=self.verbose, shuffle=False)
        steps = int(model.optimizer.iterations.numpy())
        return {k: [float(v) for v in vs] for k, vs in history.history.items()}, steps


def build_launcher(hparams: RankingHparams, **kwargs: Any) -> RankingLauncher:
    """Convenience constructor (same arguments as :class:`RankingLauncher`)."""
    return RankingLauncher(hparams, **kwargs)
