"""Old import paths that still work for one release, with a DeprecationWarning.

Modules moved in 0.2 (ranking split into ``ranking.data`` and ``ranking.train``; the text
tokeniser moved under ``analyzers``; the jobs are installed as ``beam_prep.pipelines``; ``io``
split into ``io.inputs``, ``io.contract`` and ``io.commit``; per-key buckets and the target
table's cache form moved beside their analysis families; the weighted counts and moments
moved to the trunk, beside the accumulators that now take weights as an optional input). Importing
an old path returns the module at its new home (the same object, so ``isinstance`` checks and
monkeypatching keep working) and warns once per path.

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     import beam_prep.ranking.letor as old
    >>> old.__name__
    'beam_prep.ranking.data.letor'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

_DATA = ("build", "encode", "letor", "lists", "options", "sources", "tfrecord", "transforms")
_TRAIN = ("embeddings", "export", "hparams", "launcher", "losses", "metrics", "model", "reader",
          "strategy")

_IO_INPUTS = ("readers", "formats", "csv_reader", "columns", "bad_rows", "byte_ranges",
              "compressed", "content_id", "patterns", "scalar_rows", "tfrecord_reader",
              "tfrecord_stream", "example_decoder")
_IO_CONTRACT = ("artifacts", "checked_stream", "manifest_check", "counts_sidecar",
                "label_sidecar", "per_key_file", "per_key_buckets_file", "per_key_columns",
                "target_file", "run_record")
_IO_COMMIT = ("output", "output_finalize", "output_lock", "output_target", "folders")

#: old module path -> new module path.
MOVED: dict[str, str] = {
    **{f"beam_prep.ranking.{m}": f"beam_prep.ranking.data.{m}" for m in _DATA},
    **{f"beam_prep.ranking.{m}": f"beam_prep.ranking.train.{m}" for m in _TRAIN},
    "beam_prep.text": "beam_prep.analyzers.text",
    **{f"beam_prep.io.{m}": f"beam_prep.io.inputs.{m}" for m in _IO_INPUTS},
    **{f"beam_prep.io.{m}": f"beam_prep.io.contract.{m}" for m in _IO_CONTRACT},
    **{f"beam_prep.io.{m}": f"beam_prep.io.commit.{m}" for m in _IO_COMMIT},
    "beam_prep.analyzers.per_key.hist": "beam_prep.analyzers.per_key_buckets.hist",
    "beam_prep.analyzers.per_key.buckets": "beam_prep.analyzers.per_key_buckets.pipeline",
    "beam_prep.analyzers.cache.target": "beam_prep.analyzers.target.cache_file",
    "beam_prep.analyzers.weighted.counts": "beam_prep.analyzers.vocab.weights",
    "beam_prep.analyzers.weighted.numeric": "beam_prep.analyzers.weighted_moments",
}

REMOVED_IN = "0.3"
#: Paths moved in 0.3 (these prefixes) stay one release longer.
REMOVED_IN_LATER = (("beam_prep.io.", "beam_prep.analyzers."), "0.4")


def removed_in(old: str) -> str:
    """The release that drops an old path (0.2's moves in 0.3, 0.3's in 0.4).

    Example:
        >>> removed_in("beam_prep.text"), removed_in("beam_prep.io.artifacts")
        ('0.3', '0.4')
    """
    prefixes, later = REMOVED_IN_LATER
    return later if old.startswith(prefixes) else REMOVED_IN


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self._new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"`{spec.name}` moved to `{self._new}`; the old import path is deprecated and will be "
            f"removed in beam_prep {removed_in(spec.name)}. Import `{self._new}` instead.",
            DeprecationWarning, stacklevel=2)
        return importlib.import_module(self._new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported at its new home."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Puts the alias finder on ``sys.meta_path`` once (called by ``beam_prep/__init__``)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
