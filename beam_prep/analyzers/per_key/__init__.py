"""Per-key statistics of a numeric feature (``per_key:``).

Modules: ``stats`` (exact columnar per-key moments), ``pipeline`` (their combine and sorted
``per_key/<name>.jsonl``), ``runs`` (sorted runs merged into that file) and ``family`` (the
family object the analysis registers). Per-key bucket boundaries are a family of their
own, :mod:`beam_prep.analyzers.per_key_buckets`.
"""
