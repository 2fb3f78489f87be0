"""Content identity of an input file: a short string that changes whenever its bytes may have.

A cache of per-file results (``analyze --cache_dir``) keys its entries by this string next to
the path. The contract: **two calls return the same string only if the file was not rewritten
in between** (a false "changed" only costs a recomputation; a false "unchanged" would serve
stale results, so every rule below errs towards "changed"). No file content is read.

=============  ====================================================================================
Scheme         Identity
=============  ====================================================================================
local path     ``local:size=<bytes>:mtime_ns=<st_mtime_ns>:ctime_ns=<st_ctime_ns>`` from one
               ``os.stat``. ``ctime`` also catches a replacement that restores the old mtime
               (``cp -p``, ``rsync -t``, ``touch -d``): the kernel sets it on every write, rename
               or metadata change, and no user call can set it back.
``gs://``      ``gs:size=<bytes>:generation=<object generation>``. GCS gives every write of an
               object a new generation (also for identical bytes), so an object rewritten in place
               is never taken for the old one. If a server omits the generation:
               ``gs:size=<bytes>:updated=<updated, RFC 3339>:crc32c=<base64>``.
other schemes  ``fs:size=<bytes>:updated=<seconds>`` from Beam's ``FileSystems.match`` metadata.
=============  ====================================================================================

For ``gs://``, :func:`content_identities` lists each folder once, narrowed to the longest name
prefix the requested files share (one request per 1000 listed objects), instead of one request per
file; :func:`content_identity` is the one-path shorthand.

Limit: file timestamps advance in clock ticks (a few milliseconds on Linux). A local file written
twice within one tick with the same size keeps its identity; a job started after the last write
never sees that case, since it stats the file after the write finished.

Example:
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "day1.csv")
    >>> _ = open(p, "w").write("a,b\\n")
    >>> content_identity(p).startswith("local:size=4:mtime_ns=")
    True
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import InputError

_GCS = "gs://"


def content_identity(path: str) -> str:
    """Identity string of one existing file (see the module docstring for the format).

    Args:
        path: A local path or a ``scheme://`` URL of one file (no glob).

    Returns:
        The identity string.

    Raises:
        InputError: The file does not exist.

    Example:
        >>> content_identity(__file__).startswith("local:")
        True
    """
    return content_identities([path])[path]


def content_identities(paths: Sequence[str], *, pipeline_options: Any = None) -> dict[str, str]:
    """Identity strings of many files, keyed by path; ``gs://`` folders are listed once each.

    Args:
        paths: Local paths or ``scheme://`` URLs of files (no globs).
        pipeline_options: Beam ``PipelineOptions`` for the GCS client (project, credentials);
            ``None`` lets Beam read them from the command line, as its own file system does.

    Returns:
        ``{path: identity}`` for every path given.

    Raises:
        InputError: A path does not exist.

    Example:
        >>> ids = content_identities([__file__])
        >>> list(ids) == [__file__]
        True
    """
    result: dict[str, str] = {}
    gcs_paths = [p for p in paths if p.startswith(_GCS)]
    for path in paths:
        if path.startswith(_GCS):
            continue
        result[path] = _local_identity(path) if "://" not in path else _generic_identity(path)
    if gcs_paths:
        result.update(_gcs_identities(gcs_paths, pipeline_options))
    return {p: result[p] for p in paths}


def _missing(path: str) -> InputError:
    return InputError(
        f"`path` must name an existing file to take its content identity. Received: path={path!r}. "
        "Check the input pattern, or that the file was not deleted while the job started.")


def _local_identity(path: str) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _missing(path) from None
    return f"local:size={st.st_size}:mtime_ns={st.st_mtime_ns}:ctime_ns={st.st_ctime_ns}"


def _generic_identity(path: str) -> str:
    found = FileSystems.match([path])[0].metadata_list
    if not found:
        raise _missing(path)
    meta = found[0]
    return f"fs:size={meta.size_in_bytes}:updated={meta.last_updated_in_seconds!r}"


def _split_gcs(path: str) -> tuple[str, str]:
    bucket, _, name = path[len(_GCS):].partition("/")
    return bucket, name


def _blob_identity(blob: Any) -> str:
    if blob.generation is not None:
        return f"gs:size={blob.size}:generation={blob.generation}"
    updated = blob.updated.isoformat() if blob.updated is not None else "none"
    return f"gs:size={blob.size}:updated={updated}:crc32c={blob.crc32c}"


def _gcs_identities(paths: Sequence[str], pipeline_options: Any) -> dict[str, str]:
    # Beam's own GCS client (same credentials and options as the reads); imported here so that
    # local-only runs never need google-cloud-storage.
    from apache_beam.io.gcp import gcsio

    client = gcsio.GcsIO(pipeline_options=pipeline_options).client
    folders: dict[tuple[str, str], set[str]] = {}
    for path in paths:
        bucket, name = _split_gcs(path)
        folders.setdefault((bucket, name[: name.rfind("/") + 1]), set()).add(name)
    result: dict[str, str] = {}
    for (bucket, _folder), names in folders.items():
        prefix = os.path.commonprefix(sorted(names))
        for blob in client.list_blobs(bucket, prefix=prefix, delimiter="/"):
            if blob.name in names:
                result[f"{_GCS}{bucket}/{blob.name}"] = _blob_identity(blob)
    for path in paths:
        if path not in result:
            raise _missing(path)
    return result
