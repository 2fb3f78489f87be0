"""Which Keras backend a training run uses, decided before Keras is imported.

Keras reads ``KERAS_BACKEND`` once, when it is first imported, so ``beam-prep train`` loads
the config, resolves ``distribution.backend`` here (this module imports neither Keras nor
TensorFlow), sets the variable, and only then imports the launcher.

=====================  ===============================================================
``backend``            Keras backend
=====================  ===============================================================
``auto`` (default)     ``KERAS_BACKEND`` if set, else ``tensorflow``
``tensorflow``         TensorFlow: ``tf.distribute`` strategies (:mod:`.strategy`)
``jax``                JAX: ``keras.distribution`` (:mod:`.jax_backend`); TensorFlow
                       still runs the input pipeline (``tf.data``, ELWC reader, lookups)
=====================  ===============================================================

Example:
    >>> resolve_backend("auto", env={})
    'tensorflow'
    >>> resolve_backend("auto", env={"KERAS_BACKEND": "jax"})
    'jax'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from beam_prep.errors import SpecError
from beam_prep.ranking.train.hparams import RankingHparams, check_backend_strategy

SUPPORTED = ("tensorflow", "jax")


def resolve_backend(configured: str, env: Mapping[str, str] | None = None) -> str:
    """The backend name for ``distribution.backend`` (``auto`` reads ``KERAS_BACKEND``).

    Raises:
        SpecError: ``KERAS_BACKEND`` names a backend the launcher does not run on.
    """
    env = os.environ if env is None else env
    if configured != "auto":
        return configured
    name = env.get("KERAS_BACKEND", "").strip() or "tensorflow"
    if name not in SUPPORTED:
        raise SpecError(f"KERAS_BACKEND={name!r} is not a backend of the ranking launcher. Use "
                        "'tensorflow' or 'jax' (or set `distribution.backend`).")
    return name


def use_backend(hparams: RankingHparams) -> str:
    """Sets ``KERAS_BACKEND`` for ``hparams`` before Keras is imported; returns the name.

    Raises:
        SpecError: The strategy does not run on that backend, the JAX backend is asked for
            but ``jax`` is not installed, or Keras is already imported with another backend.
    """
    name = resolve_backend(hparams.distribution.backend)
    check_backend_strategy(name, hparams.distribution.strategy)
    if name == "jax":
        import importlib.util

        if importlib.util.find_spec("jax") is None:
            raise SpecError("`distribution.backend` is 'jax' but jax is not installed. Install "
                            "it with `pip install beam-prep[jax]` (or `pip install jax`).")
    keras = sys.modules.get("keras")
    if keras is not None:
        current = keras.backend.backend()
        if current != name:
            raise SpecError(f"Keras is already imported with the {current!r} backend but the "
                            f"config asks for {name!r}. Set KERAS_BACKEND={name} before "
                            "importing Keras (or run `beam-prep train`).")
    os.environ["KERAS_BACKEND"] = name
    return name


def make_launcher(hparams: RankingHparams, **kwargs: Any) -> Any:
    """The launcher of the running Keras backend (arguments of ``RankingLauncher``).

    ``JaxRankingLauncher`` (:mod:`.jax_backend`) on JAX, ``RankingLauncher`` on TensorFlow.
    Call :func:`use_backend` first when Keras may not be imported yet.
    """
    import keras

    if keras.backend.backend() == "jax":
        from beam_prep.ranking.train.jax_backend import JaxRankingLauncher

        return JaxRankingLauncher(hparams, **kwargs)
    from beam_prep.ranking.train.launcher import RankingLauncher

    return RankingLauncher(hparams, **kwargs)
