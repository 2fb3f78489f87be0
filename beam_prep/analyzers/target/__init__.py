"""Target encoding (``target_encoding:``): per (token, fold) row counts and exact label sums.

Modules: ``stats`` (the per-split table and its exact merge), ``write`` (the
``vocab/<name>.target.jsonl`` file and the manifest entry), ``cache_file`` (a split's table
in the analysis cache) and ``family`` (the family object the analysis registers).
"""
