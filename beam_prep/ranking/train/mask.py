"""The list mask's feature key, shared by the reader and the scorers (no TensorFlow here).

``features[MASK_KEY]`` is ``[B, L]``: 1 (True) for a real list entry, 0 for padding.
"""

MASK_KEY = "__mask__"
