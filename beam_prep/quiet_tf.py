"""Import TensorFlow without its start-up lines on a CPU machine (the CLI's quiet start).

TensorFlow 2.21 logs through absl from C++ when it loads: "All log messages before
absl::InitializeLog() ...", "oneDNN custom operations are on ...", "Could not find cuda
drivers ...". ``TF_CPP_MIN_LOG_LEVEL=2`` no longer hides them (checked with TF 2.21), and they
are written to file descriptor 2 directly, so Python's ``sys.stderr`` cannot filter them.

:func:`import_tensorflow_quietly` therefore points descriptor 2 at a temporary file while
``import tensorflow`` runs, then writes back every captured line that is *not* one of the
known start-up notices (:data:`STARTUP_NOISE`): real warnings and errors still appear. It
changes no setting: oneDNN stays on (``TF_ENABLE_ONEDNN_OPTS`` is not touched, so numerics are
those of a plain ``import tensorflow``), the GPU probe still runs. ``BEAM_PREP_TF_LOGS=1``
turns the filter off.

Some notices come later, when TensorFlow first touches the devices or a dataset ("failed call
to cuInit", "TFRecordDataset `buffer_size` is unspecified"). :func:`native_stderr_filtered`
covers a whole run: descriptor 2 becomes a pipe, and a thread copies every line that is not a
known notice to the real stderr as it arrives (``beam-prep train`` runs inside it).

Example:
    >>> tf = import_tensorflow_quietly()                     # doctest: +SKIP
    >>> with native_stderr_filtered():                        # doctest: +SKIP
    ...     train()
    >>> is_startup_noise("I0000 00:00:1 1 port.cc:153] oneDNN custom operations are on.")
    True
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

#: Patterns of the start-up notices hidden (matched anywhere in a line).
STARTUP_NOISE: tuple[str, ...] = (
    r"All log messages before absl::InitializeLog\(\) is called are written to STDERR",
    r"\] oneDNN custom operations are on",
    r"cudart_stub\.cc:\d+\] Could not find cuda drivers",
    r"cuda_(?:executor|diagnostics|fft|dnn|blas)\.cc:\d+\]",
    r"Unable to register cu(?:DNN|FFT|BLAS) factory",
    r"computation placer already registered",
    r"This TensorFlow binary is optimized to use available CPU instructions",
    r"To enable the following instructions: .* rebuild TensorFlow",
    r"TF-TRT Warning: Could not find TensorRT",
    r"failed call to cuInit",
    r"cpu_feature_guard\.cc:\d+\]",
    r"TFRecordDataset `buffer_size` is unspecified",
)
_NOISE = re.compile("|".join(STARTUP_NOISE))


def is_startup_noise(line: str) -> bool:
    """True for one of TensorFlow's known start-up notices."""
    return bool(_NOISE.search(line))


def import_tensorflow_quietly() -> Any:
    """``import tensorflow`` with its start-up notices removed from stderr; returns the module.

    A second call (or TensorFlow already imported) is a plain import.
    """
    if "tensorflow" in sys.modules or os.environ.get("BEAM_PREP_TF_LOGS") == "1":
        import tensorflow

        return tensorflow
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # still honoured by older builds
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [line for line in captured.read().decode("utf-8", "replace").splitlines()
                    if line.strip() and not is_startup_noise(line)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")
    return tensorflow


@contextlib.contextmanager
def native_stderr_filtered() -> Iterator[None]:
    """Within the block, lines written to descriptor 2 that are known notices are dropped.

    Everything else (Python's ``sys.stderr`` included) reaches the real stderr, line by line,
    in order. ``BEAM_PREP_TF_LOGS=1`` turns the filter off.
    """
    if os.environ.get("BEAM_PREP_TF_LOGS") == "1":
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def pump() -> None:
        with os.fdopen(read_end, "rb") as source:
            for raw in source:
                if not is_startup_noise(raw.decode("utf-8", "replace")):
                    os.write(saved, raw)

    thread = threading.Thread(target=pump, name="beam_prep-stderr", daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # closes the pipe's last write end: the pump sees the end
        thread.join(timeout=10)
        os.close(saved)
