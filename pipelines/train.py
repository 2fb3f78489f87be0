"""`beam-prep train`: train a ranking model on ELWC data, then export it.

Usage::

    beam-prep train --config train.yaml [section.key=value ...]
    python -m beam_prep.pipelines.train --config train.yaml training.loss=list_mle

Overrides use YAML values (``model.hidden_sizes=[64,32]``). The run resumes from the state in
``training.model_dir``; the SavedModel goes to ``training.export_dir``.

Output: a line per epoch on stderr (loss, metrics, seconds; ``--verbose`` shows Keras' own
progress bar instead), then the run summary on stdout (``--summary_json FILE`` writes it as
JSON, also on failure). ``--quiet`` prints neither. Building the parser imports neither
TensorFlow nor Keras, so ``--help`` is fast.

Example:
    >>> run(["--config", "examples/train.yaml", "training.epochs=1"])   # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from beam_prep.errors import BeamPrepError, InputError
from beam_prep.run_summary import SummaryRecorder, add_summary_flag


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="beam-prep train", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="YAML training config (see docs/training.md)")
    p.add_argument("overrides", nargs="*", help="section.key=value overrides")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--verbose", action="store_true",
                     help="Show Keras' own progress bar (fit loop) instead of one line per "
                          "epoch.")
    out.add_argument("--quiet", action="store_true",
                     help="Print neither the epoch lines nor the summary.")
    add_summary_flag(p)
    return p


def run(argv: Sequence[str] | None = None) -> Any:
    """Parses ``argv``, trains, exports; returns the launcher's ``TrainResult``."""
    return _train(_parser().parse_args(list(sys.argv[1:] if argv is None else argv)))[0]


def _train(args: argparse.Namespace) -> tuple[Any, Any, list[int]]:
    """Loads the config and trains; returns ``(TrainResult, RankingHparams, epochs run)``
    (0-based epoch indexes, counted from the restored state)."""
    from beam_prep.quiet_tf import import_tensorflow_quietly
    from beam_prep.ranking.train.backend import make_launcher, use_backend
    from beam_prep.ranking.train.epoch_log import EpochPrinter
    from beam_prep.ranking.train.hparams import RankingHparams

    try:
        hparams = RankingHparams.load(args.config, overrides=args.overrides)
    except BeamPrepError:
        raise
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise InputError(f"Cannot read the training config ({reason}). Received: "
                         f"--config={args.config!r}. Pass the path of a YAML config "
                         "(see examples/train.yaml).") from e
    use_backend(hparams)  # KERAS_BACKEND, before TensorFlow (which imports Keras)
    import_tensorflow_quietly()  # before Keras: no oneDNN/CUDA/absl start-up lines
    quiet, verbose = getattr(args, "quiet", False), getattr(args, "verbose", False)
    # Silent with --quiet / --verbose (Keras prints then): it still records the epochs run.
    printer = EpochPrinter(epochs=hparams.training.epochs, silent=quiet or verbose)
    launcher = make_launcher(hparams, epoch_printer=printer, verbose=1 if verbose else 0)
    return launcher.run(), hparams, list(printer.seen)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: trains with epoch lines, prints the run summary; returns the exit code."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    from beam_prep.quiet_tf import native_stderr_filtered

    with SummaryRecorder("train", json_path=args.summary_json, quiet=args.quiet) as rec:
        try:
            with native_stderr_filtered():  # TensorFlow's CPU-machine notices, see quiet_tf
                result, hparams, seen = _train(args)
        except BeamPrepError as e:
            print(f"beam-prep train: error: {e}", file=sys.stderr)
            rec.fail(str(e), error_type=type(e).__name__)
            return 1
        final = {k: float(v[-1]) for k, v in result.history.items() if v}
        counts: dict[str, Any] = {"steps": int(result.steps),
                                  "epochs": len(result.history.get("loss", []))}
        counts.update(_epoch_counts(result, hparams, seen))
        counts.update(final)
        outputs = {"model_dir": str(hparams.training.model_dir)}
        if result.export_path:
            outputs["export"] = str(result.export_path)
        rec.succeed(counts=counts, outputs=outputs,
                    details={"history": {k: [float(x) for x in v]
                                         for k, v in result.history.items()},
                             "train_seconds": round(float(result.seconds), 3)})
    return 0


def _epoch_counts(result: Any, hparams: Any, seen: list[int]) -> dict[str, Any]:
    """Summary lines: a resumed ``model_dir``, and which epoch the exported model holds."""
    from beam_prep.ranking.train.epoch_log import exported_epoch

    tr = hparams.training
    # Both loops number epochs from the restored state: a first epoch > 0 is a resume, and
    # a run that trained nothing after taking steps found every epoch done already.
    done_before = seen[0] if seen else (tr.epochs if result.steps else 0)
    counts: dict[str, Any] = {}
    if done_before:
        counts["resumed"] = (f"{tr.model_dir} held {done_before} of {tr.epochs} epochs; "
                             "continued from there (a new training.model_dir starts over)")
    best = exported_epoch(result.history, first_epoch=done_before + 1,
                          metric=tr.early_stopping_metric)
    if best is None:
        counts["exported_epoch"] = "the restored state (no epoch left to train)"
    else:
        counts["exported_epoch"] = f"{best[0]} of {tr.epochs} ({best[1]})"
    return counts


if __name__ == "__main__":
    sys.exit(main())
