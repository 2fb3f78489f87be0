"""The ELWC data job: ranking logs -> ExampleListWithContext TFRecords (Beam, never TensorFlow).

Reads LETOR/LibSVM, CSV, JSONL and Parquet logs (``sources``, ``letor``), groups documents into
lists (``lists``, ``build``), encodes ELWC records with hand-written protobuf framing (``encode``,
``tfrecord``) and wires it all as Beam transforms (``transforms``: ``ConvertToELWC``,
``WriteELWC``).
It shares only :mod:`beam_prep.ranking.feature_spec` with the training side.
"""
