"""One validation of ``manifest.json``, run by every reader before any other file is opened.

``generate``, ``layers_from_artifacts``, ``report``, ``diff`` and ``train`` all open an artifact
directory through :class:`beam_prep.io.contract.artifacts.Artifacts`, which parses the manifest with
:func:`parse_manifest` and checks it with :func:`validate_manifest`. The checks follow the
contract of docs/artifacts.md:

* parsing: the file is a regular file of at most :data:`MAX_MANIFEST_BYTES`, UTF-8 JSON whose
  top level is an object; ``NaN``/``Infinity``, a float that overflows (``1e400``) and an
  integer outside int64 (``10**400``) are refused where they stand;
* required keys and their types: ``format``, ``format_version``, ``fingerprint``, ``spec``,
  ``features`` (one entry per spec feature, of the spec's kind), each entry's ``files`` (string,
  integer and text features: ``vocabulary`` and ``counts``; with ``labels`` in the spec also
  ``mutual_info``) and ``stats``;
* every file entry: ``path`` a relative path inside the directory (no NUL, no ``..``, not
  absolute), ``sha256`` 64 hex digits, ``bytes`` an integer >= 0; readers then check the file
  on disk against ``bytes`` before reading it (:meth:`Artifacts.open_file`);
* statistics, when present (older manifests lack some): counts are integers >= 0 (for a
  vocabulary feature with instance weights, ``total_count`` and each drop's ``count`` are
  sums of weights: finite numbers >= 0; ``weight_total`` too), ``mean``,
  ``min``, ``max`` finite numbers or null, ``variance`` finite >= 0 or null, ``min <= max``,
  ``boundaries`` null or a non-decreasing list of finite numbers, ``quartiles`` null or three
  non-decreasing finite numbers, ``epsilon`` > 0;
* ``stats.imputed_value`` (features with ``impute``; required then): a finite number
  (numeric; equal to ``mean`` or ``quartiles[1]``, the statistic it was taken from), an
  int64 (integer) or a string (string), or null (no observed value);
* ``stats.mutual_info`` of a label-aware vocabulary (required with ``labels``): label
  column, options, row and label counts (:func:`_mutual_info`);
* ``stats.target_encoding`` and ``files.target_encoding`` (required with
  ``target_encoding`` in the spec): columns, ``folds`` >= 2, ``smoothing`` >= 0, row counts
  per fold summing to ``rows``, means finite or null, one out-of-fold mean per fold
  (:func:`_target_encoding`);
* ``input``, ``versions``, ``run`` (read by the report): the types the analysis writes.

Unknown keys are accepted (a reader ignores what it does not use). Every failure is one
:class:`~beam_prep.errors.ArtifactError` line naming the file, the key and its value, and the
fix (re-run the analysis).

Example:
    >>> validate_manifest({"format": "beam_prep.artifacts"}, "art/manifest.json")
    Traceback (most recent call last):
    ...
    beam_prep.errors.ArtifactError: art/manifest.json: `format_version` is missing. ...
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from beam_prep.errors import ArtifactError

MAX_MANIFEST_BYTES = 256 << 20
"""A manifest holds settings and statistics: kilobytes, megabytes with many boundaries."""
INT64_MAX = 2**63 - 1
VOCAB_KINDS = ("string", "integer", "text")
KINDS = (*VOCAB_KINDS, "numeric", "hashed")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COUNTS = ("vocabulary_size", "distinct_values", "total_count", "missing_count",
           "document_count", "count", "nan_count", "infinite_count", "key_count")
_DROPS = ("excluded_unwritable", "excluded_reserved", "dropped_min_count", "dropped_top_k")
_FIX = "Fix: re-run `beam-prep analyze` into a fresh directory; never edit its files."


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _error(path: str, key: str, value: Any, must: str) -> ArtifactError:
    return ArtifactError(f"{path}: `{key}` must be {must}. Received: {key}={_shown(value)}. "
                         f"{_FIX}")


def parse_manifest(data: bytes, path: str) -> dict[str, Any]:
    """Parses manifest bytes; refuses non-finite numbers, int64 overflow and a non-object.

    Example:
        >>> parse_manifest(b'{"a": 1}', "m.json")
        {'a': 1}
        >>> parse_manifest(b'{"a": NaN}', "m.json")
        Traceback (most recent call last):
        ...
        beam_prep.errors.ArtifactError: m.json is not a valid manifest: NaN ...
    """
    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number (non-finite values are stored as null)")

    def number(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"the number {text[:40]} overflows a float64")
        return value

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > 19 or abs(int(text)) > INT64_MAX:
            raise ValueError(f"the integer {text[:40]}{'...' if len(text) > 40 else ''} "
                             "is outside int64")
        return int(text)

    if len(data) > MAX_MANIFEST_BYTES:
        raise ArtifactError(f"{path} is {len(data):,} bytes, more than a manifest can be "
                            f"({MAX_MANIFEST_BYTES:,}). {_FIX}")
    try:
        manifest = json.loads(data.decode("utf-8"), parse_constant=constant,
                              parse_float=number, parse_int=integer)
    except (ValueError, RecursionError) as e:
        raise ArtifactError(f"{path} is not a valid manifest: {e}. {_FIX}") from None
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{path} must hold a JSON object. Received: a JSON "
                            f"{type(manifest).__name__}. {_FIX}")
    return manifest


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_num(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


class _Checker:
    """Checks values under a dotted key path; every failure raises one ArtifactError."""

    def __init__(self, path: str) -> None:
        self.path = path

    def need(self, obj: dict[str, Any], key: str, where: str) -> Any:
        if key not in obj:
            raise ArtifactError(f"{self.path}: `{where}{key}` is missing. {_FIX}")
        return obj[key]

    def check(self, ok: bool, key: str, value: Any, must: str) -> None:
        if not ok:
            raise _error(self.path, key, value, must)

    def mapping(self, value: Any, key: str) -> dict[str, Any]:
        self.check(isinstance(value, dict), key, value, "a JSON object")
        return value

    def count(self, value: Any, key: str) -> None:
        self.check(_is_int(value) and 0 <= value <= INT64_MAX, key, value,
                   "an integer >= 0")

    def amount(self, value: Any, key: str) -> None:
        """A sum of weights: a finite number >= 0."""
        self.check(_is_num(value) and value >= 0, key, value, "a finite number >= 0")

    def strings(self, value: Any, key: str) -> None:
        self.check(isinstance(value, list) and all(isinstance(s, str) for s in value), key,
                   value, "a list of strings")

    def optional(self, obj: dict[str, Any], key: str, where: str,
                 fn: Callable[[Any, str], Any]) -> None:
        if key in obj:
            fn(obj[key], where + key)


def check_relpath_text(relpath: Any) -> str | None:
    """Why a manifest path is not a relative path inside the directory (text rules only)."""
    if not isinstance(relpath, str) or not relpath:
        return "it is not a non-empty string"
    if "\x00" in relpath:
        return "it contains a NUL character"
    if relpath.startswith(("/", "\\")) or "://" in relpath or relpath[1:2] == ":":
        return "it is absolute"
    if ".." in relpath.replace("\\", "/").split("/"):
        return "it contains a '..' component"
    return None


def _file_entry(c: _Checker, meta: Any, key: str) -> None:
    meta = c.mapping(meta, key)
    rel = c.need(meta, "path", key + ".")
    # where it leads (absolute, '..', NUL, a symlink outside) is checked by the reader with
    # the directory at hand: beam_prep.io.contract.artifacts.check_relpath
    c.check(isinstance(rel, str) and rel != "", key + ".path", rel, "a non-empty string")
    sha = c.need(meta, "sha256", key + ".")
    c.check(isinstance(sha, str) and _SHA256.fullmatch(sha) is not None, key + ".sha256",
            sha, "64 lower-case hex digits")
    c.count(c.need(meta, "bytes", key + "."), key + ".bytes")


def _spec_entry(spec: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The manifest spec's entry of feature ``name`` (a dict), if it has one."""
    entries = spec.get("features")
    for f in entries if isinstance(entries, list) else ():
        if isinstance(f, dict) and f.get("name") == name:
            return f
    return None


