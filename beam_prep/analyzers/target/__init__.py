"""Target encoding (``target_encoding:``): per (token, fold) row counts and exact label sums.

Modules: ``stats`` (the per-split table and its exact merge) and ``write`` (the
``vocab/<name>.target.jsonl`` file and the manifest entry). Cache entries: ``cache.target``.
"""
