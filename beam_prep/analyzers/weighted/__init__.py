"""Instance weights (``weights:``): the weighted vocabularies' exact finish.

Weights are an optional input of the trunk's accumulators: the vocabulary accumulator
counts (token, weight) pairs as exact integer limb sums per weight band
(:mod:`~beam_prep.analyzers.vocab.weights`) and the numeric accumulator keeps
:mod:`~beam_prep.analyzers.weighted_moments` and a weighted sketch. What is weighted-only
comes after the keyed combine: ``pipeline`` (a partition's bands read back as one float64
count per token, then pruned and merged into the files) and ``vocab`` (pruning with a
weighted ``min_count``, the files, exact kept and dropped totals).
"""