def _field(feature: Any, name: str) -> Any:
    return feature.get(name) if isinstance(feature, dict) else getattr(feature, name, None)


def _weighted(feature: Any) -> bool:
    """A feature (spec object or the manifest spec's dict) with instance weights."""
    return (_field(feature, "weights") is not None
            or _field(feature, "weights_expr") is not None)


def _stats(c: _Checker, st: dict[str, Any], key: str, feature: Any) -> None:
    # A weighted feature's counts of a vocabulary are sums of weights (spec.weights).
    weighted = _weighted(feature) and _field(feature, "kind") in VOCAB_KINDS
    summed = c.amount if weighted else c.count
    for name in _COUNTS:
        c.optional(st, name, key, summed if name == "total_count" else c.count)
    c.optional(st, "invalid_weight_count", key, c.count)
    c.optional(st, "weight_total", key, c.amount)
    for name in _DROPS:
        if name in st:
            d = c.mapping(st[name], f"{key}{name}")
            c.optional(d, "tokens", f"{key}{name}.", c.count)
            c.optional(d, "count", f"{key}{name}.", summed)
    if "terms_per_document_log2" in st:
        terms = st["terms_per_document_log2"]
        c.check(isinstance(terms, list) and len(terms) <= 33 and
                all(_is_int(t) and 0 <= t <= INT64_MAX for t in terms),
                key + "terms_per_document_log2", terms, "a list of at most 33 integers >= 0")
    for name in ("mean", "min", "max", "variance", "epsilon"):
        if name in st:
            v = st[name]
            c.check(v is None or _is_num(v), key + name, v, "a finite number or null")
    if st.get("variance") is not None:
        c.check(st["variance"] >= 0, key + "variance", st["variance"], ">= 0")
    if st.get("epsilon") is not None:
        c.check(st["epsilon"] > 0, key + "epsilon", st["epsilon"], "> 0")
    if st.get("min") is not None and st.get("max") is not None:
        c.check(st["min"] <= st["max"], key + "min", st["min"], f"<= max={st['max']!r}")
    if "boundaries" in st and st["boundaries"] is not None:
        b = st["boundaries"]
        buckets = getattr(feature, "num_buckets", None)
        ok = isinstance(b, list) and all(_is_num(x) for x in b)
        ok = ok and all(x <= y for x, y in zip(b, b[1:], strict=False))
        ok = ok and (not isinstance(buckets, int) or len(b) <= max(buckets - 1, 0))
        most = f" (at most num_buckets - 1 = {buckets - 1})" if isinstance(buckets, int) else ""
        c.check(ok, key + "boundaries", b,
                f"null or a non-decreasing list of finite numbers{most}")
    if "quartiles" in st and st["quartiles"] is not None:
        q = st["quartiles"]
        ok = isinstance(q, list) and len(q) == 3 and all(_is_num(x) for x in q)
        c.check(ok and q[0] <= q[1] <= q[2], key + "quartiles", q,
                "null or [q25, q50, q75]: three non-decreasing finite numbers")
    if "null_reasons" in st:
        r = c.mapping(st["null_reasons"], key + "null_reasons")
        c.check(all(isinstance(v, str) for v in r.values()), key + "null_reasons", r,
                "a mapping of statistic to reason")


