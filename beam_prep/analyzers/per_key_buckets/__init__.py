"""Per-key bucket boundaries of a numeric feature (``per_key`` with ``num_buckets``).

Modules: ``hist`` (bounded, exactly mergeable per-key histograms), ``pipeline`` (their
combine and ``per_key/<name>.buckets.jsonl``) and ``family`` (the family object the
analysis registers).
"""
