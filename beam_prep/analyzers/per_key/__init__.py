"""Per-key statistics and buckets of a numeric feature (``per_key:``, with ``num_buckets``).

Modules: ``stats`` (exact columnar per-key moments), ``pipeline`` (their combine and sorted
``per_key/<name>.jsonl``), ``runs`` (sorted runs merged into that file), ``hist`` (bounded,
exactly mergeable per-key histograms), ``buckets`` (their combine and ``.buckets.jsonl``),
``family`` and ``buckets_family`` (the two family objects the analysis registers).
"""