_IMPUTED = {"numeric": (_is_num, "a finite number"),
            "integer": (_is_int, "an int64 integer"),
            "string": (lambda v: isinstance(v, str) and v != "", "a non-empty string")}


def _imputed(c: _Checker, st: dict[str, Any], key: str, kind: str, feature: Any) -> None:
    """``imputed_value``: required with the spec's ``impute``, typed by kind, the statistic."""
    impute = _field(feature, "impute")
    if impute is not None:
        c.need(st, "imputed_value", key)
    if "imputed_value" not in st:
        return
    v = st["imputed_value"]
    ok, must = _IMPUTED.get(kind, (lambda _: False, "absent (the kind has no impute)"))
    c.check(v is None or ok(v), key + "imputed_value", v, must + " or null")
    quartiles = st.get("quartiles")
    median = quartiles[1] if isinstance(quartiles, list) and len(quartiles) == 3 else None
    source = {"mean": st.get("mean"), "median": median}.get(impute or "", v)
    c.check(v == source, key + "imputed_value", v,
            f"the {impute} it is taken from ({source!r})")


def _mutual_info(c: _Checker, mi: Any, key: str) -> None:
    """``stats.mutual_info``: what the label-aware vocabulary was scored with."""
    mi = c.mapping(mi, key)
    where = key + "."
    c.check(isinstance(c.need(mi, "label_column", where), str), where + "label_column",
            mi["label_column"], "a string")
    c.check(type(c.need(mi, "adjusted", where)) is bool, where + "adjusted", mi["adjusted"],
            "true or false")
    diff = c.need(mi, "min_diff_from_avg", where)
    c.check(_is_num(diff) and diff >= 0, where + "min_diff_from_avg", diff,
            "a finite number >= 0")
    if "min_mutual_info" in mi:
        v = mi["min_mutual_info"]
        c.check(v is None or _is_num(v), where + "min_mutual_info", v, "a finite number or null")
    for name in ("rows", "rows_without_label", "distinct_labels"):
        c.count(c.need(mi, name, where), where + name)
    d = c.mapping(c.need(mi, "dropped_min_mutual_info", where), where + "dropped_min_mutual_info")
    for part in ("tokens", "count"):
        c.count(c.need(d, part, where + "dropped_min_mutual_info."),
                f"{where}dropped_min_mutual_info.{part}")
    if "label_rows" in mi:
        rows = c.mapping(mi["label_rows"], where + "label_rows")
        c.check(len(rows) == mi["distinct_labels"]
                and all(re.fullmatch(r"0|[1-9][0-9]{0,18}", k) for k in rows),
                where + "label_rows", rows, "one entry per label, keyed by the label (an "
                "integer >= 0 in decimal)")
        for label, n in rows.items():
            c.count(n, f"{where}label_rows.{label}")
        c.check(sum(rows.values()) == mi["rows"], where + "label_rows", rows,
                f"row counts summing to rows={mi['rows']}")


