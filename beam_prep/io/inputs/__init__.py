"""Reading input datasets: files on any Beam filesystem to Arrow record batches and rejected
rows (CSV, JSONL, Parquet, TFRecord of tf.Example), input globs, byte-range splits, content
identity.
"""
