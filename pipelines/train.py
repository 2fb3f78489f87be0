"""`beam-prep train`: train a ranking model on ELWC data, then export it.

Usage::

    beam-prep train --config train.yaml [section.key=value ...]
    python -m beam_prep.pipelines.train --config train.yaml training.loss=list_mle

Overrides use YAML values (``model.hidden_sizes=[64,32]``). The run resumes from the state in
``training.model_dir``; the SavedModel goes to ``training.export_dir`` (default
``<model_dir>/export``). A finished run is not trained again: the command says so and leaves
the export unchanged; ``--retrain`` starts over. Ctrl-C stops at a safe point with one line
(``interrupted at epoch N; rerun to resume``) and exit code 130; a non-finite loss, metric or
score stops with one line and exit code 1, and nothing is exported.

Output: a line per epoch on stderr (loss, metrics, seconds; ``--verbose`` shows Keras' own
progress bar instead), then the run summary on stdout (``--summary_json FILE`` writes it as
JSON, also on failure). ``--quiet`` prints neither. Building the parser imports neither
TensorFlow nor Keras, so ``--help`` is fast.

Example:
    >>> run(["--config", "examples/train.yaml", "training.epochs=1"])   # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from beam_prep.errors import BeamPrepError, InputError
from beam_prep.run_summary import SummaryRecorder, add_summary_flag


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="beam-prep train", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="YAML training config (see docs/training.md)")
    # Parsed intermixed (main, run): overrides may stand before, between or after the flags,
    # and a stray word is named as a bad override.
    p.add_argument("overrides", nargs="*", help="section.key=value overrides")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--verbose", action="store_true",
                     help="Show Keras' own progress bar (fit loop) instead of one line per "
                          "epoch.")
    out.add_argument("--quiet", action="store_true",
                     help="Print neither the epoch lines nor the summary.")
    p.add_argument("--retrain", action="store_true",
                   help="Start over: delete the checkpoints and run record in "
                        "training.model_dir and train from scratch (= training.retrain=true); "
                        "the export is replaced when the new run ends.")
    add_summary_flag(p)
    return p


def run(argv: Sequence[str] | None = None) -> Any:
    """Parses ``argv``, trains, exports; returns the launcher's ``TrainResult``."""
    args = _parser().parse_intermixed_args(list(sys.argv[1:] if argv is None else argv))
    return _train(args)[0]


