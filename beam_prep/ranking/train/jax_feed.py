"""Keeps the accelerator fed on JAX: host batches go to the device ahead of the step.

Keras ``fit`` on JAX moves each batch to the device leaf by leaf when the step asks for it
(under a ``keras.distribution``, one ``make_array_from_process_local_data`` per feature, and no
look-ahead at all on CPU), so a model with 137 inputs spends most of a GPU step copying.
:class:`DevicePrefetcher` does that work on a background thread instead: it pulls a host
batch (numpy arrays, e.g. ``tf.data``'s ``as_numpy_iterator()``), puts the whole batch on the
device in **one** ``jax.device_put`` with the batch's sharding, and keeps ``depth`` such batches
ready (double buffering with ``depth=2``). The training loop then receives arrays that already
sit where the step needs them; Keras' own ``device_put`` of an array already placed with that
sharding is a no-op.

Timing (for the benchmark and logs): ``host_seconds`` is the producer's time per batch (input,
conversion, transfer dispatch), ``wait_seconds`` the time the training loop waited for a batch.

Example:
    >>> feed = DevicePrefetcher(iter([{"x": np.ones((4, 2), "float32")}]), depth=2)
    >>> type(next(feed)["x"]).__name__
    'ArrayImpl'
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import keras
import numpy as np  # noqa: F401  (doctest)

_END = object()


def batch_sharding(shape: tuple[int, ...]) -> Any:
    """The sharding Keras gives a batch of ``shape``: the distribution's data layout, or the
    first device when no ``keras.distribution`` is set."""
    dist = keras.distribution.distribution()
    if dist is None:
        return jax.sharding.SingleDeviceSharding(jax.devices()[0])
    return dist.get_data_layout(shape).backend_layout


class DevicePrefetcher:
    """Iterator of device-resident batches, ``depth`` batches ahead of the consumer.

    Args:
        batches: Iterator of host batches (a pytree of numpy arrays per batch).
        depth: Batches kept on the device ahead of the step (2 = double buffering).
        sharding: Shape -> sharding of one array (default :func:`batch_sharding`).

    Raises:
        Whatever ``batches`` raises, at the ``next()`` that would have returned that batch.
    """

    def __init__(self, batches: Iterator[Any], *, depth: int = 2,
                 sharding: Callable[[tuple[int, ...]], Any] | None = None) -> None:
        if depth < 1:
            raise ValueError(f"`depth` must be a positive integer. Received: depth={depth}")
        self._batches = batches
        self._sharding = sharding or batch_sharding
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self.host_seconds = 0.0
        self.wait_seconds = 0.0
        self.produced = 0
        self.consumed = 0
        self._thread = threading.Thread(target=self._produce, name="device-prefetch",
                                        daemon=True)
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        shardings: Any = None
        try:
            while not self._stop.is_set():
                start = time.perf_counter()
                try:
                    batch = next(self._batches)
                except StopIteration:
                    break
                if shardings is None:  # same shapes every batch (static shapes)
                    shardings = jax.tree_util.tree_map(lambda x: self._sharding(x.shape), batch)
                batch = jax.device_put(batch, shardings)
                self.host_seconds += time.perf_counter() - start
                self.produced += 1
                if not self._put(batch):
                    return
        except BaseException as e:  # noqa: BLE001 (re-raised in the consumer)
            self._put(e)
            return
        self._put(_END)

    def __iter__(self) -> DevicePrefetcher:
        return self

    def __next__(self) -> Any:
        start = time.perf_counter()
        item = self._queue.get()
        self.wait_seconds += time.perf_counter() - start
        if item is _END:
            self._queue.put(_END)  # later calls stop too
            raise StopIteration
        if isinstance(item, BaseException):
            self._queue.put(_END)
            raise item
        self.consumed += 1
        return item

    def generator(self) -> Iterator[Any]:
        """The batches as a generator (what Keras ``fit`` takes); closes the thread at its end."""
        try:
            yield from self
        finally:
            self.close()

    def close(self) -> None:
        """Stops the producer thread (batches already on the device are dropped)."""
        self._stop.set()
        self._thread.join(timeout=5)

    def __del__(self) -> None:
        self._stop.set()
