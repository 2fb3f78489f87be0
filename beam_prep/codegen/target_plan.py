"""The layers of a target-encoded feature's ``<name>_target_encoding`` output.

A lookup over the tokens of ``vocab/<name>.target.jsonl`` (a list read at build time, so
any token, even one a line-based vocabulary file cannot hold, is matched exactly; one OOV
slot, index 0, with an OOV token no real value can equal), then a frozen one-column
``Embedding`` holding ``[global_mean, encoding(token 1), ...]`` as float32, reshaped to
``(batch, 1)``. OOV and missing values get the global mean. An empty file becomes the
one-token sentinel vocabulary of the other lookups (both rows then hold the global mean).

Example:
    >>> target_output(art, feature, "StringLookup")               # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from beam_prep.codegen.plan_types import (
    TARGET_OOV_INTEGER,
    TARGET_OOV_TOKEN,
    TARGET_SUFFIX,
    LayerPlan,
    OutputPlan,
    TargetPlan,
    TargetState,
)

__all__ = ["target_output"]


def target_output(art: Any, f: Any, cls: str) -> tuple[OutputPlan, TargetPlan]:
    """The output and the build-time state of ``f``'s target encoding.

    Args:
        art: The opened artifact directory.
        f: A string or integer feature with ``target_encoding``.
        cls: ``StringLookup`` or ``IntegerLookup``.
    """
    stats = art.stats(f.name)["target_encoding"]
    integer = cls == "IntegerLookup"
    mean = stats["global_mean"]
    plan = TargetPlan(art.relpath(f.name, "target_encoding"), integer,
                      float(mean) if mean is not None else 0.0)
    rows = 1 + max(int(stats["tokens"]), 1)
    layers = (
        LayerPlan(cls, f"{f.name}_target_lookup",
                  (("vocabulary", TargetState("vocabulary")), ("num_oov_indices", 1),
                   ("oov_token", TARGET_OOV_INTEGER if integer else TARGET_OOV_TOKEN),
                   ("output_mode", "int"))),
        LayerPlan("Embedding", f"{f.name}_target_table",
                  (("input_dim", rows), ("output_dim", 1),
                   ("weights", TargetState("values")), ("trainable", False))),
        LayerPlan("Reshape", f"{f.name}_target_flatten", (("target_shape", [1]),)),
    )
    return OutputPlan(f.name + TARGET_SUFFIX, layers, dtype="float32"), plan