def _target_encoding(c: _Checker, te: Any, key: str) -> None:
    """``stats.target_encoding``: the settings and totals of a target-encoded feature."""
    te = c.mapping(te, key)
    where = key + "."
    for name in ("label_column", "fold_column"):
        c.check(isinstance(c.need(te, name, where), str) and te[name] != "", where + name,
                te[name], "a non-empty string")
    folds = c.need(te, "folds", where)
    c.check(_is_int(folds) and 2 <= folds <= 1000, where + "folds", folds,
            "an integer from 2 to 1000")
    m = c.need(te, "smoothing", where)
    c.check(_is_num(m) and m >= 0, where + "smoothing", m, "a finite number >= 0")
    for name in ("rows", "tokens"):
        c.count(c.need(te, name, where), where + name)
    per_fold = c.need(te, "rows_per_fold", where)
    c.check(isinstance(per_fold, list) and len(per_fold) == folds
            and all(_is_int(n) and n >= 0 for n in per_fold)
            and sum(per_fold) == te["rows"], where + "rows_per_fold", per_fold,
            f"{folds} integers >= 0 (one per fold) summing to rows={te['rows']}")
    g = c.need(te, "global_mean", where)
    c.check(g is None or _is_num(g), where + "global_mean", g, "a finite number or null")
    means = c.need(te, "out_of_fold_means", where)
    c.check(isinstance(means, list) and len(means) == folds
            and all(v is None or _is_num(v) for v in means), where + "out_of_fold_means",
            means, f"{folds} finite numbers or nulls (one per fold)")


def _input(c: _Checker, inp: Any) -> None:
    inp = c.mapping(inp, "input")
    c.optional(inp, "patterns", "input.", c.strings)
    c.optional(inp, "rejected_files", "input.", c.strings)
    for name in ("files", "splits", "rows_read", "rows_rejected"):
        c.optional(inp, name, "input.", c.count)
    for name in ("format", "rejected_file"):
        if name in inp:
            c.check(inp[name] is None or isinstance(inp[name], str), "input." + name,
                    inp[name], "a string")
    if "rejected_by_reason" in inp:
        reasons = c.mapping(inp["rejected_by_reason"], "input.rejected_by_reason")
        for reason, n in reasons.items():
            c.count(n, f"input.rejected_by_reason.{reason}")
    for rel in [*(inp.get("rejected_files") or []), inp.get("rejected_file")]:
        if rel is not None:
            why = check_relpath_text(rel)
            c.check(why is None, "input.rejected_files", rel,
                    f"relative paths inside the artifact directory ({why})")


