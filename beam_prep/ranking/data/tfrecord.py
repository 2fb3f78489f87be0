"""The TFRecord writer of the ELWC job: :mod:`beam_prep.io.tfrecord_framing` under its old names.

The format (CRC-32C, framing, the writer and the reader) is defined once, in
:mod:`beam_prep.io.tfrecord_framing`; this module keeps the import path
``beam_prep.ranking.data.tfrecord`` (and the deprecated ``beam_prep.ranking.tfrecord``)
working. ``frame`` here is the writer of one record (:func:`~beam_prep.io.tfrecord_framing.
frame_record`), not the reader :func:`beam_prep.io.tfrecord_framing.frame`.

Example:
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
    >>> write_tfrecords(p, [b"a", b"bc"])
    2
    >>> os.path.getsize(p) == len(frame(b"a") + frame(b"bc"))
    True
"""

from __future__ import annotations

from beam_prep.io.tfrecord_framing import frame_record as frame
from beam_prep.io.tfrecord_framing import masked_crc32c, write_tfrecords

__all__ = ["frame", "masked_crc32c", "write_tfrecords"]
