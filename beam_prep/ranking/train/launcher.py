"""Ranking launcher: dataset builder + model builder + strategy + training loop + export.

:class:`DatasetBuilder` reads TFRecord files of serialized ELWC, shuffles serialized records,
batches them (``drop_remainder`` for static shapes), parses each batch with the ELWC reader
(``reader.parse_elwc_batch``: training lists padded to ``list_size`` or cut to a seeded random
subset of it, validation lists whole; labels ``-1`` on padding) and runs the
:class:`~beam_prep.ranking.train.preprocessor.Preprocessor` in ``tf.data``.

:class:`RankingLauncher` trains under the configured strategy with either Keras ``fit``
(callbacks: ``ModelCheckpoint`` every N steps, ``BackupAndRestore`` for preemption,
``TensorBoard``, the best-epoch tracker) or the custom loop of :mod:`.loop` (``strategy.run`` inside
a ``tf.function`` looping ``steps_per_execution`` times; ``tf.train.CheckpointManager``, resume
from the latest checkpoint, TensorBoard scalars, early stopping). Only the chief writes to
``model_dir``; other workers write to a scratch directory (Keras 3 callbacks have no chief
logic). Then it exports the SavedModel (:mod:`.export`).

Run safety (docs/training.md, "Reruns, resumes, Ctrl-C and non-finite values"):
``<model_dir>/run_state.json`` and ``best.weights.h5`` (:mod:`.run_state`) keep the best epoch
across resumes, and a finished run is not trained again (``training.retrain`` starts over);
:mod:`.guard` stops at the first non-finite loss or metric, checks the final scores and
writes the export to a staging directory swapped in whole; :mod:`.interrupt` makes Ctrl-C
stop at a safe point.

Example:
    >>> hp = RankingHparams.load("train.yaml")                       # doctest: +SKIP
    >>> result = RankingLauncher(hp).run()                            # doctest: +SKIP
    >>> result.history["val_ndcg_10"][-1]                             # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import keras
import tensorflow as tf

from beam_prep.errors import BeamPrepError, InputError, SpecError
from beam_prep.ranking.feature_spec import ElwcFeatureSpec
from beam_prep.ranking.train import ema, guard, run_state
from beam_prep.ranking.train.encoded_input import build_layers, input_layers, serving_inputs
from beam_prep.ranking.train.epoch_log import EpochPrinter, keras_callback
from beam_prep.ranking.train.feed import STEPS_PER_EXECUTION_AUTO, resolve_steps_per_execution
from beam_prep.ranking.train.hparams import (
    DataHparams,
    RankingHparams,
    is_member_dir,
    member_dir,
)
from beam_prep.ranking.train.interrupt import InterruptHandler
from beam_prep.ranking.train.loop import CustomLoop, LoopSettings
from beam_prep.ranking.train.losses import get_loss
from beam_prep.ranking.train.lr_schedule import PlateauRule, RankingSchedule, make_schedule
from beam_prep.ranking.train.metrics import ranking_metrics
from beam_prep.ranking.train.model import RankingModelBuilder, compile_ranker
from beam_prep.ranking.train.optimizers import make_optimizer, tensorboard_available
from beam_prep.ranking.train.preprocessor import Preprocessor
from beam_prep.ranking.train.reader import ElwcParser, count_records, has_records
from beam_prep.ranking.train.scorers.ensemble import members_retrace_quietly, run_ensemble
from beam_prep.ranking.train.scorers.input_stats import model_parts
from beam_prep.ranking.train.strategy import (
    is_chief,
    make_strategy,
    resolve_loop,
    validate_tpu_settings,
)
from beam_prep.ranking.train.tf_feed import (
    MemoryDataset,
    spec_nbytes,
    training_lists,
    use_memory_cache,
)
from beam_prep.ranking.train.validation import Validation, model_scorer, validation_callback

ParseFn = Callable[[Any], tuple[dict[str, Any], Any]]


def default_parse_fn(spec: ElwcFeatureSpec, list_size: int) -> ParseFn:
    """The ELWC reader's batch parser: serialized ``[B]`` -> (features, labels ``[B, L]``).

    A :class:`beam_prep.ranking.train.reader.ElwcParser` (mask as int32; padded entries are
    also recognised by their label ``-1``): :meth:`DatasetBuilder.build` feeds it a seed per
    training batch and parses validation lists whole; the export parses requests whole.
    """
    return ElwcParser(spec, list_size, mask_dtype=tf.int32)


class DatasetBuilder:
    """Training / validation datasets of ``(preprocessed features, labels)``.

    Lists longer than ``data.list_size`` (with the default parser, an ``ElwcParser``):

    * training keeps a **seeded random subset** of each list: every batch gets a ``[2]``
      seed from ``tf.data.Dataset.random(seed)``, each list is shuffled with it before it is
      cut to ``list_size`` (TF Ranking's shuffle-then-truncate); a new subset each time the
      list is read, the same sequence for the same ``training.seed``;
    * validation (and the ``input_transform`` statistics) read **every document**
      (``full_valid_lists``, padded to a multiple of ``list_size``, so the metrics are those
      of the full lists, as served); with ``full_valid_lists=False`` (TPU: static shapes) a
      seeded random subset that is the same at every evaluation.

    A custom ``parse_fn`` is used as given (no seed, no change of length).

    Args:
        data: ``DataHparams``.
        preprocessor: Applied per batch in ``tf.data``.
        parse_fn: Batch parser (default: the ELWC reader for ``preprocessor.spec``).
        seed: Shuffle seed.
        full_valid_lists: Validate on whole lists (False: the seeded ``list_size`` subset).
    """

    def __init__(self, data: DataHparams, preprocessor: Preprocessor, *,
                 parse_fn: ParseFn | None = None, seed: int = 0,
                 full_valid_lists: bool = True) -> None:
        self.data = data
        self.preprocessor = preprocessor
        self.parse_fn = parse_fn or default_parse_fn(preprocessor.spec, data.list_size)
        self.seed = seed
        self.full_valid_lists = full_valid_lists

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

    def build(self, pattern: str, batch_size: int, *, training: bool,
              one_pass: bool = False) -> tf.data.Dataset:
        """Batched, parsed, preprocessed dataset; repeats forever when ``training``.

        Validation (``training=False``) takes every list exactly once: the last partial
        batch is kept and, with ``data.drop_remainder`` (static shapes, TPU), padded to
        ``batch_size`` with empty lists, whose entries are all padding (label ``-1``) and
        which :mod:`.validation` does not count.

        ``one_pass``: the training lists (parsed as for training) once each, in file order,
        the last batch partial (what a device-resident training set is built from).

        Raises:
            InputError: No file matches ``pattern``, or the files hold no record.
        """
        ds = tf.data.TFRecordDataset(self.nonempty_files(pattern))
        if training and self.data.shuffle_buffer and not one_pass:
            ds = ds.shuffle(self.data.shuffle_buffer, seed=self.seed,
                            reshuffle_each_iteration=True)
        if training and not one_pass:
            ds = ds.repeat()
        ds = ds.batch(batch_size, drop_remainder=training and not one_pass)
        # Static validation batches: the last one padded with empty lists (before the seeds
        # are zipped in, so the padding sees the serialized records alone).
        static = (self.data.drop_remainder or training) and not one_pass
        if static and not training:
            ds = ds.map(lambda s: tf.concat(
                [s, tf.fill([batch_size - tf.shape(s)[0]], "")], axis=0))
        pre = self.preprocessor
        parse = self.parse_fn
        if isinstance(parse, ElwcParser):  # seeded subsets / full lists (class docstring)
            if not training and self.full_valid_lists:
                parse = parse.full_lists(pad_multiple=self.data.list_size)
                pre = pre.with_list_size(None)
            else:
                seeds = tf.data.Dataset.random(seed=self.seed,
                                               rerandomize_each_iteration=training)
                ds = tf.data.Dataset.zip((ds, seeds.batch(2)))

        def fix(x: Any) -> Any:
            # Parsing loses the static batch size; TPUs need it back (drop_remainder holds).
            return tf.ensure_shape(x, [batch_size, *x.shape[1:]]) if static else x

        def transform(serialized: Any, *seed: Any) -> tuple[dict[str, Any], Any]:
            features, labels = parse(serialized, *seed)
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
        model: The trained Keras model (preprocessed features -> scores) holding the best
            epoch's weights; None when the run was already finished (nothing built).
        history: Metric name -> per-epoch values of this run (``loss``, ``val_ndcg_10``...).
        steps: Optimizer steps taken (including those restored from a checkpoint).
        seconds: Wall time of training.
        export_path: Where the export is (None if there is none).
        state: The run record after this run (:class:`.run_state.RunState`; None for an
            ensemble's averaged model).
        finished_before: The run was finished already: nothing was trained.
        exported: This run wrote the export (False: it was left unchanged).
    """

    model: keras.Model | None
    history: dict[str, list[float]]
    steps: int
    seconds: float
    export_path: str | None = None
    state: run_state.RunState | None = None
    finished_before: bool = False
    exported: bool = False


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
        interrupts: The installed Ctrl-C handler (``beam-prep train``; :mod:`.interrupt`):
            the loops stop at a safe point. Default: none (Python's own handling).
    """

    def __init__(self, hparams: RankingHparams, *, layers: Mapping[str, Any] | None = None,
                 vocab_rows: Mapping[str, int] | None = None, parse_fn: ParseFn | None = None,
                 strategy: tf.distribute.Strategy | None = None,
                 epoch_printer: EpochPrinter | None = None, verbose: int = 0,
                 interrupts: InterruptHandler | None = None) -> None:
        self.hp = hparams
        self.epoch_printer = epoch_printer
        self.verbose = verbose
        self.interrupts = interrupts
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
                            strategy=self.strategy, epoch_printer=epoch_printer, verbose=verbose,
                            interrupts=interrupts)
        self.datasets = DatasetBuilder(hparams.data, self.preprocessor, parse_fn=parse_fn,
                                       seed=hparams.training.seed,
                                       full_valid_lists=hparams.distribution.strategy != "tpu")
        # Eagerly, before any tf.data graph: state a layer makes when built (Normalization's
        # moments) must not belong to the first dataset's graph (validation, export). On
        # one-entry lists: state that takes the input's last axis (Normalization on a [B, L]
        # float) then broadcasts over lists of any length (validation on whole lists, serving).
        probe = self.datasets.parse_fn
        if isinstance(probe, ElwcParser):
            probe = dataclasses.replace(probe, list_size=1)
        build_layers(self.preprocessor, probe(tf.constant([b""]))[0])
        self.loop = resolve_loop(hparams.training.loop, hparams.distribution.strategy,
                                 hparams.training.fixed_steps_per_execution)
        self.chief = is_chief(self.strategy)
        self.jit_compile = hparams.distribution.strategy == "tpu"
        #: ``training.lr_schedule`` of this run (None: constant rate), made by :meth:`run`.
        self.schedule: RankingSchedule | None = None
        self._steps_per_epoch: int | None = None
        self._records: int | None = None
        self.device_cache_used: bool | None = None  #: ``data.device_cache`` used (fit_input)
        self.steps_per_execution_used = 1  #: train steps per ``fit`` call, set by build_model
        self.first_step = 0  #: the cached set's first step: the steps recorded before (_fit)

    def validate(self, element_spec: Any) -> None:
        """Strategy-specific checks (TPU: static shapes, batch divisibility, ...)."""
        if self.hp.distribution.strategy == "tpu":
            validate_tpu_settings(
                list_size=self.hp.data.list_size, drop_remainder=self.hp.data.drop_remainder,
                global_batch_size=self.hp.data.train_batch_size,
                num_replicas=self.strategy.num_replicas_in_sync,
                steps_per_execution=self.hp.training.fixed_steps_per_execution, loop=self.loop,
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
                self.steps_per_execution_used = self.fit_steps_per_execution()
                compile_ranker(model, hp.training, jit_compile=self.jit_compile,
                               schedule=self.schedule,
                               steps_per_execution=self.steps_per_execution_used)
        return model

    def _dir(self, sub: str) -> str:
        if self.chief:
            return os.path.join(self.hp.training.model_dir, sub)
        if getattr(self, "_scratch", None) is None:
            self._scratch = tempfile.mkdtemp(prefix="beam_prep_worker_")
        return os.path.join(self._scratch, sub)

    def run(self) -> TrainResult:
        """Trains (resuming if ``model_dir`` holds state), then exports if configured.

        A run that ``model_dir`` records as finished is not trained again: its export is
        left as it is (re-made from ``best.weights.h5`` only when it is missing).

        Raises:
            InputError: The training or validation files are missing or hold no record.
            NonFiniteError: A loss, metric or final score is not finite (nothing exported).
        """
        tr = self.hp.training
        state = self._begin()
        ensemble = self.hp.model.ensemble > 1
        finished = self._members_finished() if ensemble else state.is_finished(tr.epochs)
        if finished and tr.export_dir and self._export_is_current(state):
            return TrainResult(None, {}, 0, 0.0, self._export_path(), state,
                               finished_before=True)
        if self.chief:  # it writes: one line now rather than a traceback later
            run_state.check_model_dir(tr.model_dir)
        self.datasets.check_inputs()
        if ensemble:  # N members, one averaged model (scorers.ensemble)
            with members_retrace_quietly():
                element_spec = self.datasets.train_dataset().element_spec
                result = run_ensemble(self, TrainResult, element_spec)
                exported = self._export(result.model, element_spec, state) is not None
            return dataclasses.replace(result, state=state, export_path=self._export_path(),
                                       exported=exported, finished_before=finished)
        train_ds = self.datasets.train_dataset()
        valid_ds = self.datasets.valid_dataset()
        self.validate(train_ds.element_spec)
        # The schedule starts from the recorded plateau scale; its step is the optimizer's.
        self.schedule = make_schedule(tr, self.steps_per_epoch(), scale=state.lr_scale)
        model = self.build_model(train_ds.element_spec)
        tracker = run_state.EpochTracker(
            state, patience=tr.early_stopping_patience,
            save_best=lambda: run_state.save_weights_atomic(model, self._best_path()),
            store=lambda s: run_state.save_state(self._dir(""), s),
            plateau=self._plateau_rule())
        start = time.perf_counter()
        history: dict[str, list[float]] = {}
        steps = 0
        finished_before = state.is_finished(tr.epochs)
        if not finished_before:
            if self.epoch_printer is not None:
                self.epoch_printer.begin()
            safe_points: Any = contextlib.nullcontext()
            if self.interrupts is not None:  # Ctrl-C raises at the loops' safe points
                self.interrupts.epoch = state.epochs_done
                safe_points = self.interrupts.safe_points()
            try:
                with safe_points:
                    if self.loop == "fit":
                        history, steps = self._fit(model, train_ds, valid_ds, tracker)
                    else:
                        history, steps = self._custom(model, train_ds, valid_ds, tracker)
            except guard.Diverged as e:
                raise self._diverged(e) from e
        if self.interrupts is not None:
            self.interrupts.trained = True  # a Ctrl-C now must not name an epoch
        if not tracker.best_is_in_memory() and tf.io.gfile.exists(self._best_path()):
            run_state.load_weights_to_score(model, self._best_path())
        seconds = time.perf_counter() - start
        exported = False
        if not self._export_is_current(state):
            exported = self._export(model, train_ds.element_spec, state) is not None
        return TrainResult(model, history, steps, seconds, self._export_path(), state,
                           finished_before=finished_before, exported=exported)

    def _plateau_rule(self) -> PlateauRule | None:
        """``lr_schedule: plateau``'s rule, setting :attr:`schedule`'s scale (else None)."""
        tr = self.hp.training
        if tr.lr_schedule != "plateau" or self.schedule is None:
            return None
        return PlateauRule(tr.plateau_factor, tr.plateau_patience,
                           min_scale=tr.min_learning_rate / tr.learning_rate,
                           apply=self.schedule.set_scale)

    def _begin(self) -> run_state.RunState:
        """``training.retrain`` clears ``model_dir``; returns its recorded (or a new) state.

        Raises:
            SpecError: The run (or an ensemble member) trained epochs with other settings
                than now: those that shape the checkpoints
                (``RankingHparams.checkpoint_settings``), the loop, or the metric that
                chose its best epoch; or ``export_dir`` holds ``model_dir``.
            InputError: ``model_dir`` or ``export_dir`` cannot hold what the run writes.
        """
        tr = self.hp.training
        model_dir = self._dir("")
        if tr.export_dir:
            run_state.check_export_placement(tr.model_dir, tr.export_dir)
            if self.chief:
                guard.recover_export(tr.export_dir)
                guard.check_export_target(tr.export_dir)
        if tr.retrain and self.chief:  # members of any earlier ensemble size too
            run_state.check_model_dir(model_dir)
            run_state.clear_training_state(model_dir, run_state.member_dirs(model_dir))
        # Every worker reads the chief's record: they all take the same decisions.
        state = run_state.load_state(tr.model_dir)
        self._refuse_mixing(state, tr.model_dir)
        if self.chief and self.hp.model.ensemble == 1:  # one model, or a member
            self._refuse_lost_files(state, tr.model_dir)
        monitor = tr.early_stopping_metric if self.hp.data.valid_pattern else None
        settings = {**self.hp.checkpoint_settings(id_features=bool(self.preprocessor.id_rows)),
                    "training.loop": self.loop}
        self._refuse_changes(state, tr.model_dir, settings, monitor)
        if self.hp.model.ensemble > 1:
            for i in range(self.hp.model.ensemble):
                path = member_dir(tr.model_dir, i)
                self._refuse_changes(run_state.load_state(path), path, settings, monitor)
        if state is None:
            return run_state.RunState(epochs=tr.epochs, monitor=monitor, settings=settings)
        if not state.settings and state.epochs_done and not state.is_finished(tr.epochs):
            warnings.warn(  # nothing to compare with, and it resumes: say so
                f"{run_state.state_path(tr.model_dir)} records no settings (an older "
                "beam-prep wrote it, or it was edited), so a changed model or optimizer cannot "
                "be detected: this run resumes it as configured now (Keras starts a changed "
                "optimizer afresh). If a setting changed since it trained, stop and rerun "
                f"with the settings it was trained with, or {run_state.START_OVER}.",
                run_state.RecordWarning, stacklevel=2)
        state.epochs, state.monitor = tr.epochs, monitor
        if not state.is_finished(tr.epochs):  # it trains on: as configured now
            state.finished = state.stopped_early = False
            state.settings = settings
        return state

    def _refuse_lost_files(self, state: run_state.RunState | None, model_dir: str) -> None:
        """InputError when ``model_dir`` lost its record or its best epoch's weights.

        Without ``run_state.json`` the checkpoints would resume with no record of the epochs
        or the best one (a finished run then trains nothing and never records anything);
        without ``best.weights.h5`` the export would hold other weights than the recorded
        best epoch's (a finished run's untrained ones). Either is refused before anything
        runs, naming the folder to delete so that only it trains again.
        """
        gfile = tf.io.gfile
        member = is_member_dir(os.path.basename(model_dir.rstrip("/")))
        again = (f"Delete {model_dir} to train {'this member' if member else 'it'} again, or "
                 f"{run_state.START_OVER}.")
        if state is None:
            # A best epoch is saved with the record; step checkpoints of an unfinished first
            # epoch (a Ctrl-C) come before any record, and resume as they are.
            if gfile.exists(self._best_path()):
                raise InputError(
                    f"{model_dir} holds the checkpoints of trained epochs but no "
                    f"{run_state.STATE_FILE} (it was deleted), so its epochs and best epoch "
                    f"are unknown. {again}")
        elif state.epochs_done and not gfile.exists(self._best_path()):
            raise InputError(
                f"{self._best_path()} is missing: {run_state.STATE_FILE} records "
                f"{state.epochs_done} trained epoch(s), and the export would not hold the "
                f"recorded best epoch's weights. {again}")

    def _refuse_mixing(self, state: run_state.RunState | None, model_dir: str) -> None:
        """SpecError when ``model_dir`` holds one model and an ensemble is configured, or
        an ensemble's members and one model is: the two would share the record and the
        export (a rerun with the other size would serve the wrong model)."""
        ensemble = self.hp.model.ensemble
        if ensemble > 1 and state is not None and state.epochs_done > 0:
            held = f"one model trained {state.epochs_done} epoch(s)"
            fix = "model.ensemble=1"
        elif ensemble == 1 and (members := run_state.member_dirs(model_dir)):
            held = f"the members of an ensemble ({', '.join(members)})"
            # The size the export holds (a shrunk ensemble keeps its extra members' folders).
            exported = state.export.get("members") if state and state.export else None
            fix = f"model.ensemble={exported or len(members)}"
        else:
            return
        raise SpecError(
            f"{model_dir} holds {held}, and `model.ensemble: {ensemble}` cannot share its "
            f"folder. Rerun with {fix}, choose another training.model_dir, or "
            f"{run_state.START_OVER}.")

    @staticmethod
    def _refuse_changes(state: run_state.RunState | None, model_dir: str,
                        settings: Mapping[str, Any], monitor: str | None) -> None:
        """SpecError when ``state`` trained epochs with other ``settings`` or ``monitor``.

        Keras would fail on the checkpoints, or skip restoring the optimizer (its step,
        Adam's moments, the weight averages) with only a warning; another loop does not read
        the other's checkpoints; a best epoch chosen by another metric cannot be compared
        with this one's values. A finished run is checked too: its best weights are loaded
        (and exported) into the model now configured.
        """
        if state is None or state.epochs_done == 0:
            return
        changed = state.changed_settings(settings)
        if state.best is not None and state.monitor != monitor:
            changed.append(f"training.early_stopping_metric: {json.dumps(state.monitor)} when "
                           f"trained, {json.dumps(monitor)} now (null: no early stopping "
                           "metric or no data.valid_pattern)")
        if changed:
            done = state.epochs_done
            raise SpecError(
                f"The run in {model_dir} trained {done} epoch{'s' if done != 1 else ''} with "
                f"other settings, and a rerun cannot change them: {'; '.join(changed)}. Its "
                "checkpoints and best epoch would not carry over. Rerun with the settings it "
                f"was trained with, or {run_state.START_OVER}.")

    def _best_path(self) -> str:
        return os.path.join(self._dir(""), run_state.BEST_WEIGHTS)

    def _export_path(self) -> str | None:
        return self.hp.training.export_dir if self.chief else None

    def _members_finished(self) -> bool:
        """True when every ``model.ensemble`` member's record says it is finished."""
        for i in range(self.hp.model.ensemble):
            member = self.hp.member(i).training
            state = run_state.load_state(member.model_dir)
            if state is None or not state.is_finished(member.epochs):
                return False
        return True

    def _held_epoch(self, state: run_state.RunState) -> dict[str, Any] | None:
        """The epoch the export holds: the best (else last) one; None for an ensemble,
        whose members hold the epochs."""
        return state.best_or_last() if self.hp.model.ensemble == 1 else None

    def _export_is_current(self, state: run_state.RunState) -> bool:
        """True when no export is configured, or the export holds the state's best epoch
        (for an ensemble, whose record has no epoch: the mean of as many members as now)."""
        path = self.hp.training.export_dir
        if not path:
            return True
        held = state.export
        best = self._held_epoch(state)
        return (held is not None and held.get("path") == path
                and held.get("epoch") == (best["epoch"] if best else None)
                and held.get("members", 1) == self.hp.model.ensemble
                and tf.io.gfile.exists(os.path.join(path, "saved_model.pb")))

    def _validation(self) -> Validation:
        """The exact validation of ``val_loss`` and ``val_<metric>`` (:mod:`.validation`)."""
        tr = self.hp.training
        return Validation(get_loss(tr.loss, softmax_targets=tr.softmax_targets, reduction=None),
                          lambda: ranking_metrics(tr.metrics_k), steps=tr.validation_steps)

    def _export_record(self, state: run_state.RunState, model: keras.Model) -> dict[str, Any]:
        """What ``state.export`` will say the export of ``model`` holds: the best (or last)
        epoch and its metrics; for an ensemble (no epoch of its own) the averaged
        ``model``'s metrics on the validation lists (none without them)."""
        best = self._held_epoch(state)
        metrics = dict(best["metrics"]) if best else {}
        if best is None and self.hp.data.valid_pattern:
            metrics = self._validation().evaluate(model_scorer(model),
                                                  self.datasets.valid_dataset())
        return {"path": self._export_path(), "epoch": best["epoch"] if best else None,
                "metrics": metrics, "members": self.hp.model.ensemble}

    def _diverged(self, error: guard.Diverged) -> guard.NonFiniteError:
        """The one-line error for ``error``, naming the out-of-range feature when found."""
        hp, pre = self.hp, self.preprocessor
        limit = 100_000
        batches = self.datasets.build(hp.data.train_pattern, hp.data.train_batch_size,
                                      training=False)
        culprit = guard.find_out_of_range(batches.as_numpy_iterator(),
                                          [*pre.context_names, *pre.example_names],
                                          max_lists=limit)
        return guard.NonFiniteError(guard.diverged_message(
            error, culprit, transform=hp.model.resolved_input_transform,
            learning_rate=hp.training.learning_rate,
            lists_scanned=f"up to {limit:,} training lists"))

    def _export(self, model: keras.Model, element_spec: Any,
                state: run_state.RunState) -> str | None:
        """:meth:`export` if ``training.export_dir`` is set and this is the chief, else None;
        recorded in ``state`` (:meth:`_export_record`).

        The final model's scores on one validation batch (training batch without validation
        data) must be finite; the record is computed first (for an ensemble it scores the
        validation lists), then the SavedModel is written to ``<export_dir>.staging``,
        swapped in whole (:func:`.guard.write_staged`) and recorded at once.
        """
        path = self._export_path()
        if not path:
            return None
        if self.interrupts is not None:  # training is over: Ctrl-C now stops the export
            self.interrupts.exporting = True
        pattern = self.hp.data.valid_pattern or self.hp.data.train_pattern
        what = "a validation batch" if self.hp.data.valid_pattern else "a training batch"
        batches = self.datasets.build(pattern, self.hp.data.resolved_valid_batch_size,
                                      training=False)
        for features, labels in batches.take(1):
            guard.check_scores(model(features, training=False), labels, what=what)
        record = self._export_record(state, model)
        if self.interrupts is not None:
            self.interrupts.check()
        guard.write_staged(path, lambda staging: self.export(model, element_spec,
                                                             path=staging))
        state.export = record
        run_state.save_state(self._dir(""), state)
        return path

    def export(self, model: keras.Model, element_spec: Any, *, path: str | None = None) -> str:
        """Writes the SavedModel to ``path`` (default ``training.export_dir``); returns it."""
        from beam_prep.ranking.train.export import export_ranker

        pre, parse = serving_inputs(self)  # raw features in, even from encoded ELWC
        return export_ranker(model, pre, path or self.hp.training.export_dir, parse_fn=parse)

    def steps_per_epoch(self) -> int:
        """``training.steps_per_epoch``, or with ``auto`` one pass over the training lists:
        ``ceil(lists / train_batch_size)``, the lists counted once from the TFRecord framing.

        The training dataset repeats before it batches, so every step still gets a full
        batch (static shapes, ``drop_remainder``): the last step of a pass takes its missing
        lists from the next pass.
        """
        tr = self.hp.training
        if not tr.auto_steps_per_epoch:
            return int(tr.steps_per_epoch)  # type: ignore[arg-type]
        if self._steps_per_epoch is None:
            self._steps_per_epoch = max(1, math.ceil(self.train_records() /
                                                     self.hp.data.train_batch_size))
        return self._steps_per_epoch

    def train_records(self) -> int:
        """Training lists, counted once from the TFRecord framing."""
        if self._records is None:
            self._records = count_records(self.datasets.files(self.hp.data.train_pattern))
        return self._records

    def fit_steps_per_execution(self) -> int:
        """Steps per ``fit`` call on TensorFlow: ``training.steps_per_execution``, ``auto`` =
        :data:`.feed.STEPS_PER_EXECUTION_AUTO` with one replica (Keras ``fit`` refuses more
        with several), a divisor of the epoch (:func:`.feed.resolve_steps_per_execution`)."""
        auto = STEPS_PER_EXECUTION_AUTO if self.strategy.num_replicas_in_sync == 1 else 1
        return resolve_steps_per_execution(self.hp.training.steps_per_execution,
                                           self.steps_per_epoch(), auto=auto, divide=True)

    def _custom(self, model: keras.Model, train_ds: tf.data.Dataset,
                valid_ds: tf.data.Dataset | None,
                tracker: run_state.EpochTracker) -> tuple[dict[str, list[float]], int]:
        tr = self.hp.training
        settings = LoopSettings(
            epochs=tr.epochs, steps_per_epoch=self.steps_per_epoch(),
            global_batch_size=self.hp.data.train_batch_size,
            steps_per_execution=tr.fixed_steps_per_execution,
            checkpoint_every_steps=tr.checkpoint_every_steps,
            validation_steps=tr.validation_steps,
            early_stopping_metric=tr.early_stopping_metric,
            early_stopping_patience=tr.early_stopping_patience)
        with self.strategy.scope():
            loss = get_loss(tr.loss, softmax_targets=tr.softmax_targets, reduction=None)
        loop = CustomLoop(
            model, strategy=self.strategy,
            make_optimizer=lambda: make_optimizer(tr.optimizer, tr.learning_rate, self.schedule,
                                                  ema_momentum=tr.ema_momentum),
            loss=loss, make_metrics=lambda: ranking_metrics(tr.metrics_k), settings=settings,
            checkpoint_dir=self._dir("ckpt"),
            log_dir=self._dir("logs") if tensorboard_available() else None,
            on_epoch_end=self.epoch_printer, tracker=tracker, interrupts=self.interrupts)
        return loop.run(train_ds, valid_ds)

    def backend_callbacks(self) -> list[Any]:
        """Callbacks the backend adds to ``fit`` (none on TensorFlow)."""
        return []

    def fit_input(self, train_ds: tf.data.Dataset, model: keras.Model) -> Any:
        """What ``fit`` trains ``model`` on: the training set parsed once and gathered from
        host memory per step when ``data.device_cache`` says so (:mod:`.tf_feed`; ``auto``:
        at most 25% of the host's memory), else the stream itself."""
        data = self.hp.data
        size = spec_nbytes(train_ds.element_spec, self.train_records())
        self.device_cache_used = use_memory_cache(data.device_cache, size)
        if not self.device_cache_used:
            return train_ds
        return MemoryDataset(self.training_lists(), batch_size=data.train_batch_size,
                             seed=self.hp.training.seed, first_step=self.first_step).dataset()

    def training_lists(self) -> Any:
        """Every training list once, parsed as for training, in file order (numpy, axis 0)."""
        return training_lists(self.datasets.build(
            self.hp.data.train_pattern, self.hp.data.train_batch_size, training=True,
            one_pass=True))

    def _fit(self, model: keras.Model, train_ds: tf.data.Dataset,
             valid_ds: tf.data.Dataset | None,
             tracker: run_state.EpochTracker) -> tuple[dict[str, list[float]], int]:
        tr = self.hp.training
        self.first_step = tracker.state.epochs_done * self.steps_per_epoch()
        save_freq: Any = tr.checkpoint_every_steps or "epoch"
        # Weight averages in the model (training.ema_momentum) for the validation, the
        # finite guard and the best-epoch tracker, the trained weights back before the
        # checkpoints.
        enter_averages, leave_averages = ema.keras_callbacks()
        callbacks: list[Any] = [enter_averages]
        if valid_ds is not None:  # next: the callbacks below read its val_* values
            callbacks.append(validation_callback(self._validation(), valid_ds))
        # The finite guard next (it raises before a checkpoint of a failing step is
        # written), the best-epoch tracker before the checkpoints, Ctrl-C's check last.
        callbacks += [
            guard.keras_callback(),
            run_state.keras_callback(tracker),
            leave_averages,
            _BackupAndRestore(self._dir("backup"), save_freq=save_freq,
                              delete_checkpoint=False),
            keras.callbacks.ModelCheckpoint(
                os.path.join(self._dir("ckpt"), "ckpt-{epoch:04d}.weights.h5"),
                save_weights_only=True, save_freq=save_freq),
        ]
        if tensorboard_available():
            callbacks.append(keras.callbacks.TensorBoard(self._dir("logs"), update_freq="epoch",
                                                         write_graph=False))
        if self.epoch_printer is not None:
            callbacks.append(keras_callback(self.epoch_printer))
        if self.interrupts is not None:
            callbacks.append(self.interrupts.keras_callback())
        callbacks.extend(self.backend_callbacks())
        # shuffle=False: the dataset shuffles itself (DatasetBuilder.build); Keras ignores
        # `shuffle` for a tf.data.Dataset and warns when it is left at True. No
        # validation_data: Keras' evaluate is not exact (see .validation); the callback is.
        history = model.fit(self.fit_input(train_ds, model), epochs=tr.epochs,
                            steps_per_epoch=self.steps_per_epoch(),
                            callbacks=callbacks, verbose=self.verbose, shuffle=False)
        # With training.ema_momentum, fit itself leaves the averages in the model at its
        # end (Keras' finalize_variable_values): the last epoch as the tracker saw it.
        steps = int(model.optimizer.iterations.numpy())
        return {k: [float(v) for v in vs] for k, vs in history.history.items()}, steps


class _BackupAndRestore(keras.callbacks.BackupAndRestore):
    """Keras' preemption state; a backup that no longer fits the model is an InputError
    naming ``model_dir`` and the fix (Keras raises a ValueError listing the layers)."""

    def on_train_begin(self, logs: Any = None) -> None:  # noqa: D102
        try:
            super().on_train_begin(logs)
        except ValueError as e:
            raise run_state.restore_error(os.path.dirname(self.backup_dir), e) from e


def build_launcher(hparams: RankingHparams, **kwargs: Any) -> RankingLauncher:
    """Convenience constructor (same arguments as :class:`RankingLauncher`)."""
    return RankingLauncher(hparams, **kwargs)
