"""`beam-prep train`: train a ranking model on ELWC data, then export it.

Usage::

    beam-prep train --config train.yaml [section.key=value ...]
    python -m beam_prep.pipelines.train --config train.yaml training.loss=list_mle

Overrides use YAML values (``model.hidden_sizes=[64,32]``). The run resumes from the state in
``training.model_dir``; the SavedModel goes to ``training.export_dir``.

Example:
    >>> run(["--config", "examples/train.yaml", "training.epochs=1"])   # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from beam_prep.errors import BeamPrepError, InputError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="beam-prep train", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="YAML training config (see docs/training.md)")
    p.add_argument("overrides", nargs="*", help="section.key=value overrides")
    return p


def run(argv: Sequence[str] | None = None) -> Any:
    """Parses ``argv``, trains, exports; returns the launcher's ``TrainResult``."""
    from beam_prep.ranking.train.hparams import RankingHparams
    from beam_prep.ranking.train.launcher import RankingLauncher

    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        hparams = RankingHparams.load(args.config, overrides=args.overrides)
    except BeamPrepError:
        raise
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise InputError(f"Cannot read the training config ({reason}). Received: "
                         f"--config={args.config!r}. Pass the path of a YAML config "
                         "(see examples/train.yaml).") from e
    return RankingLauncher(hparams).run()


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: prints a JSON summary; returns the exit code."""
    try:
        result = run(argv)
    except BeamPrepError as e:
        print(f"beam-prep train: error: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"steps": result.steps, "seconds": round(result.seconds, 2),
                      "export_path": result.export_path,
                      "history": {k: v[-1] for k, v in result.history.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
