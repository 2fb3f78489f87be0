"""The training set parsed once and kept in host memory, for ``data.device_cache``.

The streamed feed (:meth:`.launcher.DatasetBuilder.build`) reads, parses and preprocesses every
training batch again at every step: on a CPU host that work competes with the step for the
same cores (BENCHMARKS.md §15). With the cache the training lists are parsed and preprocessed
once (:func:`training_lists`, as for training, in file order) and each step only gathers its
batch from memory:

* TensorFlow backend: :class:`MemoryDataset`, a ``tf.data`` pipeline of the pass orders
  (:func:`.feed.pass_orders`) mapped to one ``tf.gather`` per input, prefetched; the same
  order as the JAX device cache for the same seed.
* JAX backend: the same lists go to the accelerator once (:class:`.jax_feed.DeviceDataset`).

Example:
    >>> data = ({"x": np.arange(12, dtype="float32").reshape(6, 2)}, np.zeros((6, 2)))
    >>> feats, labels = next(iter(MemoryDataset(data, batch_size=4, seed=0).dataset()))
    >>> tuple(feats["x"].shape)
    (4, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from beam_prep.ranking.train.feed import count_lists, host_memory_bytes, pass_orders, use_cache


def spec_nbytes(element_spec: Any, lists: int) -> int:
    """Bytes of ``lists`` lists of a batched dataset's ``element_spec`` (axis 0 = batch)."""
    return lists * sum(int(np.prod(s.shape[1:])) * s.dtype.size
                       for s in tf.nest.flatten(element_spec))


def use_memory_cache(setting: Any, nbytes: int) -> bool:
    """``data.device_cache`` on TensorFlow: ``auto`` caches when the set takes at most
    :data:`.feed.CACHE_FRACTION` of the host's memory (:func:`.feed.use_cache`)."""
    return use_cache(setting, nbytes, host_memory_bytes())


def training_lists(one_pass: tf.data.Dataset) -> Any:
    """``(features, labels)`` of every list of ``one_pass`` (batches of the training lists,
    each once), as numpy arrays with the lists on axis 0."""
    batches = list(one_pass.as_numpy_iterator())
    return tf.nest.map_structure(lambda *xs: np.concatenate(xs), *batches)


class MemoryDataset:
    """The training set in host memory; each step gathers its batch there.

    Args:
        data: A nest (e.g. ``(features, labels)``) of numpy arrays with the lists on axis 0.
        batch_size: Lists per step.
        seed: Seed of the per-pass permutations (:func:`.feed.pass_order`).
        first_step: Step of the order the dataset starts at (a resumed run's steps so far).

    Raises:
        ValueError: Fewer lists than ``batch_size``, or arrays of different lengths.
    """

    def __init__(self, data: Any, *, batch_size: int, seed: int = 0,
                 first_step: int = 0) -> None:
        flat = tf.nest.flatten(data)
        self.lists = count_lists(flat, batch_size)
        self.batch_size, self.seed, self.first_step = int(batch_size), int(seed), first_step
        self.nbytes = sum(x.nbytes for x in flat)
        self._structure = data
        with tf.device("/CPU:0"):  # tf.data runs on the host
            self._tensors = [tf.constant(x) for x in flat]

    @property
    def steps_per_pass(self) -> int:
        """Steps of one pass over the lists."""
        return self.lists // self.batch_size

    def dataset(self) -> tf.data.Dataset:
        """Endless batches: the lists of each step's :func:`.feed.pass_orders` row gathered
        from memory (static batch shapes), prefetched."""
        lists, size, seed, start = self.lists, self.batch_size, self.seed, self.first_step
        orders = tf.data.Dataset.from_generator(
            lambda: pass_orders(lists, size, seed, start=start),
            output_signature=tf.TensorSpec([size], tf.int32))
        tensors, structure = self._tensors, self._structure

        def gather(indices: Any) -> Any:
            return tf.nest.pack_sequence_as(structure,
                                            [tf.gather(t, indices) for t in tensors])

        ds = orders.map(gather, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)
