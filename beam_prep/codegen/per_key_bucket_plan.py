"""The per-key buckets of a numeric feature with ``per_key`` and ``num_buckets``.

``<name>_bucket`` is then ``PerKeyBucketize <feature>_per_key_bucketize`` on the tuple
``(value, key)`` (data stage, int32): the key is looked up in the bucket file's keys
(row 0 for an unknown or missing key: the global boundaries; row ``i + 1`` for the file's
key ``i``) and the bucket is the number of that row's boundaries ``b`` with
``not x < b`` in float32, as ``Discretization`` counts them (TF Transform's
``bucketize_per_key``, which gives -1 for an unknown key). This module imports neither
Keras nor TensorFlow.

Example:
    >>> padded_rows([1.0], [[2.0, 3.0]], 2)
    ([[1.0, 0.0], [2.0, 3.0]], [1, 2])
"""

from __future__ import annotations

from typing import Any

from beam_prep.codegen.plan_types import BUCKET_SUFFIX, LayerPlan, OutputPlan, PerKeyState
from beam_prep.io.contract.per_key_buckets_file import ROLE

BUCKET_LAYER_CLASS = "PerKeyBucketize"


def bucket_fields(art: Any, f: Any) -> dict[str, Any]:
    """The :class:`~beam_prep.codegen.plan_types.KeyPlan` fields of per-key buckets
    (none without ``num_buckets``)."""
    if f.num_buckets is None:
        return {}
    stats = art.stats(f.name)
    bounds = stats.get("boundaries") if int(stats.get("count") or 0) else None
    return {"buckets": art.relpath(f.name, ROLE), "num_buckets": int(f.num_buckets),
            "global_boundaries": tuple(float(b) for b in bounds or ())}


def bucket_outputs(f: Any, fp: Any) -> list[OutputPlan]:
    """``[<name>_bucket]`` by ``PerKeyBucketize`` (empty without ``num_buckets``)."""
    if f.num_buckets is None:
        return []
    layer = LayerPlan(BUCKET_LAYER_CLASS, f"{f.name}_per_key_bucketize",
                      (("keys", PerKeyState("bucket_keys")),
                       ("boundaries", PerKeyState("boundaries")),
                       ("lengths", PerKeyState("lengths"))))
    return [OutputPlan(f.name + BUCKET_SUFFIX, (layer,), stage="data", dtype="int32")]


def bucket_summary(f: Any) -> str:
    """The summary sentence part of per-key buckets (empty without ``num_buckets``)."""
    if f.num_buckets is None:
        return ""
    return (f"; {f.name + BUCKET_SUFFIX!r}: {f.num_buckets} buckets per key (the global "
            "boundaries for an unknown or missing key)")


def padded_rows(global_boundaries: Any, rows: Any, width: int
                ) -> tuple[list[list[float]], list[int]]:
    """Row 0 (the global boundaries, zero-padded to ``width``) and the keys' rows, with
    each row's number of real boundaries."""
    first = [float(b) for b in global_boundaries]
    return ([first + [0.0] * (width - len(first)), *[[float(b) for b in r] for r in rows]],
            [len(first), *[width] * len(rows)])


def bucket_state(art: Any, name: str, key: Any) -> dict[str, list]:
    """``bucket_keys``, ``boundaries`` and ``lengths`` from the checked bucket file (the
    same values as the generated ``_per_key_bucket_state``); empty without buckets."""
    if key.buckets is None:
        return {}
    from beam_prep.io.contract.per_key_buckets_file import read_buckets

    table = read_buckets(art, name)
    rows, lengths = padded_rows(key.global_boundaries, table.boundaries.tolist(),
                                key.num_buckets - 1)
    return {"bucket_keys": table.keys, "boundaries": rows, "lengths": lengths}
