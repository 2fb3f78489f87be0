"""Exception hierarchy: one root, subclasses that also inherit the builtin they refine.

Messages follow one shape: what is wrong, the offending value, and how to fix it.

Example:
    >>> from beam_prep.errors import SpecError
    >>> raise SpecError("`top_k` must be positive. Received: top_k=0 (feature 'country')")
    Traceback (most recent call last):
    ...
    beam_prep.errors.SpecError: `top_k` must be positive. Received: top_k=0 (feature 'country')
"""

from __future__ import annotations

import warnings


class BeamPrepError(Exception):
    """Root of every error raised on purpose by beam_prep."""


class NoticeWarning(UserWarning):
    """Something the user should know that does not stop the job (a setting that does
    nothing here, a record that cannot be fully checked); the command-line tools print it
    as one ``beam-prep <command>: warning: ...`` line."""


_NOTICED: set[str] = set()


def notice(message: str) -> None:
    """Warns ``NoticeWarning(message)`` the first time this process gives that message.

    Python's own once-per-location filter does not hold: every ``warnings.catch_warnings``
    block (Keras opens many) resets it, so a notice raised once per ensemble member would
    print once per member.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as shown:
        ...     warnings.simplefilter("always")
        ...     notice("model_parallel has nothing to shard")
        ...     notice("model_parallel has nothing to shard")
        >>> len(shown)
        1
    """
    if message not in _NOTICED:
        _NOTICED.add(message)
        warnings.warn(message, NoticeWarning, stacklevel=3)


class SpecError(BeamPrepError, ValueError):
    """The feature spec (or another configuration) is invalid."""


class InputError(BeamPrepError, ValueError):
    """The input data cannot be used (missing files, missing columns, too many bad rows)."""


class ArtifactError(BeamPrepError, OSError):
    """An artifact directory is missing, incomplete, corrupt or would be overwritten."""
