"""``model.ensemble: N``: train N seeds, serve one model whose score is their mean.

Member ``i`` is the configured model trained with ``training.seed + i`` (weights, shuffling,
noise and dropout all change with it) in ``<model_dir>/member_<i>`` (``RankingHparams.member``);
the members share the preprocessor. :func:`average_model` wraps them into one ``keras.Model``
with the members' inputs and the mean of their ``[B, L]`` scores, which the launcher exports
like any model (same ``serving_default`` / ``score_examples`` signatures; one SavedModel).

Example:
    >>> model = average_model([m0, m1, m2], element_spec)        # doctest: +SKIP
    >>> model(features)  # == (m0(f) + m1(f) + m2(f)) / 3          # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import keras
from keras import ops

from beam_prep.codegen.keras_model import keras_model
from beam_prep.errors import SpecError

#: A member's model name ends in this tag and its index (unique in the averaged graph).
MEMBER_TAG = "__member_"

#: TensorFlow's warning when one Python function has been traced 5 times in a row.
RETRACING_WARNING = "triggered tf.function retracing"


class _DropRetracing(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return RETRACING_WARNING not in record.getMessage()


@contextlib.contextmanager
def members_retrace_quietly() -> Iterator[None]:
    """Within the block TensorFlow's "N out of the last N calls ... triggered tf.function
    retracing" warnings are not logged.

    Every member builds its own datasets (its seed shuffles them) and validation function
    around the shared preprocessor, so TensorFlow traces the same Python functions again for
    each member and, from the fifth trace on, warns about it: expected here, and nothing the
    user can change. Other TensorFlow warnings are kept.

    Example:
        >>> with members_retrace_quietly():
        ...     logging.getLogger("tensorflow").warning("5 out of the last 5 calls to f "
        ...                                             "triggered tf.function retracing.")
    """
    log, quiet = logging.getLogger("tensorflow"), _DropRetracing()
    log.addFilter(quiet)
    try:
        yield
    finally:
        log.removeFilter(quiet)


def average_model(members: Sequence[keras.Model], element_spec: Mapping[str, Any], *,
                  list_features: Sequence[str] = (),
                  name: str = "ranker_ensemble") -> keras.Model:
    """One model: the members' inputs -> mean of their scores.

    Args:
        members: The trained member models.
        element_spec: The preprocessed features' specs.
        list_features: Features whose list axis is left free (lists of any length, as the
            members take them; ``Preprocessor.list_features``).
        name: Model name.

    Raises:
        SpecError: No member.
    """
    from beam_prep.ranking.train.model import create_inputs

    if not members:
        raise SpecError("`model.ensemble` must be a positive integer. Received: 0 members")
    for i, m in enumerate(members):  # unique names: one functional graph holds them all
        m.name = f"{m.name.split(MEMBER_TAG)[0]}{MEMBER_TAG}{i}"
    inputs = create_inputs(element_spec, list_features=list_features)
    scores = [m(inputs) for m in members]
    out = scores[0] if len(scores) == 1 else ops.mean(ops.stack(scores, axis=0), axis=0)
    return keras_model(inputs, out, name)


def member_models(model: keras.Model) -> list[keras.Model]:
    """The members of an :func:`average_model`, in member order (``[]`` for one model).

    Example:
        >>> [m.name for m in member_models(average_model([m0, m1], spec))]  # doctest: +SKIP
        ['ranker__member_0', 'ranker__member_1']
    """
    members = [m for m in model.layers if MEMBER_TAG in m.name]
    return sorted(members, key=lambda m: int(m.name.rsplit(MEMBER_TAG, 1)[1]))


def merged_history(histories: Sequence[Mapping[str, list[float]]]) -> dict[str, list[float]]:
    """Member 0's history, plus every member's under ``member_<i>/<metric>``.

    Example:
        >>> merged_history([{"loss": [1.0]}, {"loss": [2.0]}])
        {'loss': [1.0], 'member_0/loss': [1.0], 'member_1/loss': [2.0]}
    """
    out = dict(histories[0])
    for i, h in enumerate(histories):
        out.update({f"member_{i}/{k}": list(v) for k, v in h.items()})
    return out


def run_ensemble(launcher: Any, result_cls: type, element_spec: Any) -> Any:
    """Trains ``model.ensemble`` members (seed + i, ``model_dir/member_<i>``) like ``launcher``.

    Args:
        launcher: The configured ``RankingLauncher`` (or the JAX one); each member is a
            launcher of its class, sharing its preprocessing layers, parser and strategy.
        result_cls: ``TrainResult`` (passed in: this module does not import the launcher).
        element_spec: The launcher's training dataset's ``element_spec`` (the averaged
            model's inputs are its features).

    Returns:
        A ``TrainResult`` of the averaged model (not exported: the launcher records its
        validation metrics first, then exports it), :func:`merged_history`, steps and
        seconds summed over the members.
    """
    hp = launcher.hp
    printer, interrupts = launcher.epoch_printer, launcher.interrupts
    results = []
    for i in range(hp.model.ensemble):
        label = f"member {i + 1}/{hp.model.ensemble}"
        if printer is not None:  # its epoch lines name the member
            printer.label = label
        if interrupts is not None:  # so does the line of a Ctrl-C
            interrupts.label, interrupts.epoch, interrupts.trained = label, None, False
        results.append(type(launcher)(hp.member(i), **launcher._shared).run())
    if printer is not None:
        printer.label = ""
    if interrupts is not None:  # every member trained: a Ctrl-C now names no epoch
        interrupts.label, interrupts.trained = "", True
    model = average_model([r.model for r in results], element_spec[0],
                          list_features=launcher.preprocessor.list_features)
    return result_cls(model, merged_history([r.history for r in results]),
                      sum(r.steps for r in results), sum(r.seconds for r in results), None)
