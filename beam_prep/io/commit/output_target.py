"""Refusing an ``--output`` file that would replace a file of the folder a command reads.

``beam-prep generate --artifacts art --output art/manifest.json`` (or ``report art --output
art/vocab/x.txt``) used to write the module or page over the artifact directory's own file:
the artifacts were destroyed by the command that read them. A file the jobs write into an
artifact, ELWC or transform folder may not be an ``--output``; any other file inside the
folder may (``art/preprocessing.py``, ``art/report.html``).

Example:
    >>> check_not_owned("art/vocab/x.txt", "art", command="generate")
    Traceback (most recent call last):
    ...
    beam_prep.errors.ArtifactError: --output 'art/vocab/x.txt' is the file 'vocab/x.txt' of \
the folder 'art' that `beam-prep generate` reads: writing it would destroy that folder's \
content. Fix: choose a path outside 'art' (or another name in it, e.g. 'art/preprocessing.py').
    >>> check_not_owned("art/preprocessing.py", "art", command="generate")
"""

from __future__ import annotations

import fnmatch
import os
import posixpath

from beam_prep.errors import ArtifactError

#: Relative paths (``fnmatch`` patterns) the jobs write into their output folders: analyze
#: (manifest, vocabularies and sidecars, per-key files, rejected shards, temporaries), make-elwc
#: (stats, feature spec, shards) and transform (manifest, data shards); locks and staging.
OWNED = ("manifest.json", "vocab/*", "per_key/*", "rejected/*", "_tmp/*", "_failed.json",
         "stats.json", "feature_spec.json", "transform.json", "data/*", "*.tfrecord",
         "*.tfrecord.gz", "_LOCK", "_staging-*", "_COMMIT.json")


def _relative(output: str, folder: str) -> str | None:
    """``output`` relative to ``folder`` (``/``-separated), or None when it is outside."""
    if "://" in output or "://" in folder:
        prefix = folder.rstrip("/") + "/"
        return posixpath.normpath(output[len(prefix):]) if output.startswith(prefix) else None
    out, root = os.path.realpath(output), os.path.realpath(folder)
    if os.path.commonpath([out, root]) != root or out == root:
        return None
    return os.path.relpath(out, root).replace(os.sep, "/")


def check_not_owned(output: str, folder: str, *, command: str, flag: str = "--output",
                    extra: frozenset[str] = frozenset()) -> None:
    """Refuses ``output`` when it names a file the jobs write into ``folder``.

    Args:
        output: The file the command is about to write.
        folder: The folder the command reads (artifacts, ELWC output).
        command: The command, for the message.
        flag: The flag naming ``output``, for the message.
        extra: Further relative paths owned by ``folder`` (e.g. its manifest's file list).

    Raises:
        ArtifactError: ``output`` is one of those files.
    """
    rel = _relative(output, folder)
    if rel is None or not (rel in extra or any(fnmatch.fnmatchcase(rel, p) for p in OWNED)):
        return
    example = posixpath.join(folder, "preprocessing.py" if command == "generate"
                             else "page.html")
    raise ArtifactError(
        f"{flag} {output!r} is the file {rel!r} of the folder {folder!r} that "
        f"`beam-prep {command}` reads: writing it would destroy that folder's content. Fix: "
        f"choose a path outside {folder!r} (or another name in it, e.g. {example!r}).")
