"""Instance weights (``weights:``): weighted vocabularies and weighted numeric statistics.

Modules: ``counts`` (exact, order-free weighted counts in vocabulary tables), ``split`` (a
weighted feature inside the per-split analysis), ``vocab`` (per-split counting, pruning, the
files), ``pipeline`` (the weighted vocabularies' part of the graph) and ``numeric`` (weighted
moments and quantile sketch).
"""
