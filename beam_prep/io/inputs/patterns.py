"""Input globs → files, with listing failures as one clear line.

Example:
    >>> expand_patterns(["data/*.csv"])                             # doctest: +SKIP
    ['data/a.csv', 'data/b.csv']
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import InputError

__all__ = ["distinct_files", "expand_patterns", "one_line", "storage_errors"]


def one_line(error: BaseException, limit: int = 300) -> str:
    """The innermost useful cause of ``error`` as one short line (Beam's BeamIOError
    wraps the filesystem's exception per path in ``exception_details``).

    Example:
        >>> one_line(ValueError("no bucket\\nstack..."))
        'ValueError: no bucket'
    """
    details = getattr(error, "exception_details", None)
    if isinstance(details, dict) and details:
        inner = next(iter(details.values()))
        if isinstance(inner, BaseException):
            error = inner
    text = (str(error).strip().splitlines() or [""])[0]
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line if len(line) <= limit else line[:limit] + "…"


def expand_patterns(patterns: Sequence[str]) -> list[str]:
    """Sorted distinct files matching the globs (a local file matched under two spellings
    is listed once).

    Raises:
        InputError: A pattern matches nothing, or it cannot be listed (unknown scheme,
            missing bucket, no permission): one line naming the pattern and the cause.
    """
    paths: set[str] = set()
    for pattern in patterns:
        # Beam's local filesystem lists the folder of a glob; a bare ``day*.csv`` has none
        # (its folder is ''), so it matched nothing while ``./day*.csv`` worked.
        bare = (FileSystems.get_scheme(pattern) is None and not os.path.dirname(pattern)
                and any(c in pattern for c in "*?["))
        try:
            matched = FileSystems.match([f".{os.sep}{pattern}" if bare else pattern]
                                        )[0].metadata_list
        except Exception as e:  # BeamIOError, ValueError (scheme), HTTP errors of gcsio
            raise InputError(
                f"Cannot list the input files of --input {pattern!r}: {one_line(e)}. Check "
                "the scheme and bucket name, that the bucket exists, and that these "
                "credentials may list it (e.g. roles/storage.objectViewer).") from e
        folders = [m.path for m in matched if os.path.isdir(m.path)
                   and FileSystems.get_scheme(m.path) is None]
        if folders:
            raise InputError(f"--input {pattern!r} names the folder {folders[0]!r}, not files. "
                             f"Pass a glob of its files, e.g. --input "
                             f"'{folders[0].rstrip('/')}/*.csv'.")
        found = [m.path for m in matched if not m.path.endswith("/")]
        if bare:  # name the files as the pattern did, without the ./ added above
            found = [f[2:] if f.startswith(f".{os.sep}") else f for f in found]
        if not found:
            raise InputError(f"No input file matches {pattern!r}. Check the --input glob.")
        paths.update(found)
    return distinct_files(paths)


def distinct_files(paths: Iterable[str]) -> list[str]:
    """Sorted paths, one per file: two spellings of one local file (``d.csv`` matched by
    ``d*.csv`` and ``./d.csv``, an absolute path, a symlink or hard link) would read its rows
    twice; the first spelling in sorted order is kept."""
    seen: set[object] = set()
    out = []
    for path in sorted(paths):
        key: object = path
        if FileSystems.get_scheme(path) is None:
            try:
                st = os.stat(path)
                key = (st.st_dev, st.st_ino)
            except OSError:  # vanished since the listing: the reader names it
                pass
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out


def storage_errors() -> tuple[type[BaseException], ...]:
    """Exceptions a filesystem raises for a missing or forbidden object."""
    errors: list[type[BaseException]] = [OSError]
    try:
        from google.api_core.exceptions import GoogleAPIError
    except ImportError:  # installed without GCS support: no such errors can occur
        return tuple(errors)
    return (*errors, GoogleAPIError)
