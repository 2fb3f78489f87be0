"""Compares two artifact directories feature by feature and raises drift flags.

Steps: read both manifests (:class:`beam_prep.io.contract.artifacts.Artifacts`), refuse different
specs unless allowed (naming the features that differ), then per feature present in both
with the same kind: stream the two count sidecars (string, integer, text) or compare the
statistics (numeric); hashed features have nothing to compare. A flag is raised when a
measure exceeds its :class:`DiffThresholds` value (absolute value for signed shifts).

Example:
    >>> report = diff_artifacts("artifacts/2024-05-01", "artifacts/2024-05-02")  # doctest: +SKIP
    >>> [f.message for f in report.flags]                                     # doctest: +SKIP
    ["country: JS divergence 0.31 > 0.05 (top added token 'ZZ', count 900)"]
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from beam_prep.config import shown
from beam_prep.diff.imputed import ImputedDiff, compare_imputed
from beam_prep.diff.mutual_info import MutualInfoDiff, compare_mutual_info
from beam_prep.diff.numeric import NumericDiff, compare_numeric
from beam_prep.diff.per_key import PerKeyDiff, compare_per_key
from beam_prep.diff.per_key_buckets import NOISE_Z, BucketDiff
from beam_prep.diff.per_key_buckets import compare_artifacts as compare_bucket_files
from beam_prep.diff.per_key_drift import KeyDriftTally
from beam_prep.diff.sidecar_lines import iter_sidecar
from beam_prep.diff.target import TargetDiff, compare_target
from beam_prep.diff.thresholds import DiffThresholds
from beam_prep.diff.vocab import VocabDiff, compare_vocab
from beam_prep.errors import SpecError
from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.spec.weights import is_weighted

Status = Literal["compared", "only_in_old", "only_in_new", "kind_changed", "nothing_to_compare"]
VOCAB_KINDS = ("string", "integer", "text")


@dataclasses.dataclass(frozen=True)
class Flag:
    """One threshold exceeded.

    Attributes:
        feature: The feature.
        metric: The measure (``jsd``, ``oov_share``, ``mean_shift``, ...).
        value: The measured value (None for an unscalable change).
        threshold: The threshold it exceeded.
        message: One readable line naming the feature, the value and the threshold.
    """

    feature: str
    metric: str
    value: float | None
    threshold: float
    message: str


@dataclasses.dataclass(frozen=True)
class FeatureDiff:
    """The comparison of one feature.

    Attributes:
        name: Feature name.
        kind: Kind in NEW (OLD's when the feature is only in OLD).
        status: What could be compared.
        spec_changed: The feature's spec entry differs (or exists on one side only).
        vocab: Vocabulary drift (string, integer, text).
        numeric: Statistics drift (numeric).
        per_key: Per-key statistics drift (numeric features with ``per_key`` on both sides).
        per_key_buckets: Per-key boundary drift (``per_key`` and ``num_buckets`` on both
            sides), else None (left out of the JSON).
        flags: Thresholds exceeded.
        imputed: Drift of the ``impute`` value (None when neither side imputes).
        mutual_info: Ranking and label drift of a label-aware vocabulary (both sides
            with ``labels``), else None (left out of the JSON).
        target_encoding: Global mean and encoding drift of a target encoding (both sides
            with ``target_encoding``), else None (left out of the JSON).
    """

    name: str
    kind: str
    status: Status
    spec_changed: bool
    vocab: VocabDiff | None = None
    numeric: NumericDiff | None = None
    flags: tuple[Flag, ...] = ()
    imputed: ImputedDiff | None = None
    mutual_info: MutualInfoDiff | None = None
    per_key: PerKeyDiff | None = None
    per_key_buckets: BucketDiff | None = None
    target_encoding: TargetDiff | None = None


@dataclasses.dataclass(frozen=True)
class DiffReport:
    """Everything ``beam-prep diff`` found.

    Attributes:
        old: OLD directory.
        new: NEW directory.
        old_fingerprint: OLD manifest fingerprint.
        new_fingerprint: NEW manifest fingerprint.
        spec_changes: Features whose spec entry differs, in OLD then NEW order.
        features: One :class:`FeatureDiff` per feature of either side.
        thresholds: The thresholds used.
    """

    old: str
    new: str
    old_fingerprint: str
    new_fingerprint: str
    spec_changes: tuple[str, ...]
    features: tuple[FeatureDiff, ...]
    thresholds: DiffThresholds

    @property
    def flags(self) -> list[Flag]:
        """Every flag, feature by feature."""
        return [flag for f in self.features for flag in f.flags]


def spec_changes(old: Artifacts, new: Artifacts) -> tuple[str, ...]:
    """Names of the features whose spec entry differs or that exist on one side only."""
    old_specs = {f.name: f.to_dict() for f in old.spec.features}
    new_specs = {f.name: f.to_dict() for f in new.spec.features}
    names = list(old_specs) + [n for n in new_specs if n not in old_specs]
    return tuple(n for n in names if old_specs.get(n) != new_specs.get(n))


def _over(flags: list[Flag], feature: str, metric: str, value: float | None,
          threshold: float, what: str, detail: str = "") -> None:
    if value is not None and abs(value) > threshold:
        extra = f" ({detail})" if detail else ""
        flags.append(Flag(feature, metric, value, threshold,
                          f"{feature}: {what} {value:.4g} > {threshold:g}{extra}"))


def vocab_flags(name: str, d: VocabDiff, t: DiffThresholds) -> tuple[Flag, ...]:
    """Flags of one vocabulary comparison."""
    flags: list[Flag] = []
    added = (f"top added token {d.top_added[0][0]!r}, count {d.top_added[0][1]}"
             if d.top_added else "")
    _over(flags, name, "jsd", d.jsd, t.max_jsd, "JS divergence", added)
    _over(flags, name, "oov_share", d.oov_share, t.max_oov_share,
          "share of NEW values OOV under OLD's vocabulary", added)
    _over(flags, name, "size_change", d.size_change, t.max_size_change,
          "relative vocabulary size change", f"{d.old_size} -> {d.new_size} tokens")
    _over(flags, name, "top_k_index_changed_share", d.top_k_index_changed_share,
          t.max_top_k_index_changed, f"share of OLD's top {d.top_k} tokens whose index changed")
    return tuple(flags)


def numeric_flags(name: str, d: NumericDiff, t: DiffThresholds) -> tuple[Flag, ...]:
    """Flags of one numeric comparison."""
    flags: list[Flag] = []
    _over(flags, name, "mean_shift", d.mean_shift, t.max_mean_shift,
          "mean shift in OLD std units", f"mean {d.old_mean:.6g} -> {d.new_mean:.6g}"
          if d.old_mean is not None and d.new_mean is not None else "")
    _over(flags, name, "std_shift", d.std_shift, t.max_std_shift, "std shift in OLD std units")
    _over(flags, name, "boundary_shift", d.boundary_shift, t.max_boundary_shift,
          "largest quantile boundary shift in OLD std units")
    _over(flags, name, "quartile_shift", d.quartile_shift, t.max_boundary_shift,
          "largest quartile shift in OLD std units",
          f"median {d.old_quartiles[1]:.6g} -> {d.new_quartiles[1]:.6g}"
          if d.old_quartiles and d.new_quartiles else "")
    _over(flags, name, "missing_rate_change", d.missing_rate_change, t.max_rate_change,
          "missing rate change")
    _over(flags, name, "nan_rate_change", d.nan_rate_change, t.max_rate_change,
          "NaN rate change")
    _over(flags, name, "infinite_rate_change", d.infinite_rate_change, t.max_rate_change,
          "infinite rate change")
    if d.unscaled_change:
        flags.append(Flag(name, "unscaled_change", None, 0.0,
                          f"{name}: the mean, std or a boundary (or quartile) changed while OLD's "
                          "std is 0 "
                          "(or the shift overflows): no shift in OLD std units exists"))
    return tuple(flags)


def per_key_flags(name: str, d: PerKeyDiff, t: DiffThresholds) -> tuple[Flag, ...]:
    """Flags of a per-key comparison: keys added or removed (share of values), key count
    change, share of frequent keys' values whose mean moved (OLD global std units)."""
    flags: list[Flag] = []
    k = d.drift
    if k is None:
        return ()
    added = (f"top added key {shown(d.top_added[0][0], 40)}, {d.top_added[0][1]} values"
             if d.top_added else "")
    removed = (f"top removed key {shown(d.top_removed[0][0], 40)}, {d.top_removed[0][1]} "
               "values" if d.top_removed else "")
    _over(flags, name, "key_added_share", k.added_share, t.max_oov_share,
          "share of NEW values whose per_key key is not in OLD", added)
    _over(flags, name, "key_removed_share", k.removed_share, t.max_oov_share,
          "share of OLD values whose per_key key is not in NEW", removed)
    _over(flags, name, "key_count_change", k.key_count_change, t.max_size_change,
          "relative per_key key count change", f"{d.old_keys} -> {d.new_keys} keys")
    _over(flags, name, "key_mean_shifted_share", k.shifted_share, t.max_shifted_share,
          f"share of frequent keys' OLD values whose mean moved > {t.max_mean_shift:g} OLD std",
          f"{k.compared_keys} keys with >= {t.min_shift_rows} values compared, most: "
          f"{shown(k.most_shifted[0], 40)} by {k.most_shifted[1]:.4g}"
          if k.most_shifted else "")
    _over(flags, name, "key_std_shifted_share", k.std_shifted_share, t.max_shifted_share,
          f"share of frequent keys' OLD values whose std moved > {t.max_std_shift:g} of the "
          "key's OLD std", _most(k.most_std_shifted))
    _over(flags, name, "key_range_shifted_share", k.range_shifted_share, t.max_shifted_share,
          f"share of frequent keys' OLD values whose min or max moved > "
          f"{t.max_boundary_shift:g} of the key's OLD range", _most(k.most_range_shifted))
    if k.worst_std_ratio is not None:
        key, ratio, old_std, new_std = k.worst_std_ratio
        flags.append(Flag(name, "key_std_ratio_exceeded", ratio, t.max_key_std_ratio,
                          f"{name}: {_keys(k.extreme_std_keys)} with >= {t.min_key_rows} "
                          f"values on both sides whose std changed by a factor >= "
                          f"{t.max_key_std_ratio:g} (worst: {shown(key, 40)}, std "
                          f"{old_std:.4g} -> {new_std:.4g}, factor {_factor(ratio)})"))
    return tuple(flags)


def _keys(n: int) -> str:
    return f"{n} key" if n == 1 else f"{n} keys"


def _factor(x: float | None) -> str:
    return "inf" if x is None else f"{x:.4g}"


def _most(most: tuple[str, float] | None) -> str:
    return f"most: {shown(most[0], 40)} by {most[1]:.4g}" if most else ""


def bucket_flags(name: str, d: BucketDiff, t: DiffThresholds) -> tuple[Flag, ...]:
    """Flags of a per-key bucket comparison: share of frequent keys' values whose
    boundaries moved (in the key's OLD boundary range), as a global feature's are flagged."""
    flags: list[Flag] = []
    _over(flags, name, "key_boundary_shifted_share", d.shifted_share, t.max_shifted_share,
          f"share of frequent keys' OLD values whose bucket boundaries moved > "
          f"{t.max_boundary_shift:g} of the key's OLD boundary range",
          f"{d.compared_keys} keys with >= {t.min_shift_rows} values compared"
          + (f", {_most(d.most_shifted)}" if d.most_shifted else ""))
    if d.most_moved is not None:
        key, shift = d.most_moved
        flags.append(Flag(name, "key_boundary_moved", shift, t.max_key_boundary_shift,
                          f"{name}: {_keys(d.moved_keys)} with >= {t.min_key_rows} values on "
                          f"both sides whose bucket boundaries moved >= max("
                          f"{t.max_key_boundary_shift:g}, {NOISE_Z:g}*sqrt(1/n_old + 1/n_new)) "
                          f"of the key's boundary range (worst: {shown(key, 40)} by "
                          f"{_factor(shift)})"))
    return tuple(flags)


def target_flags(name: str, d: TargetDiff, t: DiffThresholds) -> tuple[Flag, ...]:
    """Flags of a target encoding: global mean shift (OLD label std units; any change when
    that std is 0), tokens added or removed (share of labelled rows), share of frequent
    tokens' rows whose encoding moved."""
    flags: list[Flag] = []
    _over(flags, name, "target_global_mean_shift", d.global_mean_shift, t.max_target_shift,
          "target encoding global mean shift in OLD label std units",
          f"mean {d.old_global_mean:.6g} -> {d.new_global_mean:.6g}, label std "
          f"{d.label_std:.4g}" if d.global_mean_shift is not None else "")
    if d.label_std is None and d.old_global_mean != d.new_global_mean:
        flags.append(Flag(name, "target_unscaled_change", None, 0.0,
                          f"{name}: the target encoding's global mean changed from "
                          f"{d.old_global_mean!r} to {d.new_global_mean!r} while OLD's label "
                          "std is 0 or unknown: no shift in label std units exists"))
    _over(flags, name, "target_token_added_share", d.added_share, t.max_oov_share,
          "share of NEW labelled rows whose token OLD's target encoding does not list")
    _over(flags, name, "target_token_removed_share", d.removed_share, t.max_oov_share,
          "share of OLD labelled rows whose token NEW's target encoding does not list")
    _over(flags, name, "target_encoding_shifted_share", d.shifted_share, t.max_shifted_share,
          f"share of frequent tokens' OLD rows whose encoding moved > {t.max_token_shift:g} "
          "label std", f"{d.compared_tokens} tokens with >= {t.min_shift_rows} rows compared, "
          f"most: {shown(d.most_shifted[0], 40)} by {d.most_shifted[1]:.4g}"
          if d.most_shifted else "")
    return tuple(flags)


def _old_std(stats: dict) -> float | None:
    variance = stats.get("variance")
    ok = isinstance(variance, (int, float)) and not isinstance(variance, bool)
    return math.sqrt(variance) if ok and variance > 0 and math.isfinite(variance) else None


def imputed_flags(name: str, d: ImputedDiff, t: DiffThresholds) -> tuple[Flag, ...]:
    """Flags of an imputed value: a numeric shift above ``max_mean_shift``, or any change
    of a categorical one (missing cells now encode as another category)."""
    flags: list[Flag] = []
    if d.strategy in ("mean", "median"):
        _over(flags, name, "imputed_shift", d.shift, t.max_mean_shift,
              f"imputed {d.strategy} shift in OLD std units",
              f"{shown(d.old, 40)} -> {shown(d.new, 40)}")
    elif d.changed:
        flags.append(Flag(name, "imputed_changed", None, 0.0,
                          f"{name}: the imputed {d.strategy or 'value'} changed from "
                          f"{shown(d.old, 40)} to {shown(d.new, 40)}: missing cells now "
                          "encode as another "
                          "category"))
    return tuple(flags)


def _with_imputed(fd: FeatureDiff, old: Artifacts, new: Artifacts,
                  t: DiffThresholds) -> FeatureDiff:
    if fd.status != "compared":
        return fd
    strategy = getattr(new.feature(fd.name), "impute", None) or getattr(
        old.feature(fd.name), "impute", None)
    d = compare_imputed(old.stats(fd.name), new.stats(fd.name), strategy)
    if d is None:
        return fd
    return dataclasses.replace(fd, imputed=d, flags=fd.flags + imputed_flags(fd.name, d, t))


def _compare_one(name: str, old: Artifacts, new: Artifacts, changed: bool,
                 t: DiffThresholds) -> FeatureDiff:
    if name not in new.feature_names:
        return FeatureDiff(name, old.feature(name).kind, "only_in_old", True)
    kind = new.feature(name).kind
    if name not in old.feature_names:
        return FeatureDiff(name, kind, "only_in_new", True)
    if old.feature(name).kind != kind:
        return FeatureDiff(name, kind, "kind_changed", True)
    if kind in VOCAB_KINDS:
        total = new.stats(name).get("total_count")
        weighted = is_weighted(old.spec.feature(name)) or is_weighted(new.spec.feature(name))
        d = compare_vocab(iter_sidecar(old, name),
                          iter_sidecar(new, name),
                          new_total=total if type(total) in (int, float) else None,
                          top_k=t.top_k, top_n=t.top_n, name=name, weighted=weighted)
        mi = compare_mutual_info(old, new, name, top_n=t.top_n)
        flags = vocab_flags(name, d, t)
        if mi is not None:
            more: list[Flag] = []
            _over(more, name, "label_share_change", mi.label_share_change, t.max_rate_change,
                  "label share change", f"label {mi.most_changed_label}")
            flags += tuple(more)
        te = compare_target(old, new, name, min_rows=t.min_shift_rows,
                            token_limit=t.max_token_shift)
        flags += target_flags(name, te, t) if te is not None else ()
        return FeatureDiff(name, kind, "compared", changed, vocab=d, flags=flags,
                           mutual_info=mi, target_encoding=te)
    if kind == "numeric":
        n = compare_numeric(old.stats(name), new.stats(name))
        keyed = None
        if all("per_key" in a.manifest["features"][name].get("files", {}) for a in (old, new)):
            keyed = compare_per_key(old.iter_lines(name, "per_key"),
                                    new.iter_lines(name, "per_key"),
                                    old_where=old.file_path(name, "per_key"),
                                    new_where=new.file_path(name, "per_key"),
                                    old_count=old.stats(name).get("key_count"),
                                    new_count=new.stats(name).get("key_count"),
                                    tally=KeyDriftTally(_old_std(old.stats(name)),
                                                        t.min_shift_rows, t.max_mean_shift,
                                                        t.max_std_shift,
                                                        t.max_boundary_shift,
                                                        min_key_rows=t.min_key_rows,
                                                        std_ratio=t.max_key_std_ratio))
        buckets = compare_bucket_files(old, new, name, min_rows=t.min_shift_rows,
                                       limit=t.max_boundary_shift,
                                       min_key_rows=t.min_key_rows,
                                       key_shift=t.max_key_boundary_shift)
        flags = (numeric_flags(name, n, t) + (per_key_flags(name, keyed, t) if keyed else ())
                 + (bucket_flags(name, buckets, t) if buckets else ()))
        return FeatureDiff(name, kind, "compared", changed, numeric=n,
                           flags=flags, per_key=keyed, per_key_buckets=buckets)
    return FeatureDiff(name, kind, "nothing_to_compare", changed)


def diff_artifacts(old_dir: str, new_dir: str, *, thresholds: DiffThresholds | None = None,
                   allow_spec_change: bool = False, verify: bool = False) -> DiffReport:
    """Compares two artifact directories (local or ``gs://``).

    Args:
        old_dir: The reference directory (e.g. yesterday's).
        new_dir: The directory to check against it.
        thresholds: Flag thresholds (defaults: :class:`DiffThresholds`).
        allow_spec_change: Compare even when the specs differ (features on one side only
            are listed, not compared; a feature whose kind changed is not compared).
        verify: Re-hash every file of both directories against its manifest first.

    Returns:
        The :class:`DiffReport`.

    Raises:
        ArtifactError: A directory is not a complete, valid artifact directory.
        SpecError: The specs differ and ``allow_spec_change`` is False.
    """
    t = thresholds or DiffThresholds()
    old, new = Artifacts(old_dir, verify=verify), Artifacts(new_dir, verify=verify)
    changes = spec_changes(old, new)
    if changes and not allow_spec_change:
        raise SpecError(
            f"The artifact directories were analysed with different specs; these features "
            f"differ: {list(changes)}. Received: OLD={old_dir!r}, NEW={new_dir!r}. Fix: compare "
            "artifacts of the same spec, or pass --allow_spec_change (allow_spec_change=True) "
            "to compare the features both sides share.")
    names = list(old.feature_names) + [n for n in new.feature_names
                                       if n not in old.feature_names]
    features = tuple(_with_imputed(_compare_one(n, old, new, n in changes, t), old, new, t)
                     for n in names)
    return DiffReport(old=old_dir, new=new_dir, old_fingerprint=old.fingerprint,
                      new_fingerprint=new.fingerprint, spec_changes=changes,
                      features=features, thresholds=t)