def _train(args: argparse.Namespace,
           interrupts: Any = None) -> tuple[Any, Any, list[int]]:
    """Loads the config and trains; returns ``(TrainResult, RankingHparams, epochs run)``
    (0-based epoch indexes, counted from the restored state)."""
    from beam_prep.quiet_tf import import_tensorflow_quietly
    from beam_prep.ranking.train.backend import make_launcher, use_backend
    from beam_prep.ranking.train.epoch_log import EpochPrinter
    from beam_prep.ranking.train.hparams import RankingHparams

    overrides = [*args.overrides, *(["training.retrain=true"]
                                    if getattr(args, "retrain", False) else [])]
    try:
        hparams = RankingHparams.load(args.config, overrides=overrides)
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
    launcher = make_launcher(hparams, epoch_printer=printer, verbose=1 if verbose else 0,
                             interrupts=interrupts)
    return launcher.run(), hparams, list(printer.seen)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: trains with epoch lines, prints the run summary; returns the exit code
    (0, 1 on an error, 130 when interrupted by Ctrl-C)."""
    args = _parser().parse_intermixed_args(list(sys.argv[1:] if argv is None else argv))
    from beam_prep.quiet_tf import native_stderr_filtered
    from beam_prep.ranking.train.interrupt import InterruptHandler

    interrupts = InterruptHandler()
    with SummaryRecorder("train", json_path=args.summary_json, quiet=args.quiet) as rec:
        try:
            with interrupts, native_stderr_filtered(), _warning_lines():  # see quiet_tf
                result, hparams, seen = _train(args, interrupts)
        except Exception as e:
            # After Ctrl-C any error is the interrupt: Keras and TensorFlow re-raise it as
            # their own (a ValueError from a layer being built, a RuntimeError from the
            # SavedModel writer).
            if interrupts.requested:
                return _interrupted(interrupts, rec)
            if not isinstance(e, BeamPrepError):
                raise
            print(f"beam-prep train: error: {e}", file=sys.stderr)
            rec.fail(str(e), error_type=type(e).__name__)
            return 1
        except KeyboardInterrupt:
            return _interrupted(interrupts, rec)
        # epochs: trained in this run (an ensemble's: all members' together); steps: the
        # optimizer's, a resumed run's earlier steps included
        counts: dict[str, Any] = {"steps": int(result.steps), "epochs": len(seen)}
        counts.update(_epoch_counts(result, hparams, seen))
        outputs = {} if result.finished_before else {
            "model_dir": str(hparams.training.model_dir)}
        if result.export_path and result.exported:
            outputs["export"] = str(result.export_path)
        state = result.state
        best = state.best_or_last() if state is not None else None
        rec.succeed(counts=counts, outputs=outputs,
                    details={"history": {k: [float(x) for x in v]
                                         for k, v in result.history.items()},
                             "exported_metrics": (state.export or {}).get("metrics")
                             if state is not None else None,
                             "best_epoch": best,
                             "last_epoch": state.last if state is not None else None,
                             "train_seconds": round(float(result.seconds), 3)})
    return 0


def _interrupted(interrupts: Any, rec: SummaryRecorder) -> int:
    """Prints and records the one line of a Ctrl-C; returns its exit code (130)."""
    from beam_prep.interrupts import EXIT_INTERRUPTED

    message = interrupts.message()
    print(f"beam-prep train: {message}", file=sys.stderr)
    rec.fail(message, error_type="Interrupted")
    return EXIT_INTERRUPTED


@contextlib.contextmanager
def _warning_lines() -> Iterator[None]:
    """beam-prep's :class:`~beam_prep.errors.NoticeWarning` as one ``beam-prep train:
    warning: ...`` line each (not Python's file:line and source line); other warnings as
    Python shows them."""
    from beam_prep.errors import NoticeWarning

    shown = warnings.showwarning

    def show(message: Any, category: type, *args: Any, **kwargs: Any) -> None:
        if issubclass(category, NoticeWarning):
            print(f"beam-prep train: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _epoch_counts(result: Any, hparams: Any, seen: list[int]) -> dict[str, Any]:
    """Summary lines: a finished or resumed run, which epoch the export holds with its
    metrics, the last epoch's metrics, each labelled, and ``budget`` when the run ended at
    ``training.epochs`` with the monitored metric still improving."""
    from beam_prep.ranking.train.epoch_log import format_metrics

    tr = hparams.training
    state = result.state
    counts: dict[str, Any] = {}
    if result.finished_before:
        counts["finished"] = (f"{tr.model_dir} holds a finished run; nothing was trained "
                              "(--retrain trains again)")
    elif hparams.model.ensemble > 1:
        # the first epoch each member trained in this run (the printer's epochs restart)
        starts = [e for i, e in enumerate(seen) if i == 0 or e <= seen[i - 1]]
        if any(starts):
            counts["resumed"] = (f"{tr.model_dir} held epochs of its members; each continued "
                                 "from its own (--retrain starts over)")
    elif seen and seen[0] > 0:
        counts["resumed"] = (f"{tr.model_dir} held {seen[0]} of {tr.epochs} epochs; "
                             "continued from there (--retrain starts over)")
    if state is None:
        return counts
    members = _member_states(hparams) if hparams.model.ensemble > 1 else []
    if members:
        counts["members"] = _members_line(hparams, members)
    held = state.export if tr.export_dir else None
    if held is not None and held.get("epoch") is not None:
        best = state.best or {}
        why = (f"best {state.monitor} {best['value']:.4f}"
               if state.monitor and best.get("epoch") == held["epoch"]
               and best.get("value") is not None else "last epoch")
        counts["exported_epoch"] = f"{held['epoch']} of {tr.epochs} ({why})"
        counts["exported_model"] = format_metrics(held.get("metrics") or {})
        counts["export"] = ("written" if result.exported
                            else f"unchanged: {tr.export_dir} (it holds the best epoch)")
    elif held is not None:  # an ensemble: the averaged model has no epoch of its own
        if held.get("metrics"):
            counts["exported_model"] = (f"{format_metrics(held['metrics'])} (the mean of "
                                        f"{hparams.model.ensemble} members' scores)")
        counts["export"] = "written" if result.exported else f"unchanged: {tr.export_dir}"
    if state.last is not None:
        counts["last_epoch"] = (f"{state.last['epoch']} of {tr.epochs}: "
                                f"{format_metrics(state.last['metrics'])}")
    if state.stopped_early and state.last is not None:
        counts["stopped_early"] = (f"after epoch {state.last['epoch']} "
                                   f"({tr.early_stopping_patience} epochs without a better "
                                   f"{state.monitor})")
    if state.ended_while_improving():
        counts["budget"] = (f"ended at its epoch budget while {state.monitor} was still "
                            "improving (best at the last epoch); raise training.epochs")
    rising = [i + 1 for i, m in enumerate(members) if m is not None and m.ended_while_improving()]
    if rising:
        monitor = members[rising[0] - 1].monitor
        if len(rising) == len(members):
            which = "every member ended at its"
        elif len(rising) == 1:
            which = f"member {rising[0]} ended at its"
        else:
            which = f"members {', '.join(map(str, rising))} ended at their"
        counts["budget"] = (f"{which} epoch budget while {monitor} was still improving (best "
                            "at the last epoch); raise training.epochs")
    return counts


def _member_states(hparams: Any) -> list[Any]:
    """Each ensemble member's run record (None where a member has none)."""
    from beam_prep.ranking.train.run_state import load_state

    return [load_state(hparams.member(i).training.model_dir)
            for i in range(hparams.model.ensemble)]


def _members_line(hparams: Any, states: list[Any]) -> str:
    """``epochs 2, 16, 9 of 100 (best val_ndcg_10 0.7388, 0.7641, 0.7452)``: the epoch each
    ensemble member (``states``: their run records) contributes (its best, else its last)
    and, with a monitored metric, its value."""
    epochs, values, monitor = [], [], None
    for state in states:
        held = state.best_or_last() if state is not None else None
        epochs.append(str(held["epoch"]) if held else "none")
        value = held.get("value") if held else None
        values.append("-" if value is None else f"{value:.4f}")
        if value is not None:
            monitor = state.monitor
    line = f"epochs {', '.join(epochs)} of {hparams.training.epochs}"
    return f"{line} (best {monitor} {', '.join(values)})" if monitor else line


if __name__ == "__main__":
    sys.exit(main())
