"""Paths of the sample data bundled in the checkout (``examples/data/``, licences beside the files).

Example:
    >>> from tests.sample_data import LIGHTGBM
    >>> LIGHTGBM.endswith("letor/lightgbm/")
    True
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "examples" / "data"
LIGHTGBM = f"{DATA}/letor/lightgbm/"
TFRANKING = f"{DATA}/elwc/tfranking"
