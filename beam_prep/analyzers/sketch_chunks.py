"""Feeds a quantile sketch in fixed-size chunks, whatever the reader's batch size.

tfx-bsl's ``QuantilesSketch`` compacts as values arrive, so what it holds depends on how the
values were cut into ``AddValues`` calls. Fed batch by batch, a split's sketch (and so the
quantile boundaries) changed with ``--batch_size``. :class:`ChunkedSketch` buffers a split's
values in arrival order and hands the sketch exactly :data:`CHUNK` values per call (the last
call of the split takes the rest), so the calls depend only on the split's values.

Example:
    >>> import numpy as np
    >>> from beam_prep.analyzers.numeric import new_sketch
    >>> a, b = ChunkedSketch(new_sketch(0.01)), ChunkedSketch(new_sketch(0.01))
    >>> x = np.arange(10.0)
    >>> a.add(x); b.add(x[:3]); b.add(x[3:])
    >>> a.finish() == b.finish()
    True
"""

from __future__ import annotations

import pickle
from collections.abc import Callable

import numpy as np
import pyarrow as pa

CHUNK = 16384
"""Values per ``AddValues`` call (128 KiB of float64 buffered per feature at most)."""


def _add_weighted(sketch, values: np.ndarray, weights: np.ndarray) -> None:
    order = np.lexsort((weights, values))
    sketch.AddValues(pa.array(values[order] + 0.0), pa.array(weights[order]))


class ChunkedSketch:
    """A sketch and the values not yet given to it.

    Args:
        sketch: A ``QuantilesSketch``.
        add: ``add(sketch, values)`` for unweighted chunks (e.g. sorted, with run counts);
            weighted chunks are sorted by (value, weight) and added with their weights.
    """

    def __init__(self, sketch, add: Callable | None = None) -> None:
        self.sketch = sketch
        self._add = add
        self._values: list[np.ndarray] = []
        self._weights: list[np.ndarray] = []
        self._size = 0

    def add(self, values: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Buffers float64 values (no NaN), with their weights when weighted."""
        if values.size == 0:
            return
        self._values.append(values)
        if weights is not None:
            self._weights.append(weights)
        self._size += values.size
        if self._size >= CHUNK:
            self._drain(final=False)

    def _drain(self, final: bool) -> None:
        values = np.concatenate(self._values)
        weights = np.concatenate(self._weights) if self._weights else None
        end = values.size if final else values.size - values.size % CHUNK
        for start in range(0, end, CHUNK):
            stop = min(start + CHUNK, end)
            self._feed(values[start:stop], None if weights is None else weights[start:stop])
        rest = values[end:]
        self._values = [rest] if rest.size else []
        self._weights = [weights[end:]] if weights is not None and rest.size else []
        self._size = rest.size

    def _feed(self, values: np.ndarray, weights: np.ndarray | None) -> None:
        if weights is not None:
            _add_weighted(self.sketch, values, weights)
        elif self._add is not None:
            self._add(self.sketch, values)
        else:
            self.sketch.AddValues(pa.array(np.sort(values) + 0.0))

    def finish(self) -> bytes:
        """Feeds what is buffered and returns the pickled sketch (the split's partial)."""
        if self._size:
            self._drain(final=True)
        return pickle.dumps(self.sketch)
