"""Files: reading inputs, the artifact contract, committing outputs.

* ``inputs``: input datasets to Arrow record batches and rejected rows;
* ``contract``: the artifact directory's layout, manifest check and checked file readers;
* ``commit``: output folders (staging, lock, the journalled last-step commit);
* ``filesystem`` (every path on any Beam filesystem), ``tfrecord_framing`` (TFRecord
  framing and CRC-32C, read and written) and ``line_bound`` (the longest line a reader
  accepts) are shared by all three.
"""
