"""Label-aware vocabularies (``labels:``): tokens ranked by mutual information with a label.

Modules: ``counts`` (per (token, label) row counts and their combine), ``mutual_info`` (TFT's
score of each token), ``vocab`` (counts in, MI-ranked vocabulary files out) and ``family``
(the family object the analysis registers).
"""
