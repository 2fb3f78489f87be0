"""The transform job's numpy twins: one registered encoder per layer class the plan emits."""

from __future__ import annotations

import ast
import pathlib

import pytest

from beam_prep.transform.layers import ENCODERS

CODEGEN = pathlib.Path(__file__).resolve().parents[2] / "beam_prep" / "codegen"
#: Applied before the chains (transform.values.fill_missing, feature_value), not as layers.
NOT_CHAINED = {"FillMissing", "DerivedFeature"}


def _emitted_classes() -> set[str]:
    """The layer classes the code generator can plan: every string in ``codegen/`` that names
    a Keras layer, and beam_prep's own layer classes (the ``*_CLASS`` constants and
    ``NUMERIC_LAYER_CLASSES``)."""
    import keras

    from beam_prep.codegen import (
        derived_plan,
        list_plan,
        per_key_bucket_plan,
        per_key_plan,
        plan_types,
        scaling_plan,
    )

    classes = set(scaling_plan.NUMERIC_LAYER_CLASSES)
    classes |= {getattr(m, name) for m in (derived_plan, list_plan, per_key_bucket_plan,
                                            per_key_plan, plan_types, scaling_plan)
                for name in dir(m) if name.endswith("_CLASS")}
    for path in CODEGEN.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.isidentifier() and node.value[:1].isupper()
                    and isinstance(getattr(keras.layers, node.value, None), type)):
                classes.add(node.value)
    return classes


def test_every_emitted_layer_class_has_an_encoder():
    emitted = _emitted_classes()
    # The scan sees the classes of each family (lookups, text, numeric, list, per-key, target).
    assert {"StringLookup", "IntegerLookup", "TextVectorization", "Discretization",
            "HashedCrossing", "Activation", "PerKeyBucketize", "ListEncoding", "Embedding",
            "MissingIndicator"} <= emitted
    missing = sorted(emitted - NOT_CHAINED - set(ENCODERS))
    assert missing == [], f"layer classes without a transform encoder: {missing}"


def test_an_unknown_layer_class_names_itself():
    from beam_prep.codegen.plan import LayerPlan
    from beam_prep.transform.layers import BatchEncoder

    enc = BatchEncoder.__new__(BatchEncoder)
    with pytest.raises(NotImplementedError, match="'Mystery'"):
        enc._layer(LayerPlan("Mystery", "x_mystery", ()), None, None)
