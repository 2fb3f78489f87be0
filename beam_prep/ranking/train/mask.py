"""The list mask's feature key, shared by the reader and the scorers (no TensorFlow here).

``features[MASK_KEY]`` is ``[B, L]``: 1 (True) for a real list entry, 0 for padding.
"""

MASK_KEY = "__mask__"


def list_axis_features(example_names: tuple[str, ...], *, include_mask: bool) -> tuple[str, ...]:
    """The features whose axis 1 is the list axis: ``example_names`` (and the mask)."""
    return (*example_names, *((MASK_KEY,) if include_mask else ()))
