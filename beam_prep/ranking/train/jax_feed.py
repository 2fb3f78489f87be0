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

Several steps per call (``training.steps_per_execution``) run as one jitted
``lax.fori_loop`` program: :class:`DeviceLoop` gathers each step's batch from the
device-resident set (:class:`DeviceDataset`), :class:`StreamLoop` takes it from a
"superbatch", the execution's host batches stacked and sent in one ``device_put``.

Timing (for the benchmark and logs): ``host_seconds`` is the producer's time per batch (input,
conversion, transfer dispatch), ``wait_seconds`` the time the training loop waited for a batch.

Example:
    >>> feed = DevicePrefetcher(iter([{"x": np.ones((4, 2), "float32")}]), depth=2)
    >>> type(next(feed)["x"]).__name__
    'ArrayImpl'
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import keras
import numpy as np

from beam_prep.ranking.train.feed import (
    CACHE_FRACTION,
    STEPS_PER_EXECUTION_AUTO,
    count_lists,
    pass_orders,
    use_cache,
)
from beam_prep.ranking.train.feed import resolve_steps_per_execution as resolve_feed_steps

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
        sharding: Shape -> sharding of one array (default :func:`batch_sharding`); called on
            the producer thread under the ``keras.distribution`` of the constructing thread.

    Raises:
        Whatever ``batches`` raises, at the ``next()`` that would have returned that batch.
    """

    def __init__(self, batches: Iterator[Any], *, depth: int = 2,
                 sharding: Callable[[tuple[int, ...]], Any] | None = None) -> None:
        if depth < 1:
            raise ValueError(f"`depth` must be a positive integer. Received: depth={depth}")
        self._batches = batches
        self._sharding = sharding or batch_sharding
        # Keras keeps the distribution per thread: the producer places with the caller's.
        self._distribution = keras.distribution.distribution()
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
            keras.distribution.set_distribution(self._distribution)
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


def tree_nbytes(tree: Any) -> int:
    """Bytes of the arrays (or array specs: ``shape`` and ``dtype``) in ``tree``."""
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize
               for x in jax.tree_util.tree_leaves(tree))


def device_memory_bytes() -> int | None:
    """The first device's memory (``bytes_limit``); None on CPU or when the backend does not
    say (``auto`` then never caches)."""
    device = jax.devices()[0]
    if device.platform == "cpu":
        return None
    stats = getattr(device, "memory_stats", lambda: None)() or {}
    limit = stats.get("bytes_limit")
    return int(limit) if limit else None


def use_device_cache(setting: Any, nbytes: int, *, fraction: float = CACHE_FRACTION) -> bool:
    """Whether the training set (``nbytes``) is kept on the device: :func:`.feed.use_cache`
    against :func:`device_memory_bytes` (``auto`` never caches on CPU)."""
    return use_cache(setting, nbytes, device_memory_bytes(), fraction=fraction)


class DeviceDataset:
    """The whole (fixed-shape) training set on the device; each step gathers its batch there.

    The host arrays go to the device once, ``chunk_bytes`` at a time (one ``device_put`` of
    each leaf's chunk; a copy on each device of the batch's sharding when data-parallel).
    Each pass over the data is a seeded permutation of the lists (:func:`.feed.pass_order`); a
    step's batch is one jitted gather of its indices, placed with the batch's sharding, so
    the host does no copying per step. Passes follow each other without a break, so
    ``fit``'s ``steps_per_epoch`` may differ from a pass.

    Args:
        data: A pytree (e.g. ``(features, labels)``) of numpy arrays with the lists on axis 0.
        batch_size: Lists per step.
        seed: Seed of the per-pass permutations.
        chunk_bytes: Largest host chunk of one transfer.
        sharding: Shape -> sharding of one batch array (default :func:`batch_sharding`).
        first_step: Step of the order the batches start at (a resumed run's steps so far).

    Raises:
        ValueError: Fewer lists than ``batch_size``, or leaves of different lengths.
    """

    def __init__(self, data: Any, *, batch_size: int, seed: int = 0,
                 chunk_bytes: int = 64 << 20,
                 sharding: Callable[[tuple[int, ...]], Any] | None = None,
                 first_step: int = 0) -> None:
        leaves, self._treedef = jax.tree_util.tree_flatten(data)
        self.lists = count_lists(leaves, batch_size)
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.first_step = int(first_step)
        self.nbytes = tree_nbytes(leaves)
        shard = sharding or batch_sharding
        out = [shard((self.batch_size, *x.shape[1:])) for x in leaves]
        start = time.perf_counter()
        self._leaves = [_to_device(x, chunk_bytes, _replicated(s)) for x, s in zip(leaves, out)]
        jax.block_until_ready(self._leaves)
        self.transfer_seconds = time.perf_counter() - start
        self._take = jax.jit(lambda xs, idx: [jax.numpy.take(x, idx, axis=0) for x in xs],
                             out_shardings=out)

    @property
    def steps_per_pass(self) -> int:
        """Steps of one pass over the lists."""
        return self.lists // self.batch_size

    def batch(self, indices: np.ndarray) -> Any:
        """The lists at ``indices`` as one device-resident batch (same pytree as ``data``)."""
        return jax.tree_util.tree_unflatten(self._treedef, self._take(self._leaves, indices))

    def orders(self) -> Iterator[np.ndarray]:
        """Endless ``[batch_size]`` list indices of the steps: pass after pass, each in its
        own seeded order (:func:`.feed.pass_orders`; what :class:`DeviceLoop` trains on)."""
        return pass_orders(self.lists, self.batch_size, self.seed, start=self.first_step)

    def __iter__(self) -> Iterator[Any]:
        """Endless batches, in the order of :meth:`orders`."""
        for indices in self.orders():
            yield self.batch(indices)

    def generator(self) -> Iterator[Any]:
        """The batches as a generator (what Keras ``fit`` takes)."""
        yield from self


def _replicated(sharding: Any) -> Any:
    """A copy on every device of ``sharding`` (the batch's devices gather from their own)."""
    if isinstance(sharding, jax.sharding.NamedSharding):
        return jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec())
    return sharding


def _to_device(x: np.ndarray, chunk_bytes: int, placement: Any) -> Any:
    """``x`` placed with ``placement``, sent in chunks of at most ``chunk_bytes``."""
    row = max(x.nbytes // max(len(x), 1), 1)
    step = max(chunk_bytes // row, 1)
    parts = [jax.device_put(x[i:i + step], placement) for i in range(0, len(x), step)]
    return parts[0] if len(parts) == 1 else jax.numpy.concatenate(parts)


def resolve_steps_per_execution(setting: Any, steps_per_epoch: int) -> int:
    """Train steps per device program for ``training.steps_per_execution``: ``auto`` is
    :data:`.feed.STEPS_PER_EXECUTION_AUTO` on an accelerator, 1 on CPU (the step itself
    dominates there); at most ``steps_per_epoch`` (:func:`.feed.resolve_steps_per_execution`)."""
    auto = 1 if jax.devices()[0].platform == "cpu" else STEPS_PER_EXECUTION_AUTO
    return resolve_feed_steps(setting, steps_per_epoch, auto=auto)


class _FusedLoop:
    """Up to ``steps`` train steps of a Keras model in one jitted ``lax.fori_loop``: what
    ``fit`` runs as its ``train_function`` (:meth:`install`). Subclasses say where step ``i``'s
    batch comes from (:meth:`_inputs`, :meth:`_select`).

    Keras 3's JAX trainer runs ``steps_per_execution`` as a Python loop of jitted single steps,
    so every step still costs a Python dispatch. Here one program runs the steps of an
    execution and carries the state. The data sent to ``fit`` are one token per step
    (:meth:`data`); an execution pulls as many as are left of the epoch (at most ``steps``), so
    it never runs past ``steps_per_epoch`` and the steps are the ones single steps would take.
    Every execution calls the same compiled program (the step count is an argument, the
    inputs are padded to ``steps``): one compile per run. Keras calls the batch callbacks once
    per execution; the logs are the last step's. ``step_losses`` holds the logged loss of each
    step of the last execution (a device array, read only when needed).
    """

    def __init__(self, model: keras.Model, *, steps: int, steps_per_epoch: int) -> None:
        if steps < 1 or steps_per_epoch < 1:
            raise ValueError(f"`steps` and `steps_per_epoch` must be positive integers. "
                             f"Received: steps={steps}, steps_per_epoch={steps_per_epoch}")
        self.model = model
        self.steps, self.steps_per_epoch = int(steps), int(steps_per_epoch)
        self.step_in_epoch = 0
        self.step_losses: Any = None
        self.last_count = 0
        self.executions = 0
        self._program: Any = None
        self._state_shardings: Any = None
        self._treedef: Any = None

    # What a subclass provides.
    def _first_batch(self) -> Any:
        """One real training batch (``install`` builds the model on it)."""
        raise NotImplementedError

    def _batch_specs(self) -> list[jax.ShapeDtypeStruct]:
        """Shape and dtype of each leaf of one step's batch."""
        raise NotImplementedError

    def _inputs(self, iterator: Iterator[Any], count: int) -> Any:
        """The program's data for the next execution of ``count`` steps (pulls ``count``
        tokens from ``fit``'s ``iterator``)."""
        raise NotImplementedError

    def _select(self, inputs: Any, i: Any) -> list[Any]:
        """Traced: the leaves of step ``i``'s batch out of ``inputs``."""
        raise NotImplementedError

    def data(self) -> Iterator[tuple[np.ndarray]]:
        """What ``fit`` trains on: one ``(token,)`` per step."""
        raise NotImplementedError

    def install(self) -> None:
        """Makes this loop the model's ``fit`` train function (``steps_per_execution`` =
        ``steps``); builds the model's metrics and optimizer on one real batch first, as
        ``fit`` would (it must not peek at the tokens)."""
        model = self.model
        model._symbolic_build(data_batch=self._first_batch())
        if keras.distribution.distribution() is not None:  # fit purges the variables later
            self._state_shardings = model._get_state_sharding_spec()
        model.steps_per_execution = self.steps
        model.train_function = self

    def _build(self, state: Any) -> Any:
        model, specs = self.model, self._batch_specs()
        sharding = [batch_sharding(s.shape) for s in specs]
        constrain = keras.distribution.distribution() is not None

        def batch_at(inputs: Any, i: Any) -> Any:
            batch = self._select(inputs, i)
            if constrain:
                batch = [jax.lax.with_sharding_constraint(b, s) for b, s in zip(batch, sharding)]
            return jax.tree_util.tree_unflatten(self._treedef, batch)

        probe = jax.eval_shape(model.train_step, state,
                               jax.tree_util.tree_unflatten(self._treedef, specs))[0]

        def program(state: Any, inputs: Any, count: Any) -> Any:
            logs = jax.tree_util.tree_map(lambda s: jax.numpy.zeros(s.shape, s.dtype), probe)
            losses = jax.numpy.full((self.steps,), jax.numpy.nan, "float32")

            def body(i: Any, carry: Any) -> Any:
                state, _, losses = carry
                logs, state = model.train_step(state, batch_at(inputs, i))
                return state, logs, losses.at[i].set(logs["loss"].astype("float32"))

            state, logs, losses = jax.lax.fori_loop(0, count, body, (state, logs, losses))
            return logs, state, losses

        out = None
        if self._state_shardings is not None:  # as Keras' own step: outputs on the variables'
            out = (None, self._state_shardings, None)
        return jax.jit(program, donate_argnums=0, out_shardings=out)

    def __call__(self, state: Any, iterator: Iterator[Any]) -> tuple[Any, Any]:
        """One execution: ``fit``'s ``train_function(state, iterator)``."""
        count = min(self.steps, self.steps_per_epoch - self.step_in_epoch)
        inputs = self._inputs(iterator, count)
        if self._program is None:
            self._program = self._build(state)
        logs, state, self.step_losses = self._program(state, inputs, np.int32(count))
        self.step_in_epoch = (self.step_in_epoch + count) % self.steps_per_epoch
        self.last_count = count
        self.executions += 1
        return logs, state

    def compiles(self) -> int:
        """Compilations of the fused program so far (one per run expected)."""
        return self._program._cache_size() if self._program is not None else 0

    def first_nonfinite(self) -> int | None:
        """0-based index, within the last execution, of its first step whose logged loss is
        non-finite (None: all finite). Reads the losses back from the device."""
        if self.step_losses is None:
            return None
        losses = np.asarray(self.step_losses)[:self.last_count]
        bad = np.flatnonzero(~np.isfinite(losses))
        return int(bad[0]) if bad.size else None


class DeviceLoop(_FusedLoop):
    """``steps`` train steps per device program, gathering from a :class:`DeviceDataset`
    (see :class:`_FusedLoop` for the loop itself).

    Step ``i`` gathers its batch on the device (the lists at ``indices[i]``). The tokens sent
    to ``fit`` are the per-step list indices (:meth:`data`: the order of
    :meth:`DeviceDataset.orders`, the same as the dataset's own batches).

    Args:
        model: A compiled Keras model (JAX backend, ``jit_compile``).
        dataset: The device-resident training set.
        steps: Train steps per execution (>= 1).
        steps_per_epoch: ``fit``'s ``steps_per_epoch``.
    """

    def __init__(self, model: keras.Model, dataset: DeviceDataset, *, steps: int,
                 steps_per_epoch: int) -> None:
        super().__init__(model, steps=steps, steps_per_epoch=steps_per_epoch)
        self.dataset = dataset
        self._treedef = dataset._treedef

    def _first_batch(self) -> Any:
        return self.dataset.batch(np.arange(self.dataset.batch_size, dtype=np.int32))

    def _batch_specs(self) -> list[jax.ShapeDtypeStruct]:
        return [jax.ShapeDtypeStruct((self.dataset.batch_size, *x.shape[1:]), x.dtype)
                for x in self.dataset._leaves]

    def data(self) -> Iterator[tuple[np.ndarray]]:
        """``(indices,)`` per step, the dataset's own order."""
        for indices in self.dataset.orders():
            yield (indices,)

    def _inputs(self, iterator: Iterator[Any], count: int) -> Any:
        indices = [next(iterator)[0] for _ in range(count)]
        indices += [indices[-1]] * (self.steps - count)  # padding, never run
        return self.dataset._leaves, np.stack(indices)

    def _select(self, inputs: Any, i: Any) -> list[Any]:
        leaves, indices = inputs
        return [jax.numpy.take(x, indices[i], axis=0) for x in leaves]


def execution_sizes(steps: int, steps_per_epoch: int) -> Iterator[int]:
    """Endless steps of each execution: ``steps`` at a time, the last of each epoch shorter
    when ``steps`` does not divide ``steps_per_epoch`` (as :class:`_FusedLoop` runs them)."""
    whole, rest = divmod(int(steps_per_epoch), int(steps))
    epoch = [int(steps)] * whole + ([rest] if rest else [])
    while True:
        yield from epoch


def superbatches(batches: Iterator[Any], steps: int, sizes: Iterator[int]) -> Iterator[Any]:
    """Host batches stacked ``steps`` at a time: each leaf ``[steps, *batch_shape]``, the
    execution's batches first (``sizes``), zeros after them in a shorter execution (padding
    that the program never runs). Ends with ``batches`` (a partial last stack is dropped)."""
    for count in sizes:
        try:
            first = next(batches)
        except StopIteration:
            return
        leaves, treedef = jax.tree_util.tree_flatten(first)
        stack = [np.empty((steps, *np.shape(x)), np.asarray(x).dtype) for x in leaves]
        for i in range(count):
            if i:
                try:
                    leaves = treedef.flatten_up_to(next(batches))
                except StopIteration:
                    return
            for out, x in zip(stack, leaves):
                out[i] = x
        for out in stack:
            out[count:] = 0
        yield jax.tree_util.tree_unflatten(treedef, stack)


def stacked_sharding(shape: tuple[int, ...]) -> Any:
    """The sharding of a superbatch of ``shape`` ``[steps, *batch_shape]``: each batch
    placed as :func:`batch_sharding` places it (the steps axis not split)."""
    sharding = batch_sharding(tuple(shape[1:]))
    if isinstance(sharding, jax.sharding.NamedSharding):
        return jax.sharding.NamedSharding(
            sharding.mesh, jax.sharding.PartitionSpec(None, *sharding.spec))
    return sharding


class StreamLoop(_FusedLoop):
    """``steps`` train steps per device program over a streamed training set ("superbatches";
    see :class:`_FusedLoop` for the loop itself).

    A background thread (:class:`DevicePrefetcher`, ``depth=1``) stacks the host batches of
    one execution into one array per leaf (:func:`superbatches`, following the executions'
    sizes), puts each stack on the device in one ``device_put`` with the batch's sharding
    (:func:`stacked_sharding`) and prepares the next while the current one trains; step ``i``
    of the program takes batch ``i`` of the stack. An epoch whose steps ``steps`` does not
    divide ends with a shorter execution: its stack is padded with zeros to ``steps`` (one
    transfer of the padding per epoch) so that every execution runs the same compiled
    program. Up to three stacks are on the device at once (the one training, the one queued,
    the one the thread holds). The batches are trained in the stream's order, each once.

    Args:
        model: A compiled Keras model (JAX backend, ``jit_compile``).
        batches: Iterator of host batches (a pytree of numpy arrays per batch, static shapes,
            e.g. ``tf.data``'s ``as_numpy_iterator()``); at least one batch.
        steps: Train steps per execution (>= 1).
        steps_per_epoch: ``fit``'s ``steps_per_epoch``.

    Raises:
        ValueError: ``batches`` is empty, or ``steps`` / ``steps_per_epoch`` not positive.
    """

    def __init__(self, model: keras.Model, batches: Iterator[Any], *, steps: int,
                 steps_per_epoch: int) -> None:
        super().__init__(model, steps=steps, steps_per_epoch=steps_per_epoch)
        try:
            first = next(batches)
        except StopIteration:
            raise ValueError("The training stream holds no batch.") from None
        leaves, self._treedef = jax.tree_util.tree_flatten(first)
        self._specs = [jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype) for x in leaves]
        self._first = jax.device_put(first, jax.tree_util.tree_map(
            lambda x: batch_sharding(np.shape(x)), first))
        self.feed = DevicePrefetcher(
            superbatches(itertools.chain([first], batches), self.steps,
                         execution_sizes(self.steps, self.steps_per_epoch)),
            depth=1, sharding=stacked_sharding)
        self._token = (np.zeros((self._specs[0].shape[0],), np.int32),)

    def _first_batch(self) -> Any:
        first, self._first = self._first, None
        return first

    def _batch_specs(self) -> list[jax.ShapeDtypeStruct]:
        return self._specs

    def data(self) -> Iterator[tuple[np.ndarray]]:
        """A constant token per step (the batches come from :attr:`feed`); stops the thread
        when ``fit`` lets go of it."""
        try:
            while True:
                yield self._token
        finally:
            self.feed.close()

    def _inputs(self, iterator: Iterator[Any], count: int) -> Any:
        for _ in range(count):
            next(iterator)
        return jax.tree_util.tree_leaves(next(self.feed))

    def _select(self, inputs: Any, i: Any) -> list[Any]:
        return [jax.lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False) for x in inputs]
