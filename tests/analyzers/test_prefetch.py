"""The read-ahead iterator of the split DoFn: order, errors, early close."""

from __future__ import annotations

import threading
import time

import pytest

from beam_prep.analyzers.split_fn import _prefetched


def test_items_arrive_in_order():
    assert list(_prefetched(iter(range(100)), depth=3)) == list(range(100))
    assert list(_prefetched(iter([]))) == []


def test_an_error_of_the_producer_reaches_the_consumer_after_the_items_before_it():
    def items():
        yield 1
        yield 2
        raise ValueError("bad record 3")

    got = []
    with pytest.raises(ValueError, match="bad record 3"):
        for x in _prefetched(items()):
            got.append(x)
    assert got == [1, 2]


def test_closing_early_stops_the_producer():
    produced = []

    def items():
        for i in range(1000):
            produced.append(i)
            yield i

    it = _prefetched(items(), depth=2)
    assert next(it) == 0
    it.close()
    time.sleep(0.3)
    assert len(produced) <= 5  # the producer stopped instead of reading everything
    assert not [t for t in threading.enumerate() if t.name == "beam_prep-read"]
