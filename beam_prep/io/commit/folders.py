"""Folder operations that are correct on local disks and on object stores (gs://, s3://).

On an object store a "folder" is only a key prefix: ``FileSystems.exists("gs://b/out")`` is
False even when ``gs://b/out/manifest.json`` exists. Every operation here (listing, emptiness,
deletion, moves) therefore lists the prefix ``<folder>/**`` instead of asking for the folder.
Used by :mod:`beam_prep.io.commit.output`, which re-exports these names.

Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> fs.write_bytes(fs.join(root, "a", "b.txt"), b"x")
    >>> list_files(root), is_empty(root)
    (['a/b.txt'], False)
    >>> delete_tree(root); is_empty(root)
    True
"""

from __future__ import annotations

import os
import shutil

from apache_beam.io.filesystems import FileSystems

from beam_prep.io import filesystem as fs

_DELETE_BATCH = 100


def is_object_store(path: str) -> bool:
    """True for ``scheme://`` paths (gs://, s3:// ...), where folders are key prefixes."""
    return "://" in path


def _prefix(folder: str) -> str:
    return folder.rstrip("/") + "/"


def list_files(folder: str) -> list[str]:
    """Sorted paths, relative to ``folder`` and ``/``-separated, of every file below it.

    Object stores: every object whose key starts with ``<folder>/``. A missing folder gives
    an empty list.
    """
    if is_object_store(folder):
        prefix = _prefix(folder)
        found = FileSystems.match([prefix + "**"])[0].metadata_list
        return sorted(m.path[len(prefix):] for m in found if m.path.startswith(prefix))
    out = []
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        # os.walk lists a symlink to a folder among the folders and does not enter it: it is
        # an entry of this folder all the same (a folder holding only such a link is not empty)
        links = [d for d in dirs if os.path.islink(os.path.join(root, d))]
        for name in files + links:
            out.append(name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}")
    return sorted(out)


def symlinks(folder: str) -> list[str]:
    """Relative paths of the symlinks below a local ``folder`` (never followed); [] on object
    stores, which have none (nothing is listed there).

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp(); os.symlink("/tmp", os.path.join(d, "vocab"))
        >>> symlinks(d)
        ['vocab']
    """
    if is_object_store(folder):
        return []
    return [p for p in list_files(folder) if os.path.islink(os.path.join(folder, p))]


def list_entries(folder: str) -> list[str]:
    """Like :func:`list_files`, plus local empty subfolders (as ``name/``)."""
    entries = list_files(folder)
    if not is_object_store(folder) and os.path.isdir(folder):
        for root, dirs, files in os.walk(folder):
            if root != folder and not dirs and not files:
                entries.append(os.path.relpath(root, folder).replace(os.sep, "/") + "/")
    return sorted(entries)


def is_empty(folder: str) -> bool:
    """True if ``folder`` is missing or holds nothing (on object stores: no key below it)."""
    if is_object_store(folder):
        return not list_files(folder)
    return not os.path.isdir(folder) or not os.listdir(folder)


def delete_files(folder: str, relpaths: list[str]) -> None:
    """Deletes the given files below ``folder`` (missing ones are ignored)."""
    paths = [fs.join(folder, p) for p in relpaths]
    if not is_object_store(folder):
        for p in paths:
            if os.path.lexists(p):
                os.remove(p)
        return
    for i in range(0, len(paths), _DELETE_BATCH):
        FileSystems.delete(paths[i:i + _DELETE_BATCH])


def delete_tree(folder: str) -> None:
    """Deletes ``folder`` and everything below it; object stores: every key of its prefix."""
    if is_object_store(folder):
        delete_files(folder, list_files(folder))
    elif os.path.isdir(folder):
        shutil.rmtree(folder)


def move_files(src_folder: str, dst_folder: str, relpaths: list[str]) -> None:
    """Moves files, replacing existing ones (local: atomic renames; object stores: batched
    copy+delete).

    Raises:
        ArtifactError: Local: a destination, or a folder between ``dst_folder`` and it, is a
            symlink (checked for every file before the first move; nothing is moved then).
    """
    if is_object_store(src_folder):
        for i in range(0, len(relpaths), _DELETE_BATCH):
            part = relpaths[i:i + _DELETE_BATCH]
            FileSystems.rename([fs.join(src_folder, p) for p in part],
                               [fs.join(dst_folder, p) for p in part])
        return
    for rel in relpaths:  # checked before any move: a refusal leaves the folder as it was
        fs.refuse_symlink(fs.join(dst_folder, rel), root=dst_folder)
    for rel in relpaths:
        dst = fs.join(dst_folder, rel)
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        fs.refuse_symlink(dst, root=dst_folder)  # a link planted since the check above
        os.replace(fs.join(src_folder, rel), dst)