def validate_manifest(manifest: Any, path: str, spec: Any = None) -> None:
    """Checks a parsed manifest against the contract (see the module docstring).

    Args:
        manifest: The parsed ``manifest.json``.
        path: Its path, for messages.
        spec: The manifest's parsed :class:`~beam_prep.spec.Spec`, once built; with it, the
            feature entries are checked against the spec's names and kinds.

    Raises:
        ArtifactError: The first violation: file, key, value and the fix, on one line.
    """
    c = _Checker(path)
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{path} must hold a JSON object. Received: a JSON "
                            f"{type(manifest).__name__}. {_FIX}")
    for key in ("format", "format_version", "fingerprint", "spec", "features"):
        c.need(manifest, key, "")
    c.check(isinstance(manifest["fingerprint"], str), "fingerprint", manifest["fingerprint"],
            "a sha256 hex string")
    c.mapping(manifest["spec"], "spec")
    features = c.mapping(manifest["features"], "features")
    if "input" in manifest:
        _input(c, manifest["input"])
    if "versions" in manifest:
        v = c.mapping(manifest["versions"], "versions")
        c.check(all(isinstance(x, str) for x in v.values()), "versions", v,
                "a mapping of package to version string")
    if manifest.get("run") is not None:
        run = c.mapping(manifest["run"], "run")
        if run.get("seconds") is not None:
            c.check(_is_num(run["seconds"]) and run["seconds"] >= 0, "run.seconds",
                    run["seconds"], "a finite number >= 0")
    if manifest.get("run_seconds") is not None:
        c.check(_is_num(manifest["run_seconds"]), "run_seconds", manifest["run_seconds"],
                "a finite number")
    names = spec.names() if spec is not None else tuple(features)
    for name in names:
        key = f"features.{name}"
        entry = c.mapping(c.need(features, name, "features.") if spec is not None
                          else features[name], key)
        kind = c.need(entry, "kind", key + ".")
        want = spec.feature(name).kind if spec is not None else None
        c.check(kind in KINDS and (want is None or kind == want), key + ".kind", kind,
                f"{want!r}, the spec's kind" if want else f"one of {list(KINDS)}")
        files = c.mapping(entry.get("files", {}) if kind not in VOCAB_KINDS
                          else c.need(entry, "files", key + "."), key + ".files")
        labelled = spec is not None and getattr(spec.feature(name), "labels", None) is not None
        targeted = (spec is not None
                    and getattr(spec.feature(name), "target_encoding", None) is not None)
        keyed = spec is not None and getattr(spec.feature(name), "per_key", None) is not None
        bucketed = keyed and getattr(spec.feature(name), "num_buckets", None) is not None
        for role in (("vocabulary", "counts") if kind in VOCAB_KINDS else ()) + (
                ("mutual_info",) if labelled else ()) + (("per_key",) if keyed else ()) + (
                ("per_key_buckets",) if bucketed else ()) + (
                ("target_encoding",) if targeted else ()):
            c.need(files, role, key + ".files.")
        for role, meta in files.items():
            _file_entry(c, meta, f"{key}.files.{role}")
        st = c.mapping(c.need(entry, "stats", key + "."), key + ".stats")
        feature = spec.feature(name) if spec is not None else _spec_entry(manifest["spec"], name)
        _stats(c, st, key + ".stats.", feature)
        _imputed(c, st, key + ".stats.", kind, feature)
        if labelled or "mutual_info" in st:
            _mutual_info(c, c.need(st, "mutual_info", key + ".stats."),
                         key + ".stats.mutual_info")
        if targeted or "target_encoding" in st:
            _target_encoding(c, c.need(st, "target_encoding", key + ".stats."),
                             key + ".stats.target_encoding")
        if keyed:  # the per-key file is read line by line against this count
            c.count(c.need(st, "key_count", key + ".stats."), key + ".stats.key_count")
        if bucketed:  # the per-key bucket file is read against this count
            c.count(c.need(st, "bucket_key_count", key + ".stats."),
                    key + ".stats.bucket_key_count")
    if spec is not None:
        extra = sorted(set(features) - set(names))
        c.check(not extra, "features", extra, f"entries of the spec's features only "
                f"{list(names)}")
