"""Hyper-parameters of the ranking launcher: frozen dataclasses loaded from YAML.

A training config has four sections, loaded by :func:`beam_prep.config.from_mapping`: unknown
keys are errors (with a "did you mean"), a key repeated in the YAML is an error, and every
message names the section, the field, the value received and what is allowed (the same shape
as the feature spec's: ```data```: ```list_size``` must be a positive integer. Received:
list_size=0)::

    data:                               # DataHparams
      feature_spec: elwc/feature_spec.json
      train_pattern: "elwc/train-*.tfrecord"
      valid_pattern: "elwc/valid-*.tfrecord"
      list_size: 32
      train_batch_size: 32
    model:                              # ModelHparams
      hidden_sizes: [64, 32]
    training:                           # TrainHparams
      loss: softmax
      model_dir: /tmp/ranker
    distribution:                       # DistributionHparams
      strategy: default

Overrides use dotted keys with YAML values: ``training.learning_rate=0.01``.

Example:
    >>> hp = RankingHparams.from_yaml_text('''
    ... data: {feature_spec: f.json, train_pattern: t, list_size: 8, train_batch_size: 4}
    ... training: {model_dir: /tmp/m, loss: list_mle}
    ... ''', overrides=["model.hidden_sizes=[16]"])
    >>> hp.model.hidden_sizes, hp.training.loss, hp.distribution.strategy
    ((16,), 'list_mle', 'default')
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from beam_prep.config import check_fields, check_keys, field_error, from_mapping, load_yaml
from beam_prep.errors import SpecError

Strategy = Literal["default", "mirrored", "multi_worker", "tpu", "data_parallel", "model_parallel"]
Backend = Literal["auto", "tensorflow", "jax"]
LossName = Literal["softmax", "approx_ndcg", "pairwise_logistic", "lambda_ndcg", "list_mle"]
OptimizerName = Literal["adam", "adagrad", "sgd"]
TrainingLoop = Literal["auto", "fit", "custom"]
Activation = Literal["relu", "gelu", "tanh", "swish"]
SoftmaxTargets = Literal["labels", "gains"]
ScorerName = Literal["dnn", "dasalc"]
InputTransform = Literal["auto", "none", "log1p", "piecewise_linear", "robust"]
LrSchedule = Literal["constant", "cosine", "plateau"]

STRATEGIES: tuple[str, ...] = get_args(Strategy)
#: ``training.export_dir`` when the config does not set it; ``{model_dir}`` is replaced by
#: ``training.model_dir``, so a new ``model_dir`` never overwrites an earlier run's export.
DEFAULT_EXPORT_DIR = "{model_dir}/export"
BACKENDS: tuple[str, ...] = get_args(Backend)
# Strategies of each Keras backend (``default`` = one device on either).
TF_STRATEGIES: tuple[str, ...] = ("default", "mirrored", "multi_worker", "tpu")
JAX_STRATEGIES: tuple[str, ...] = ("default", "data_parallel", "model_parallel")
LOSSES: tuple[str, ...] = get_args(LossName)
OPTIMIZERS: tuple[str, ...] = get_args(OptimizerName)
TRAINING_LOOPS: tuple[str, ...] = get_args(TrainingLoop)
ACTIVATIONS: tuple[str, ...] = get_args(Activation)
SOFTMAX_TARGETS: tuple[str, ...] = get_args(SoftmaxTargets)
SCORERS: tuple[str, ...] = get_args(ScorerName)
INPUT_TRANSFORMS: tuple[str, ...] = get_args(InputTransform)
LR_SCHEDULES: tuple[str, ...] = get_args(LrSchedule)


#: The most members ``model.ensemble`` trains. Each member is a whole training run, and
#: averaging stops paying after about 3 (BENCHMARKS.md §17); a larger value is a typo.
MAX_ENSEMBLE = 100


def _fail(section: str, field: str, value: Any, allowed: str) -> SpecError:
    return field_error(f"`{section}`", field, value, allowed)


def _int(section: str, field: str, value: Any, *, minimum: int = 1,
         maximum: int | None = None, optional: bool = False) -> None:
    if value is None and optional:
        return
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or (maximum is not None and value > maximum)):
        if maximum is not None:
            what = f"an integer from {minimum} to {maximum}"
        else:
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise _fail(section, field, value, what + (" or null" if optional else ""))


def _float(section: str, field: str, value: Any, *, low: float, high: float | None = None,
           low_inclusive: bool = True) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        ok = value >= low if low_inclusive else value > low
        ok = ok and (value < high if high is not None else value < float("inf"))
    if not ok:
        bound = f"{'>=' if low_inclusive else '>'} {low}"
        bound += f" and < {high}" if high is not None else " and finite"
        raise _fail(section, field, value, f"a number {bound}")


def _str(section: str, field: str, value: Any, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        raise _fail(section, field, value, "a non-empty string" + (" or null" if optional else ""))


@dataclasses.dataclass(frozen=True)
class DataHparams:
    """Where the ELWC data is and how it is batched.

    Attributes:
        feature_spec: Path of the ``feature_spec.json`` written by ``make-elwc``.
        train_pattern: Glob of training TFRecord files of serialized ELWC.
        valid_pattern: Glob of validation files (optional).
        list_size: Training examples per list: padded, or a seeded random subset of a longer
            list (fixed: static shapes); validation and serving read whole lists.
        train_batch_size: Global training batch size (lists per step, over all replicas).
        valid_batch_size: Global validation batch size.
        shuffle_buffer: Lists in the shuffle buffer (0 disables shuffling).
        drop_remainder: Drop the last partial batch (required on TPU).
        sequence_length: Length every variable-length feature (token lists) is padded or
            truncated to after preprocessing (static shapes).
        artifacts: Optional artifact directory whose vocabularies size the embedding tables;
            required (the same fingerprint) for ELWC written by ``make-elwc --artifacts``.
        device_cache: Parse and preprocess the training lists once and gather each batch
            from the cache (``true``), or stream them from ``tf.data`` (``false``), or
            ``auto``: cache when the set takes at most 25% of the memory that holds it. JAX:
            on the accelerator (never on CPU;
            :class:`~beam_prep.ranking.train.jax_feed.DeviceDataset`); TensorFlow ``fit``:
            in host memory (:class:`~beam_prep.ranking.train.tf_feed.MemoryDataset`).
    """

    feature_spec: str
    train_pattern: str
    list_size: int
    train_batch_size: int
    valid_pattern: str | None = None
    valid_batch_size: int | None = None
    shuffle_buffer: int = 1000
    drop_remainder: bool = True
    sequence_length: int = 16
    artifacts: str | None = None
    device_cache: bool | str = "auto"

    def validate(self) -> None:  # noqa: D102
        check_fields(self, where="`data`")
        if not (isinstance(self.device_cache, bool) or self.device_cache == "auto"):
            raise _fail("data", "device_cache", self.device_cache, "true, false or auto")
        _str("data", "feature_spec", self.feature_spec)
        _str("data", "train_pattern", self.train_pattern)
        _str("data", "valid_pattern", self.valid_pattern, optional=True)
        _str("data", "artifacts", self.artifacts, optional=True)
        _int("data", "list_size", self.list_size)
        _int("data", "train_batch_size", self.train_batch_size)
        _int("data", "valid_batch_size", self.valid_batch_size, optional=True)
        _int("data", "shuffle_buffer", self.shuffle_buffer, minimum=0)
        _int("data", "sequence_length", self.sequence_length)

    @property
    def resolved_valid_batch_size(self) -> int:
        """Validation batch size (defaults to the training one)."""
        return self.valid_batch_size or self.train_batch_size


@dataclasses.dataclass(frozen=True)
class ModelHparams:
    """The scorer: a feed-forward network applied to every example of a list.

    Attributes:
        scorer: ``dnn`` (the feed-forward network on each entry alone) or ``dasalc``
            (Qin et al. 2021: the same network, plus multi-head self-attention over the
            list's entries combined with it by a latent cross; see
            :mod:`beam_prep.ranking.train.scorers.dasalc`).
        input_transform: Transform of float features before the scorer: ``none``,
            ``log1p`` (``sign(x) log1p(|x|)``), ``piecewise_linear`` (Gorishniy et al. 2022,
            ``piecewise_bins`` quantile bins per value), ``robust`` (``(x - median) / IQR``)
            or ``auto`` (``log1p``, for every scorer: it maps every finite float32, up to
            3.4e38, into [-88.8, 88.8], so a huge value cannot overflow the network).
            Statistics are computed on the training lists only.
        piecewise_bins: Bins per value of ``piecewise_linear``.
        feature_embedding_dim: ``N > 0``: every float value, after ``input_transform``,
            goes through its own Dense(N) + ReLU before the scorer (Gorishniy et al. 2022;
            :mod:`beam_prep.ranking.train.scorers.feature_embedding`). 0 = off.
        feature_dropout: Probability of zeroing a whole float feature for a whole list while
            training (after its input transform and embedding;
            :mod:`beam_prep.ranking.train.scorers.feature_dropout`). 0 = off.
        attention_layers: Self-attention layers of ``dasalc``.
        attention_heads: Heads per self-attention layer.
        attention_dim: Width of the self-attention layers (and of the latent cross).
        input_noise: Standard deviation of the Gaussian noise added to the (batch
            normalised) inputs while training (``dasalc``; 0 disables it).
        ensemble: Models trained with seeds ``seed .. seed + ensemble - 1``; the export is
            one SavedModel whose score is the mean of their scores.
        hidden_sizes: Units of the hidden Dense layers, in order.
        activation: Activation of the hidden layers.
        dropout: Dropout rate after each hidden layer (0 disables it).
        batch_norm: Batch normalisation of the input and after each hidden layer.
        embedding_dim: Width of the embedding of every integer (id) feature.
        distributed_embedding_min_rows: Tables with at least this many rows are served by
            ``keras_rs.layers.DistributedEmbedding`` (TPU SparseCore when available, plain
            lookups elsewhere); smaller ones use ``keras.layers.Embedding``. 0 = always.
    """

    hidden_sizes: tuple[int, ...] = (64, 32)
    scorer: ScorerName = "dnn"
    input_transform: InputTransform = "auto"
    piecewise_bins: int = 8
    feature_embedding_dim: int = 0
    feature_dropout: float = 0.0
    attention_layers: int = 2
    attention_heads: int = 2
    attention_dim: int = 32
    input_noise: float = 0.1
    ensemble: int = 1
    activation: Activation = "relu"
    dropout: float = 0.0
    batch_norm: bool = False
    embedding_dim: int = 16
    distributed_embedding_min_rows: int = 100_000

    def validate(self) -> None:  # noqa: D102
        check_fields(self, where="`model`")
        if not isinstance(self.hidden_sizes, tuple) or not self.hidden_sizes:
            raise _fail("model", "hidden_sizes", self.hidden_sizes,
                        "a non-empty list of positive integers")
        for h in self.hidden_sizes:
            _int("model", "hidden_sizes", h)
        _float("model", "dropout", self.dropout, low=0.0, high=1.0)
        _int("model", "piecewise_bins", self.piecewise_bins)
        _int("model", "feature_embedding_dim", self.feature_embedding_dim, minimum=0)
        _float("model", "feature_dropout", self.feature_dropout, low=0.0, high=1.0)
        _int("model", "embedding_dim", self.embedding_dim)
        _int("model", "distributed_embedding_min_rows", self.distributed_embedding_min_rows,
             minimum=0)
        _int("model", "attention_layers", self.attention_layers, minimum=0)
        _int("model", "attention_heads", self.attention_heads)
        _int("model", "attention_dim", self.attention_dim)
        _float("model", "input_noise", self.input_noise, low=0.0)
        _int("model", "ensemble", self.ensemble, maximum=MAX_ENSEMBLE)
        if self.attention_dim % self.attention_heads:
            raise _fail("model", "attention_dim", self.attention_dim,
                        f"a multiple of attention_heads={self.attention_heads}")

    @property
    def resolved_input_transform(self) -> str:
        """``input_transform`` with ``auto`` resolved (``log1p``: finite for any float32)."""
        return "log1p" if self.input_transform == "auto" else self.input_transform


@dataclasses.dataclass(frozen=True)
class TrainHparams:
    """Optimisation, bookkeeping and export.

    Attributes:
        model_dir: Checkpoints (``ckpt/``), ``BackupAndRestore`` state (``backup/``) and
            TensorBoard logs (``logs/``) go here; training resumes from it.
        loss: ``softmax`` (listwise softmax cross-entropy), ``approx_ndcg``,
            ``pairwise_logistic``, ``lambda_ndcg`` (pairwise logistic weighted by each
            pair's NDCG change, LightGBM's ``lambdarank``) or ``list_mle``.
        softmax_targets: Target distribution of the ``softmax`` loss: ``labels`` (labels
            normalised per list, TF Ranking's) or ``gains`` (``2^label - 1`` normalised, the
            NDCG gain; better on the LETOR benchmark). Only with ``loss: softmax``.
        optimizer: ``adam``, ``adagrad`` or ``sgd``.
        learning_rate: Learning rate (the peak of a schedule).
        lr_schedule: ``constant``, ``cosine`` (from ``learning_rate`` after the warm-up down
            to ``min_learning_rate`` at the last step of the run, ``epochs`` x
            ``steps_per_epoch``) or ``plateau`` (multiplied by ``plateau_factor`` after
            ``plateau_patience`` epochs without a better ``early_stopping_metric``, never
            below ``min_learning_rate``); see :mod:`.lr_schedule`.
        ema_momentum: Weight averaging (null = off): the optimizer keeps ``average = m *
            average + (1 - m) * weight`` after every step, and validation, the best
            checkpoint and the export use the averages (:mod:`.ema`); e.g. 0.99.
        warmup_steps: Steps of linear warm-up from ``learning_rate / warmup_steps`` up to
            ``learning_rate`` (0 = none), with any ``lr_schedule``.
        warmup_epochs: The warm-up in epochs instead (``round(warmup_epochs x
            steps_per_epoch)`` steps); set one of the two.
        min_learning_rate: Floor of ``cosine`` and ``plateau`` (< ``learning_rate``).
        plateau_factor: ``plateau``: multiplier of the rate at each reduction (0 < f < 1).
        plateau_patience: ``plateau``: epochs without a better metric before a reduction
            (smaller than ``early_stopping_patience``, or training stops first).
        epochs: At most this many epochs: the budget; early stopping on the validation
            lists usually ends the run first.
        steps_per_epoch: Training steps per epoch: ``auto`` (default; null too) = one pass
            over the training lists, ``ceil(lists / train_batch_size)`` counted from the
            TFRecord framing, or a positive integer.
        validation_steps: Validation batches per evaluation (null = the whole set).
        steps_per_execution: Train steps per device call: a positive integer or ``auto``
            (the default). TensorFlow ``fit``: steps fused into one ``tf.function`` call, the
            largest divisor of ``steps_per_epoch`` up to the setting (``auto`` = 32 with one
            replica, 1 with several: values > 1 fail in Keras ``fit`` with more than one
            replica; the custom loop supports them, ``auto`` = 1 there). JAX on one
            process: steps run in one jitted ``lax.fori_loop`` (``auto`` = 32 on an
            accelerator, 1 on CPU; at most ``steps_per_epoch``), gathering from the training
            set on the device (``data.device_cache``) or, when it is streamed, from one
            superbatch of the execution's batches sent in one transfer; batch callbacks
            (finite check, Ctrl-C, per-step checkpoints) run once per execution.
        metrics_k: Cut-offs of NDCG@k and MRR@k.
        checkpoint_every_steps: Checkpoint period in steps (0 = once per epoch).
        early_stopping_metric: Validation metric watched by early stopping, e.g.
            ``val_ndcg_10`` (null disables early stopping).
        early_stopping_patience: Epochs without improvement before stopping.
        export_dir: Where the SavedModel is written after training (null = no export;
            default ``<model_dir>/export``: ``{model_dir}`` in the value is replaced by
            ``model_dir``). Written to ``<export_dir>.staging`` first and swapped in whole.
        retrain: Start over: delete the checkpoints, logs and run record in ``model_dir``
            (not the export, which is replaced when the new run ends) and train from
            scratch. Without it a finished run is not trained again (``beam-prep train
            --retrain`` sets it).
        loop: ``fit`` (Keras), ``custom`` (``strategy.run`` loop) or ``auto`` (custom for
            ``multi_worker``, where Keras ``fit`` cannot run; fit elsewhere).
        seed: Random seed (weights, shuffling, dropout).
    """

    model_dir: str
    loss: LossName = "softmax"
    softmax_targets: SoftmaxTargets = "labels"
    optimizer: OptimizerName = "adam"
    learning_rate: float = 0.001
    lr_schedule: LrSchedule = "constant"
    ema_momentum: float | None = None
    warmup_steps: int = 0
    warmup_epochs: float = 0.0
    min_learning_rate: float = 0.0
    plateau_factor: float = 0.5
    plateau_patience: int = 2
    epochs: int = 1
    steps_per_epoch: int | Literal["auto"] | None = "auto"
    validation_steps: int | None = None
    steps_per_execution: int | str = "auto"
    metrics_k: tuple[int, ...] = (5, 10)
    checkpoint_every_steps: int = 0
    early_stopping_metric: str | None = None
    early_stopping_patience: int = 3
    export_dir: str | None = DEFAULT_EXPORT_DIR
    loop: TrainingLoop = "auto"
    seed: int = 0
    retrain: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.export_dir, str) and isinstance(self.model_dir, str):
            object.__setattr__(self, "export_dir", self.export_dir.replace(
                "{model_dir}", self.model_dir.rstrip("/") or self.model_dir))

    @property
    def fixed_steps_per_execution(self) -> int:
        """``steps_per_execution`` as an integer where no device decides it (``auto`` = 1):
        the TensorFlow loops and ``compile``."""
        return 1 if self.steps_per_execution == "auto" else int(self.steps_per_execution)

    def validate(self) -> None:  # noqa: D102
        check_fields(self, where="`training`")
        _str("training", "model_dir", self.model_dir)
        if self.softmax_targets != "labels" and self.loss != "softmax":
            raise SpecError(f"`training.softmax_targets` only applies to `loss: softmax`. "
                            f"Received: softmax_targets={self.softmax_targets!r} with "
                            f"loss={self.loss!r}; set training.softmax_targets=labels (the "
                            "default) or use loss: softmax.")
        _float("training", "learning_rate", self.learning_rate, low=0.0, low_inclusive=False)
        if self.ema_momentum is not None:
            _float("training", "ema_momentum", self.ema_momentum, low=0.0, high=1.0,
                   low_inclusive=False)
        _int("training", "epochs", self.epochs)
        if self.steps_per_epoch not in ("auto", None):
            if isinstance(self.steps_per_epoch, bool) or not isinstance(
                    self.steps_per_epoch, int) or self.steps_per_epoch < 1:
                raise _fail("training", "steps_per_epoch", self.steps_per_epoch,
                            "a positive integer or auto (one pass over the training lists)")
        self._validate_schedule()
        _int("training", "validation_steps", self.validation_steps, optional=True)
        spe = self.steps_per_execution
        if spe != "auto" and (isinstance(spe, bool) or not isinstance(spe, int) or spe < 1):
            raise _fail("training", "steps_per_execution", spe, "a positive integer or auto")
        if not isinstance(self.metrics_k, tuple) or not self.metrics_k:
            raise _fail("training", "metrics_k", self.metrics_k,
                        "a non-empty list of positive integers")
        for k in self.metrics_k:
            _int("training", "metrics_k", k)
        _int("training", "checkpoint_every_steps", self.checkpoint_every_steps, minimum=0)
        _str("training", "early_stopping_metric", self.early_stopping_metric, optional=True)
        _int("training", "early_stopping_patience", self.early_stopping_patience)
        _str("training", "export_dir", self.export_dir, optional=True)
        _int("training", "seed", self.seed, minimum=0)

    def _validate_schedule(self) -> None:
        _int("training", "warmup_steps", self.warmup_steps, minimum=0)
        _float("training", "warmup_epochs", self.warmup_epochs, low=0.0)
        if self.warmup_steps and self.warmup_epochs:
            raise _fail("training", "warmup_epochs", self.warmup_epochs,
                        f"0 when warmup_steps is set (warmup_steps={self.warmup_steps}); "
                        "set one of the two")
        _float("training", "min_learning_rate", self.min_learning_rate, low=0.0,
               high=self.learning_rate)
        _float("training", "plateau_factor", self.plateau_factor, low=0.0, high=1.0,
               low_inclusive=False)
        _int("training", "plateau_patience", self.plateau_patience)
        if self.lr_schedule != "plateau":
            return
        if not self.early_stopping_metric:
            raise _fail("training", "lr_schedule", self.lr_schedule,
                        "constant or cosine without `early_stopping_metric` (plateau watches "
                        "that validation metric); set early_stopping_metric: val_ndcg_10")
        if self.plateau_patience >= self.early_stopping_patience:
            raise _fail("training", "plateau_patience", self.plateau_patience,
                        f"smaller than early_stopping_patience={self.early_stopping_patience}"
                        ", or training stops before the rate is reduced")

    @property
    def auto_steps_per_epoch(self) -> bool:
        """True when an epoch is one pass over the training lists (``auto`` or null)."""
        return self.steps_per_epoch in ("auto", None)


@dataclasses.dataclass(frozen=True)
class DistributionHparams:
    """Where the model trains.

    Attributes:
        strategy: ``default`` (one device), ``mirrored`` (all local devices),
            ``multi_worker`` (``TF_CONFIG``) or ``tpu``. Parameter-server training is not
            offered: Keras 3 ``fit`` does not support ``ParameterServerStrategy``.
        tpu: TPU name or ``grpc://`` address for ``TPUClusterResolver`` (``""`` = local).
        backend: Keras backend: ``tensorflow``, ``jax`` or ``auto`` (``KERAS_BACKEND``, else
            TensorFlow). On JAX the strategies are ``default``, ``data_parallel``
            (``keras.distribution.DataParallel``) and ``model_parallel`` (large embedding
            tables sharded by rows); see docs/training.md.
        model_parallel_size: Devices on the ``model`` axis of the ``model_parallel`` mesh
            (null = all devices); the batch is split over the other axis.
        multi_host: JAX only: call ``keras.distribution.initialize`` (``jax.distributed``)
            first; addresses come from the ``KERAS_DISTRIBUTION_*`` variables or, on Cloud
            TPU, from the TPU environment.
    """

    strategy: Strategy = "default"
    tpu: str = ""
    backend: Backend = "auto"
    model_parallel_size: int | None = None
    multi_host: bool = False

    def validate(self) -> None:  # noqa: D102
        check_fields(self, where="`distribution`")
        _int("distribution", "model_parallel_size", self.model_parallel_size, optional=True)
        if self.backend != "auto":
            check_backend_strategy(self.backend, self.strategy)


def check_backend_strategy(backend: str, strategy: str) -> None:
    """SpecError unless ``strategy`` runs on the Keras ``backend`` (see the tuples above)."""
    allowed = JAX_STRATEGIES if backend == "jax" else TF_STRATEGIES
    if strategy not in allowed:
        raise _fail("distribution", "strategy", strategy,
                    f"one of {', '.join(map(repr, allowed))} on the {backend} backend (set "
                    "`distribution.backend` or KERAS_BACKEND to match the strategy)")


SECTIONS: tuple[str, ...] = ("data", "model", "training", "distribution")


#: Settings that shape the checkpointed variables (with ``training.ema_momentum`` on or
#: off): :meth:`RankingHparams.checkpoint_settings`.
CHECKPOINT_SETTINGS = (
    "model.scorer", "model.hidden_sizes", "model.input_transform", "model.piecewise_bins",
    "model.feature_embedding_dim", "model.attention_layers", "model.attention_heads",
    "model.attention_dim", "model.batch_norm", "model.embedding_dim",
    "model.distributed_embedding_min_rows", "training.optimizer")


@dataclasses.dataclass(frozen=True)
class RankingHparams:
    """The whole training config.

    Attributes:
        data: Dataset hyper-parameters.
        model: Scorer hyper-parameters.
        training: Optimisation, bookkeeping and export.
        distribution: Strategy.
    """

    data: DataHparams
    training: TrainHparams
    model: ModelHparams = ModelHparams()
    distribution: DistributionHparams = DistributionHparams()

    def validate(self) -> None:  # noqa: D102
        if self.training.lr_schedule == "plateau" and not self.data.valid_pattern:
            raise _fail("training", "lr_schedule", "plateau",
                        "constant or cosine without `data.valid_pattern` (plateau watches a "
                        "validation metric); set data.valid_pattern")

    @classmethod
    def from_dict(cls, raw: Any, overrides: Sequence[str] = ()) -> RankingHparams:
        """Validates a parsed config; ``overrides`` are ``section.key=yaml_value`` strings."""
        if not isinstance(raw, Mapping):
            raise SpecError("A training config must be a mapping with `data` and `training`. "
                            f"Received: {type(raw).__name__}")
        raw = {k: dict(v) if isinstance(v, Mapping) else v for k, v in raw.items()}
        for item in overrides:
            key, sep, text = item.partition("=")
            section, dot, field = key.strip().partition(".")
            if not sep or not dot or not field:
                raise SpecError("Overrides look like `section.key=value`, e.g. "
                                f"`training.learning_rate=0.01`. Received: {item!r}")
            check_keys({section: {field: text}}, SECTIONS, f"Override {item!r}")
            sec = raw.setdefault(section, {})
            if sec is None:
                sec = raw[section] = {}
            if not isinstance(sec, dict):
                raise SpecError(f"`{section}` must be a mapping. Received: {section}={sec!r}")
            sec[field] = load_yaml(text, what=f"Override {item!r}")
        # An empty section (`model:` with nothing under it) means all defaults.
        raw = {k: {} if v is None and k in SECTIONS else v for k, v in raw.items()}
        return from_mapping(cls, raw)

    @classmethod
    def from_yaml_text(cls, text: str, overrides: Sequence[str] = (), *,
                       source: str | None = None) -> RankingHparams:
        """Parses YAML text (see :meth:`from_dict`); a key repeated in a mapping is an error.

        ``source``, the file the text came from, is named in a syntax error (``path:line:col``).
        """
        return cls.from_dict(load_yaml(text, what="The training config", source=source),
                             overrides)

    @classmethod
    def load(cls, path: str, overrides: Sequence[str] = ()) -> RankingHparams:
        """Reads a YAML config from any Beam filesystem path."""
        from beam_prep.io.filesystem import read_text

        return cls.from_yaml_text(read_text(path), overrides, source=path)

    def checkpoint_settings(self, *, id_features: bool = True) -> dict[str, Any]:
        """The settings that shape a run's checkpoints, which a resume must keep.

        The model's layers and sizes and the optimizer (:data:`CHECKPOINT_SETTINGS`), and
        whether weight averaging is on (its averages are optimizer variables). With one of
        them changed, Keras fails on the checkpoint or, for the optimizer, skips restoring
        it (its step, Adam's moments) with only a warning. ``run_state.json`` records them
        (JSON values: lists for tuples).

        Args:
            id_features: Whether the model embeds id features (``Preprocessor.id_rows``);
                without them the embedding settings shape nothing and are left out.

        Example:
            >>> hp = RankingHparams.from_dict({"data": {"feature_spec": "f",
            ...     "train_pattern": "t", "list_size": 2, "train_batch_size": 1},
            ...     "training": {"model_dir": "m"}})
            >>> hp.checkpoint_settings()["model.hidden_sizes"]
            [64, 32]
        """
        out: dict[str, Any] = {}
        for key in CHECKPOINT_SETTINGS:
            section, field = key.split(".")
            value = getattr(getattr(self, section), field)
            out[key] = list(value) if isinstance(value, tuple) else value
        out["model.input_transform"] = self.model.resolved_input_transform  # auto: log1p
        # Settings of a layer the model does not build shape nothing.
        if out["model.input_transform"] != "piecewise_linear":
            del out["model.piecewise_bins"]
        if self.model.scorer != "dasalc":
            for name in ("attention_layers", "attention_heads", "attention_dim"):
                del out[f"model.{name}"]
        if not id_features:
            for name in ("embedding_dim", "distributed_embedding_min_rows"):
                del out[f"model.{name}"]
        out["training.ema_momentum"] = "off" if self.training.ema_momentum is None else "on"
        return out

    def member(self, index: int) -> RankingHparams:
        """The config of ensemble member ``index``: seed + index, its own model_dir
        (:func:`member_dir`), one model, no export.

        Example:
            >>> hp = RankingHparams.from_dict({"data": {"feature_spec": "f",
            ...     "train_pattern": "t", "list_size": 2, "train_batch_size": 1},
            ...     "training": {"model_dir": "m", "seed": 7}, "model": {"ensemble": 3}})
            >>> member = hp.member(2)
            >>> member.training.model_dir, member.training.seed, member.model.ensemble
            ('m/member_2', 9, 1)
        """
        tr = dataclasses.replace(self.training, seed=self.training.seed + index,
                                 export_dir=None,
                                 model_dir=member_dir(self.training.model_dir, index))
        return dataclasses.replace(self, training=tr,
                                   model=dataclasses.replace(self.model, ensemble=1))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (lists for tuples), suitable for YAML/JSON."""
        def conv(v: Any) -> Any:
            return list(v) if isinstance(v, tuple) else v
        return {name: {k: conv(v) for k, v in dataclasses.asdict(getattr(self, name)).items()}
                for name in SECTIONS}


_MEMBER_DIR = re.compile(r"member_(\d+)")


def member_dir(model_dir: str, index: int) -> str:
    """``<model_dir>/member_<index>``: where ensemble member ``index`` trains.

    Example:
        >>> member_dir("out/ranker", 0)
        'out/ranker/member_0'
    """
    return os.path.join(model_dir, f"member_{index}")


def is_member_dir(name: str) -> bool:
    """Whether the folder name ``name`` is an ensemble member's (:func:`member_dir`).

    Example:
        >>> is_member_dir("member_12"), is_member_dir("member_x")
        (True, False)
    """
    return _MEMBER_DIR.fullmatch(name) is not None
