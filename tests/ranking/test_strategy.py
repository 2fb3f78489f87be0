"""Strategies: TPU readiness without a TPU, Mirrored (2 logical CPUs), MultiWorker (2 processes)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from beam_prep.errors import SpecError
from beam_prep.io.contract.artifacts import (
    FORMAT_NAME,
    FORMAT_VERSION,
    Artifacts,
    canonical_json,
    manifest_fingerprint,
)
from beam_prep.ranking.train.embeddings import table_rows
from beam_prep.ranking.train.hparams import RankingHparams
from beam_prep.ranking.train.launcher import RankingLauncher
from beam_prep.ranking.train.strategy import resolve_loop, validate_tpu_settings
from beam_prep.spec import Spec, StringFeature
from tests.ranking.train_fixtures import SPEC, config_yaml, copy_sample, elwc_parse_fn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = dict(list_size=8, drop_remainder=True, global_batch_size=16, num_replicas=8,
            steps_per_execution=1, loop="fit")


@pytest.mark.parametrize("change,match", [
    ({"list_size": None}, r"set `data.list_size`"),
    ({"drop_remainder": False}, r"`data.drop_remainder: true`"),
    ({"global_batch_size": 12}, r"train_batch_size=12; use a multiple of 8"),
    ({"steps_per_execution": 4}, r"set `training.loop: custom`"),
    ({"element_spec": {"x": tf.TensorSpec([None, 8], tf.float32)}}, r"static shapes.*'x'"),
    ({"element_spec": {"s": tf.TensorSpec([16, 8], tf.string)}}, r"cannot take strings"),
    ({"element_spec": {"r": tf.RaggedTensorSpec([16, None], tf.int32)}}, r"dense tensors"),
])
def test_tpu_validation_names_the_setting(change, match):
    validate_tpu_settings(**GOOD)
    with pytest.raises(SpecError, match=match):
        validate_tpu_settings(**{**GOOD, **change})


def test_loop_resolution():
    assert resolve_loop("auto", "multi_worker", 1) == "custom"
    assert resolve_loop("auto", "tpu", 4) == "custom"
    assert resolve_loop("auto", "default", 4) == "fit"
    with pytest.raises(SpecError, match="loop='fit'"):
        resolve_loop("fit", "multi_worker", 1)


def _artifacts(tmp_path, vocab_path, *, num_oov=3, mask=""):
    """A minimal artifact directory (manifest + vocab) for both token features."""
    tokens = open(vocab_path).read().split("\n")[:-1]
    root = tmp_path / "artifacts"
    (root / "vocab").mkdir(parents=True)
    feats = {}
    for name in ("query_tokens", "document_tokens"):
        files = {}
        for role, rel, body in (
                ("vocabulary", f"vocab/{name}.txt", "".join(t + "\n" for t in tokens)),
                ("counts", f"vocab/{name}.counts.jsonl",
                 "".join(json.dumps([t, 1]) + "\n" for t in tokens))):
            data = body.encode("utf-8")
            (root / rel).write_bytes(data)
            files[role] = {"path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                           "bytes": len(data)}
        feats[name] = {"kind": "string", "stats": {"vocabulary_size": len(tokens)},
                       "files": files}
    spec = Spec(tuple(StringFeature(n, num_oov_indices=num_oov, mask_token=mask)
                      for n in ("query_tokens", "document_tokens")))
    manifest = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                "spec": spec.to_dict(), "features": feats}
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    (root / "manifest.json").write_bytes(canonical_json(manifest))
    return str(root), len(tokens)


def test_tpu_settings_static_dataset_table_sizes_and_jit_proxy(tmp_path):
    paths = copy_sample(tmp_path)
    art_path, n_tokens = _artifacts(tmp_path, paths["vocab"])
    art = Artifacts(art_path)
    # rows = tokens + 3 OOV slots + 1 mask slot, read from the files (never hard-coded)
    assert table_rows(art, "query_tokens") == n_tokens + 3 + 1
    layers = {n: keras.layers.StringLookup(vocabulary=art.vocabulary_path(n), num_oov_indices=3,
                                           mask_token="", name=f"{n}_lookup")
              for n in ("query_tokens", "document_tokens")}
    rows = {n: table_rows(art, n) for n in layers}
    assert all(rows[n] == layers[n].vocabulary_size() for n in layers)

    hp = RankingHparams.from_yaml_text(
        config_yaml(paths, str(tmp_path / "m"), strategy="default", batch=2),
        overrides=["model.distributed_embedding_min_rows=0", "training.steps_per_execution=2",
                   "training.loop=custom"])
    launcher = RankingLauncher(hp, layers=layers, vocab_rows=rows,
                               parse_fn=elwc_parse_fn(SPEC, 4))
    ds = launcher.datasets.train_dataset()
    # The TPU checks pass on this dataset: dense, static (batch axis included), no strings.
    validate_tpu_settings(list_size=4, drop_remainder=True, global_batch_size=2, num_replicas=2,
                          steps_per_execution=2, loop="custom", element_spec=ds.element_spec)
    feats_spec = ds.element_spec[0]
    assert feats_spec["document_tokens"].shape == (2, 4, 6)
    assert feats_spec["query_tokens"].shape == (2, 6)
    assert ds.element_spec[1].shape == (2, 4)
    # Ragged ids are shifted by one (0 = padding): table rows + 1.
    assert launcher.preprocessor.id_rows == {n: r + 1 for n, r in rows.items()}

    model = launcher.build_model(ds.element_spec)
    emb = model.get_layer("scorer").embeddings
    assert set(emb.distributed_names) == {"query_tokens", "document_tokens"}
    configs = emb.feature_configs()
    assert configs["document_tokens"].input_shape == (2 * 4, 6)   # global batch x list, seq
    assert configs["query_tokens"].input_shape == (2, 6)
    assert configs["document_tokens"].table.vocabulary_size == rows["document_tokens"] + 1
    # jit_compile proxy: Keras silently turns jit off when a layer cannot compile.
    model.compile(optimizer="adam", loss="mse", jit_compile=True)
    assert model.jit_compile is True
    batch = next(iter(ds))
    model.train_on_batch(*batch)
    assert model.jit_compile is True


def _run(args, env=None, timeout=240):
    e = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "tests.ranking.strategy_worker", *args],
                            cwd=ROOT, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _result(proc, timeout=300):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    line = [x for x in out.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.slow  # default suite time; the JAX data-parallel twin stays
def test_mirrored_two_logical_cpus_matches_single_device(tmp_path):
    res = _result(_run(["mirrored", str(tmp_path)]))
    assert res["mirrored"]["replicas"] == 2 and res["default"]["replicas"] == 1
    assert res["mirrored"]["steps"] == res["default"]["steps"] == 1
    for a, b in zip(res["mirrored"]["weights"], res["default"]["weights"]):
        np.testing.assert_allclose(np.array(a), np.array(b), atol=1e-6)
    # Weight averaging (test_weight_averaging checks the single device against numpy).
    assert res["mirrored_ema"]["steps"] == res["default_ema"]["steps"] == 3
    assert res["mirrored_ema"]["averaging"] == res["default_ema"]["averaging"] == "on"
    for a, b in zip(res["mirrored_ema"]["weights"], res["default_ema"]["weights"]):
        np.testing.assert_allclose(np.array(a), np.array(b), atol=1e-6)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # default suite time; covered by the TF / single-device twins
def test_multi_worker_two_local_processes_custom_loop(tmp_path):
    workers = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    procs = []
    for i in range(2):
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}}
        procs.append(_run(["multi_worker", str(tmp_path / f"w{i}")],
                          env={"TF_CONFIG": json.dumps(tf_config)}))
    results = [_result(p)["multi_worker"] for p in procs]
    assert [r["chief"] for r in results] == [True, False]
    for r in results:
        assert r["replicas"] == 2 and r["steps"] == 1 and r["loop"] == "custom"
    # Synchronous training: both workers hold the same weights after the step.
    for a, b in zip(results[0]["weights"], results[1]["weights"]):
        np.testing.assert_allclose(np.array(a), np.array(b), atol=1e-7)
    assert os.path.isdir(tmp_path / "w0" / "model_multi_worker" / "ckpt")
    assert not os.path.exists(tmp_path / "w1" / "model_multi_worker" / "ckpt")
