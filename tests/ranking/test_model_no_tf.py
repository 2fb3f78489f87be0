"""The ranking model, its scorers, losses, metrics and input transforms run without TensorFlow.

A subprocess on the JAX backend blocks every import of ``tensorflow`` (a ``sys.meta_path``
finder that raises ImportError), imports the model-side modules, builds the dnn, dasalc and
piecewise-linear + feature-embedding models and takes a real training step with the ranking
loss and metrics. The import-linter contract ``ranking-model-no-tf`` (``.importlinter``) states
the same rule statically.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BLOCK = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = ("tensorflow", "tensorflow_serving", "tf_keras", "tfx_bsl", "apache_beam")

    class _Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, _Block())
""")

MODULES = (
    "beam_prep.ranking.train.model",
    "beam_prep.ranking.train.mask",
    "beam_prep.ranking.train.embeddings",
    "beam_prep.ranking.train.losses",
    "beam_prep.ranking.train.metrics",
    "beam_prep.ranking.train.optimizers",
    "beam_prep.ranking.train.scorers",
    "beam_prep.ranking.train.scorers.dasalc",
    "beam_prep.ranking.train.scorers.ensemble",
    "beam_prep.ranking.train.scorers.feature_dropout",
    "beam_prep.ranking.train.scorers.feature_embedding",
    "beam_prep.ranking.train.scorers.input_stats",
    "beam_prep.codegen.numeric_layers",
)

SCRIPT = BLOCK + textwrap.dedent("""
    import importlib, json
    import numpy as np
    for m in MODULES:
        importlib.import_module(m)
    import keras
    from beam_prep.codegen.numeric_layers import numpy_stats
    from beam_prep.ranking.train.hparams import ModelHparams
    from beam_prep.ranking.train.losses import get_loss
    from beam_prep.ranking.train.metrics import ranking_metrics
    from beam_prep.ranking.train.model import ModelInputs, RankingModelBuilder
    from beam_prep.ranking.train.scorers import input_transforms, scorer_class

    rng = np.random.default_rng(0)
    x = {"f": rng.normal(size=(4, 3, 2)).astype("float32"),
         "__mask__": np.array([[1, 1, 0]] * 4, "float32")}
    y = np.array([[1.0, 0.0, -1.0]] * 4, "float32")
    losses = {}
    for scorer, transform, dim in (("dnn", "none", 0), ("dasalc", "log1p", 0),
                                   ("dnn", "piecewise_linear", 4)):
        hp = ModelHparams(scorer=scorer, hidden_sizes=(4,), attention_dim=4, attention_layers=1,
                          input_transform=transform, piecewise_bins=4,
                          feature_embedding_dim=dim)
        names = ("f", "__mask__") if scorer == "dasalc" else ("f",)
        stats = {"f": numpy_stats(x["f"].reshape(-1, 2), 4)}
        builder = RankingModelBuilder(
            ModelInputs(context_names=(), example_names=names, list_size=3), hp,
            scorer_cls=scorer_class(scorer), transforms=input_transforms(hp, ("f",), stats))
        model = builder.build({k: v for k, v in x.items() if k in names})
        model.compile(optimizer="adam", loss=get_loss("softmax"),
                      metrics=ranking_metrics([2]))
        logs = model.train_on_batch({k: x[k] for k in names}, y, return_dict=True)
        losses[f"{scorer}/{transform}"] = sorted(logs)
    tf_loaded = sorted(m for m in sys.modules if m.split(".")[0] == "tensorflow")
    print(json.dumps({"backend": keras.backend.backend(), "logs": losses,
                      "tf": tf_loaded}))
""")


# slow (default suite time: ~20 s of JAX compiles); `make test` keeps the rule through the
# import-linter contract ranking-model-no-tf (its lint step), a static twin of this run
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
def test_model_side_imports_and_trains_without_tensorflow():
    code = f"MODULES = {MODULES!r}\n" + SCRIPT
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["backend"] == "jax"
    assert out["tf"] == []
    for logs in out["logs"].values():
        assert logs == ["loss", "mrr_2", "ndcg_2"]


def test_blocker_really_blocks_tensorflow():
    """The finder is effective: importing tensorflow under it fails (else the test proves
    nothing)."""
    code = BLOCK + "import tensorflow\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "blocked in this test" in proc.stderr
