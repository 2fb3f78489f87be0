"""Pruning the analysis cache: keep the entries the last N runs used, delete the rest.

Every ``beam-prep analyze --cache_dir DIR`` run writes ``DIR/runs/<run id>.json`` with the
keys of the entries and split plans it used (hits and new ones); run ids sort by start
time. Pruning keeps the newest ``keep_runs`` records, deletes every entry and plan none of
them names, and deletes the older records. Only names the cache writes are touched
(``entries/<key[:2]>/<sha256>/``, ``plans/<key[:2]>/<sha256>.json``,
``runs/<time>-<id>.json``): other files in the folder are left alone. Works on local
folders and object stores (through Beam FileSystems).

Do not prune while an analysis with the same cache runs: its new entries are recorded only
when it finishes, and an entry deleted while the job replays it fails that job.

Example:
    >>> report = prune("gs://bucket/cache", keep_runs=7)           # doctest: +SKIP
    >>> report.entries_removed                                     # doctest: +SKIP
    31
"""

from __future__ import annotations

import dataclasses
import json
import re

from beam_prep.analyzers.cache import store
from beam_prep.errors import ArtifactError, InputError
from beam_prep.io import filesystem as fs
from beam_prep.io.commit import output


@dataclasses.dataclass(frozen=True)
class PruneReport:
    """What a prune kept and removed.

    Attributes:
        runs_kept: Run records kept (newest last).
        runs_removed: Run records deleted.
        entries_kept: Entries still in the cache.
        entries_removed: Entries deleted (or that would be, with ``dry_run``).
    """

    runs_kept: tuple[str, ...]
    runs_removed: tuple[str, ...]
    entries_kept: int
    entries_removed: int


#: The names the cache writes; prune never touches anything else.
_KEY = re.compile(r"[0-9a-f]{64}")
_RUN = re.compile(r"\d{8}T\d{12}Z-[0-9a-f]{8}\.json")


def _is_key_path(prefix: str, key: str) -> bool:
    return _KEY.fullmatch(key) is not None and prefix == key[:2]


def _plan_files(cache_dir: str) -> dict[str, str]:
    """Key → relpath (under ``plans/``) of every split plan (``<key[:2]>/<key>.json``)."""
    out = {}
    for rel in output.list_files(fs.join(cache_dir, store.PLANS_DIR)):
        parts = rel.split("/")
        if len(parts) == 2 and parts[1].endswith(".json") and _is_key_path(
                parts[0], parts[1][:-len(".json")]):
            out[parts[1][:-len(".json")]] = rel
    return out


def _entry_keys(cache_dir: str) -> set[str]:
    """Keys of every entry folder (``<key[:2]>/<key>/``, complete or not) under ``entries/``."""
    keys = set()
    for rel in output.list_files(fs.join(cache_dir, store.ENTRIES_DIR)):
        parts = rel.split("/")
        if len(parts) >= 3 and _is_key_path(parts[0], parts[1]):
            keys.add(parts[1])
    return keys


def prune(cache_dir: str, *, keep_runs: int, dry_run: bool = False) -> PruneReport:
    """Deletes the entries not used by the newest ``keep_runs`` runs, and older run records.

    Args:
        cache_dir: The cache folder (``--cache_dir`` of the analyses).
        keep_runs: Run records to keep (at least 1).
        dry_run: Count what would be deleted; delete nothing.

    Raises:
        InputError: ``keep_runs`` is not a positive integer; the folder holds no cache.
        ArtifactError: A kept run record cannot be read (nothing is deleted then).
    """
    if not isinstance(keep_runs, int) or keep_runs < 1:
        raise InputError(f"--keep_runs must be a positive integer. Received: keep_runs="
                         f"{keep_runs!r}")
    runs_dir = fs.join(cache_dir, store.RUNS_DIR)
    records = sorted(r for r in output.list_files(runs_dir) if _RUN.fullmatch(r))
    keys = _entry_keys(cache_dir)
    plans = _plan_files(cache_dir)
    if not records and not keys and not plans:
        raise InputError(f"{cache_dir} holds no analysis cache (no {store.RUNS_DIR}/ and no "
                         f"{store.ENTRIES_DIR}/). Pass the --cache_dir of your analyses.")
    kept, removed = records[-keep_runs:], records[:-keep_runs]
    used: set[str] = set()
    for rel in kept:
        path = fs.join(runs_dir, rel)
        try:
            used.update(json.loads(fs.read_bytes(path))["keys"])
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            raise ArtifactError(
                f"Run record {path} cannot be read ({type(e).__name__}: {e}); nothing was "
                "deleted. Delete that record (its entries are then pruned) or restore it, "
                "and prune again.") from e
    stale = sorted(keys - used)
    if not dry_run:
        for key in stale:
            output.delete_tree(store.entry_dir(cache_dir, key))
        output.delete_files(fs.join(cache_dir, store.PLANS_DIR),
                            sorted(rel for key, rel in plans.items() if key not in used))
        output.delete_files(runs_dir, removed)
    return PruneReport(tuple(kept), tuple(removed), len(keys) - len(stale), len(stale))
