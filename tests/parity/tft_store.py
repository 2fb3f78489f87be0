"""TF Transform's outputs for the parity tests, kept beside them.

Each parity test compares ``beam-prep analyze`` with a run of ``tensorflow_transform`` on the
same generated rows. The TFT run takes about a minute of CPU per reference (Beam pipeline,
SavedModel export), so the default suite reads TFT's outputs from
``tests/parity/tft_store/<name>/``: the files TFT itself wrote from those very inputs, with the
sha256 of the input files beside them (``inputs.sha256``). On every run the inputs are
regenerated and hashed; a stored reference whose digest differs is never used.

``BEAM_PREP_TFT`` chooses what happens:

* unset or ``stored``: use the stored outputs; a stale or missing store fails with the
  command that refreshes it;
* ``live``: run TFT, use its outputs;
* ``check``: run TFT and fail unless its outputs are byte-identical to the store (the slow
  test ``test_tft_store.py`` runs the parity tests this way);
* ``refresh``: run TFT and rewrite the store.

Stored layout: ``assets/`` (the files of ``transform_fn/assets``, for the references that
export a transform), ``results.json`` when the reference writes one (its machine-specific path
keys removed) and any extra files the reference writes (``data.tfrecord``, the per-key
references' ``tft.json``). The per-key parity tests in ``tests/per_key`` use the same store.

Example:
    >>> mode()  # doctest: +SKIP
    'stored'
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

STORE = Path(__file__).with_name("tft_store")
MODES = ("stored", "live", "check", "refresh")
_PATH_KEYS = ("assets", "assets_dir", "transform_dir")
REFRESH = ("BEAM_PREP_TFT=refresh python -m pytest -m 'not runners' tests/parity "
           "tests/per_key/test_per_key_tft_parity.py "
           "tests/per_key/test_per_key_buckets_tft_parity.py")


def mode() -> str:
    """The store mode named by ``BEAM_PREP_TFT`` (``stored`` when unset)."""
    value = os.environ.get("BEAM_PREP_TFT", "stored") or "stored"
    if value not in MODES:
        raise ValueError(f"BEAM_PREP_TFT={value!r}: use one of {', '.join(MODES)}")
    return value


def _digest(inputs: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for path in inputs:
        data = path.read_bytes()
        h.update(path.name.encode("utf-8") + b"\0" + str(len(data)).encode("ascii") + b"\0")
        h.update(data)
    return h.hexdigest()


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _normalise(live: Path, assets: Path | None, extra: Sequence[str], out: Path) -> None:
    """Copy a live run's outputs into the stored layout under ``out``."""
    if assets is not None:
        shutil.copytree(assets, out / "assets")
    results = live / "results.json"
    if results.exists():
        data = json.loads(results.read_text(encoding="utf-8"))
        for key in _PATH_KEYS:
            data.pop(key, None)
        (out / "results.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n",
                                          encoding="utf-8")
    for name in extra:
        shutil.copyfile(live / name, out / name)


def reference(name: str, script: str | Path, args: Sequence[str], *, inputs: Sequence[Path],
              root: Path, assets: Callable[[Path, str], Path] | None,
              extra: Sequence[str] = ()) -> Path:
    """TFT's outputs for one parity test, stored or live per :func:`mode`.

    Args:
        name: the store folder, ``tests/parity/tft_store/<name>``.
        script: the reference script, a path or a name beside this module (runs TFT in its
            own process: importing tensorflow_transform flips ``tf.keras`` for the whole
            process).
        args: its arguments; ``{out}`` in one stands for the live output folder.
        inputs: the input files the script reads; their digest keys the store.
        root: a scratch folder for a live run.
        assets: given the live output folder and the script's stdout, the folder holding
            TFT's ``transform_fn/assets``; None for a reference that writes only ``extra``
            files (the per-key references write their transformed values as JSON).
        extra: other files the script writes into its output folder, kept in the store.

    Returns:
        A folder in the stored layout (``assets/``, ``results.json``, ``extra`` files).
    """
    stored = STORE / name
    digest = _digest(inputs)
    how = mode()
    if how == "stored":
        key = stored / "inputs.sha256"
        if not key.exists() or key.read_text(encoding="ascii").strip() != digest:
            pytest.fail(f"the stored TF Transform reference {stored} does not match this "
                        f"test's inputs (they changed): refresh it with `{REFRESH}`")
        return stored
    live = root / "tft_live"
    live.mkdir()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    argv = [a.replace("{out}", str(live)) for a in args]
    path = script if isinstance(script, Path) else Path(__file__).with_name(script)
    proc = subprocess.run([sys.executable, str(path), *argv],
                          env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"TFT reference failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    out = root / "tft_normalised"
    out.mkdir()
    _normalise(live, None if assets is None else assets(live, proc.stdout), extra, out)
    (out / "inputs.sha256").write_text(digest + "\n", encoding="ascii")
    if how == "check":
        theirs, ours = _tree(out), (_tree(stored) if stored.exists() else {})
        differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
        assert not differ, f"stored TFT outputs differ from a live TFT run: {differ}"
    elif how == "refresh":
        shutil.rmtree(stored, ignore_errors=True)
        shutil.copytree(out, stored)
    return out
