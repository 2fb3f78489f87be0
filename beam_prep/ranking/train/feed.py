"""What the training feed decides the same way on every backend (numpy only: no TensorFlow,
no jax).

* **Pass order** of a cached training set (:func:`pass_order`, :func:`pass_orders`): each pass
  over the lists is a permutation seeded by ``(training.seed, pass)``; every list once per
  pass, the last ``lists % batch_size`` of the permutation left out of that pass (as
  ``drop_remainder``). The JAX device cache (:class:`.jax_feed.DeviceDataset`) and the
  TensorFlow memory cache (:class:`.tf_feed.MemoryDataset`) train on the same order.
* **Cache budget** (:func:`use_cache`): ``data.device_cache`` ``true`` / ``false`` / ``auto``
  (the preprocessed set at most :data:`CACHE_FRACTION` of the memory that would hold it).
* **Steps per execution** (:func:`resolve_steps_per_execution`): ``training.steps_per_execution``
  ``auto`` or an integer, bounded by the epoch; on TensorFlow ``fit`` a divisor of the epoch
  (Keras runs whole executions there).

Example:
    >>> pass_order(5, 2, seed=0, index=0).shape
    (2, 2)
    >>> resolve_steps_per_execution("auto", 100, auto=32, divide=True)
    25
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

CACHE_FRACTION = 0.25
"""``data.device_cache: auto`` caches the training set when it takes at most this fraction of
the memory that holds it (the accelerator's on JAX, the host's on TensorFlow)."""

STEPS_PER_EXECUTION_AUTO = 32
"""``training.steps_per_execution: auto`` where several steps per call pay (bounded by the
epoch)."""


def pass_order(n: int, batch_size: int, seed: int, index: int) -> np.ndarray:
    """``[steps, batch_size]`` list indices of pass ``index`` over ``n`` lists.

    A fresh permutation per pass, seeded by ``(seed, index)`` (the same run gives the same
    order); every list once per pass; the last ``n % batch_size`` of the permutation are left
    out (they come first in another pass), as ``drop_remainder`` does.
    """
    perm = np.random.default_rng([seed, index]).permutation(n)
    steps = n // batch_size
    return perm[:steps * batch_size].reshape(steps, batch_size).astype(np.int32)


def pass_orders(n: int, batch_size: int, seed: int, *, start: int = 0) -> Iterator[np.ndarray]:
    """Endless ``[batch_size]`` list indices, step after step, pass after pass (each in its
    own :func:`pass_order`), from step ``start`` of that sequence on (a resumed run goes on
    where the recorded epochs ended)."""
    index, skip = divmod(int(start), n // batch_size)
    while True:
        yield from pass_order(n, batch_size, seed, index)[skip:]
        index, skip = index + 1, 0


def count_lists(arrays: Iterable[Any], batch_size: int) -> int:
    """The number of lists every array of a cached training set holds (its first axis).

    Example:
        >>> count_lists([np.zeros((5, 2)), np.zeros(5)], 4)
        5

    Raises:
        ValueError: Arrays of different lengths, or fewer lists than ``batch_size``.
    """
    lengths = {len(x) for x in arrays}
    if len(lengths) != 1:
        raise ValueError(f"Every array needs the same number of lists. Received: {lengths}")
    lists = lengths.pop()
    if lists < batch_size:
        raise ValueError(f"The training set holds {lists} lists, fewer than "
                         f"batch_size={batch_size}; lower the batch size.")
    return lists


def host_memory_bytes() -> int | None:
    """Physical memory of this host (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def use_cache(setting: Any, nbytes: int, limit: int | None, *,
              fraction: float = CACHE_FRACTION) -> bool:
    """Whether the training set (``nbytes``) is cached.

    Args:
        setting: ``data.device_cache``: ``True``, ``False`` or ``"auto"`` (when ``nbytes`` is
            at most ``fraction`` of ``limit``; never when ``limit`` is None).
        nbytes: Size of the preprocessed training set.
        limit: Bytes of the memory that would hold it (None: unknown).
        fraction: ``auto``'s share of ``limit``.
    """
    if setting is True or setting is False:
        return setting
    return limit is not None and nbytes <= fraction * limit


def resolve_steps_per_execution(setting: Any, steps_per_epoch: int, *, auto: int,
                                divide: bool = False) -> int:
    """Train steps per call for ``training.steps_per_execution``.

    Args:
        setting: A positive integer, or ``"auto"`` (then ``auto``).
        steps_per_epoch: Steps of one epoch (an execution never spans two epochs).
        auto: What ``"auto"`` means on this backend and device.
        divide: The loop runs whole executions only (Keras ``fit`` on TensorFlow: an epoch
            of 10 steps at 4 per call would train 12): the largest divisor of
            ``steps_per_epoch`` not above the setting.
    """
    steps = max(1, min(int(auto if setting == "auto" else setting), int(steps_per_epoch)))
    while divide and steps_per_epoch % steps:
        steps -= 1
    return steps
