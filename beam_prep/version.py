"""The package version: the one place it is written (setup.py reads it from this file).

Example:
    >>> from beam_prep.version import __version__
    >>> __version__.count(".")
    2
"""

__version__ = "0.2.0"
