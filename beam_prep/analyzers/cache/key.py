"""Keys of the analysis cache: what a cached split result depends on, and nothing else.

An entry of the cache (:mod:`beam_prep.analyzers.cache.store`) holds exactly what
:class:`~beam_prep.analyzers.split_fn.AnalyzeSplitFn` emits for one input split. Its key is
the sha256 of:

* :data:`CACHE_FORMAT_VERSION`;
* the split's identity: path, format, Parquet row groups, first row, byte range;
* the file's *content identity* (:func:`beam_prep.io.inputs.content_id.content_identity`): local
  files: size, mtime and ctime in nanoseconds (``os.utime`` can restore an mtime, never a
  ctime); ``gs://``: size and object generation (a new generation on every write);
* the *analysis key* (:func:`analysis_key`): the spec fields that change what is
  accumulated (per feature: :func:`feature_key`), the columns read with their types (a row
  is rejected when any of them fails to convert, which changes every feature's counts),
  the reader options that change results (format, batch size, CSV delimiter,
  ``skip_corrupt_tail``) and the versions of the libraries that count and sketch; for
  JSONL, the columns of list features (read as arrays line by line).

Settings applied after the merge (:data:`POST_MERGE_FIELDS`: ``top_k``, ``min_count``,
``max_tokens``, ``num_buckets`` when the sketch's epsilon stays the same, output modes
other than ``tf_idf``, scaling, OOV and mask settings, the mutual-information options of a
label-aware vocabulary, ``impute`` and ``missing_indicator``, whose imputed value is read from
the merged statistics or vocabulary, and ``target_encoding.smoothing``, applied to the merged
sums) are not part of the key (``labels`` itself is: it changes
what a split counts): changing them reuses every entry. The partition count is not either:
entries hold unpartitioned tables.

Example:
    >>> from beam_prep.spec import Spec, StringFeature
    >>> a = Spec((StringFeature("city", top_k=10),))
    >>> b = Spec((StringFeature("city", top_k=99),))
    >>> settings = ReaderSettings("csv", batch_size=1024)
    >>> analysis_key(a, settings)[0] == analysis_key(b, settings)[0]
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from beam_prep.analyzers import families as registry
from beam_prep.analyzers.split_fn import list_columns, required_columns
from beam_prep.io.inputs.readers import Split
from beam_prep.spec import Feature, Spec

#: Bumped whenever the entry layout or the meaning of a key part changes.
CACHE_FORMAT_VERSION = 5  # 2: exact moment sums; 4: sketches fed in fixed chunks;
# 5: a scalar feature's rows of several values are rejected (multiple_values), not counted
# 3: count tables carry each token's uint64 partition hash (replay does not re-hash)


@dataclasses.dataclass(frozen=True)
class ReaderSettings:
    """The reader options a split's analysis result depends on.

    Attributes:
        format: Input format.
        batch_size: Rows per Arrow batch (kept in the key out of caution: moments are
            exact sums and sketches are fed in fixed chunks, so results no longer depend
            on it).
        csv_delimiter: CSV field delimiter.
        skip_corrupt_tail: TFRecord corrupt-tail handling.
    """

    format: str
    batch_size: int
    csv_delimiter: str = ","
    skip_corrupt_tail: bool = False


def _digest(obj: Any) -> str:
    body = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


#: Feature fields applied after the merge: a change of one of them reuses every entry.
POST_MERGE_FIELDS = frozenset({
    "top_k", "min_count", "num_oov_indices", "mask_token", "output_mode", "max_tokens",
    "output_sequence_length", "num_buckets", "epsilon", "scaling", "max_values", "impute",
    "missing_indicator",
    # label-aware vocabularies: applied when the summed label tables are scored
    "adjusted_mutual_info", "min_diff_from_avg", "min_mutual_info",
    "per_key_count"})
#: Fields of ``target_encoding`` applied to the merged (token, fold) sums (not in the key;
#: ``labels``, ``fold_column`` and ``folds`` are: they change what a split sums).
TARGET_POST_MERGE_FIELDS = frozenset({"smoothing"})


def feature_key(f: Feature) -> dict[str, Any]:
    """The fields of one feature that change its accumulation (plain JSON data).

    Every field of the feature except :data:`POST_MERGE_FIELDS` (so a field added to the
    spec later invalidates entries until it is listed there), plus what two of those
    fields do change: whether a text feature counts document frequencies
    (``output_mode: tf_idf``) and a numeric feature's sketch epsilon (``num_buckets``
    sets it when ``epsilon`` is not given; no sketch without ``num_buckets``).

    Example:
        >>> from beam_prep.spec import NumericFeature
        >>> feature_key(NumericFeature("x", num_buckets=10))["epsilon"]
        0.01
        >>> feature_key(NumericFeature("x", num_buckets=20))["epsilon"]
        0.01
    """
    out = {k: v for k, v in f.to_dict().items() if k not in POST_MERGE_FIELDS}
    if isinstance(out.get("target_encoding"), dict):  # smoothing: applied to the merged sums
        out["target_encoding"] = {k: v for k, v in out["target_encoding"].items()
                                  if k not in TARGET_POST_MERGE_FIELDS}
    out["column"] = f.source_column if f.expr is None else None
    if f.kind == "text":
        out["document_frequency"] = f.output_mode == "tf_idf"
    elif f.kind == "numeric":
        out["epsilon"] = f.resolved_epsilon()
    for family in registry.FAMILIES:  # only the applying ones: other keys are kept
        if family.applies(f):
            out.update(family.feature_key(f))
    return out


def library_versions() -> dict[str, str]:
    """Versions of the code that reads, counts and sketches (part of every key)."""
    import pyarrow
    import tfx_bsl

    from beam_prep.version import __version__

    return {"beam_prep": __version__, "pyarrow": pyarrow.__version__,
            "tfx_bsl": tfx_bsl.__version__}


def analysis_key(spec: Spec, reader: ReaderSettings) -> tuple[str, dict[str, str]]:
    """The analysis key of a spec: ``(hex digest, {feature: its own digest})``.

    Hashed features are not analysed and do not count. The per-feature digests are stored
    in each entry, to show which feature changed when entries stop matching.
    """
    features = [f for f in spec.features if f.kind != "hashed"]
    per_feature = {f.name: _digest(feature_key(f)) for f in features}
    whole = {"features": [feature_key(f) for f in features],
             "columns": required_columns(spec),
             "reader": dataclasses.asdict(reader),
             "libraries": library_versions()}
    if reader.format == "jsonl" and (lists := sorted(list_columns(spec))):
        # JSONL arrays of list features are read line by line in a block holding a bad line
        # (older entries rejected every array of such a block): such specs get new keys,
        # every other spec keeps its entries.
        whole["jsonl_list_columns"] = lists
    return _digest(whole), per_feature


def split_identity(split: Split) -> dict[str, Any]:
    """The split as plain data (part of the key and of the entry's index)."""
    return {"path": split.path, "format": split.format,
            "row_groups": None if split.row_groups is None else list(split.row_groups),
            "first_row": split.first_row, "start": split.start, "end": split.end}


def plan_key(path: str, fmt: str, content: str, split_bytes: int) -> str:
    """The cache key of a file's split plan (hex sha256).

    Example:
        >>> len(plan_key("a.csv", "csv", "local:size=1:mtime_ns=2:ctime_ns=3", 1 << 26))
        64
    """
    return _digest({"version": CACHE_FORMAT_VERSION, "plan": path, "format": fmt,
                    "content": content, "split_bytes": split_bytes})


def entry_key(split: Split, content: str, analysis: str) -> str:
    """The cache key of one split's analysis result (hex sha256).

    Example:
        >>> len(entry_key(Split("a.csv", "csv"), "local:size=1:mtime_ns=2:ctime_ns=3", "0" * 64))
        64
    """
    return _digest({"version": CACHE_FORMAT_VERSION, "split": split_identity(split),
                    "content": content, "analysis": analysis})
