"""Command-line flags: a misspelt flag gets "did you mean", before "required" errors.

argparse checks required flags before it reports unknown ones, so ``--ouput o`` was answered
with "the following arguments are required: --output" and no word about the typo.
:func:`parse_relaxed` parses with required flags relaxed, so that the caller reports unknown
leftovers (a Beam job passes some to Beam) with the closest known flag, and only then calls
:func:`require`; :func:`parse_suggesting` does both for a command without Beam. Flags are
accepted with ``-`` or ``_`` between words when :func:`add_flag` declared them (underscores
are the documented spelling).

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(prog="job")
    >>> _ = p.add_argument("--output", required=True)
    >>> parse_suggesting(p, ["--output", "o"]).output
    'o'
    >>> suggestion("--ouput", ["--output", "--input"])
    ' (did you mean --output?)'
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import Any


def suggestion(flag: str, known: Sequence[str]) -> str:
    """`` (did you mean --x?)`` for the known flag closest to ``flag``, else ``""``."""
    name = flag.split("=", 1)[0][:100]
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    if not close:  # --no-overwrite vs --no_overwrite: compare with the separators unified
        unified = {k.replace("-", "_"): k for k in known}
        close = [unified[c] for c in difflib.get_close_matches(
            name.replace("-", "_"), list(unified), n=1, cutoff=0.75)]
    return f" (did you mean {close[0]}?)" if close else ""


def known_flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every ``--flag`` spelling the parser (and its sub-commands) accepts."""
    out: set[str] = set()
    for action in parser._actions:  # noqa: SLF001
        out.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in action.choices.values():
                out.update(known_flags(sub))
    return sorted(out)


def add_flag(parser: Any, name: str, **kwargs: Any) -> argparse.Action:
    """``parser.add_argument(name, ...)`` that also accepts ``-`` for ``_`` (or the reverse).

    The underscore spelling is listed first (the documented one).

    Example:
        >>> p = argparse.ArgumentParser()
        >>> _ = add_flag(p, "--no_overwrite", dest="overwrite", action="store_false")
        >>> p.parse_args(["--no-overwrite"]).overwrite, p.parse_args(["--no_overwrite"]).overwrite
        (False, False)
    """
    underscored = "--" + name[2:].replace("-", "_")
    dashed = "--" + name[2:].replace("_", "-")
    names = [underscored] + ([dashed] if dashed != underscored else [])
    return parser.add_argument(*names, **kwargs)


def parse_relaxed(parser: argparse.ArgumentParser, argv: Sequence[str] | None
                  ) -> tuple[argparse.Namespace, list[str]]:
    """``parser.parse_known_args`` with required flags not checked (see :func:`require`).

    Check the leftovers for unknown flags first, then call :func:`require`.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):  # the usage line shows what is required
        return parser.parse_known_args(argv)
    required = [a for a in parser._actions if a.required and a.option_strings]  # noqa: SLF001
    for action in required:
        action.required = False
    try:
        return parser.parse_known_args(argv)
    finally:
        for action in required:
            action.required = True


def require(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """argparse's "the following arguments are required" error, after :func:`parse_relaxed`."""
    missing = [a.option_strings[0] for a in parser._actions  # noqa: SLF001
               if a.required and a.option_strings and getattr(args, a.dest, None) is None]
    if missing:
        parser.error(f"the following arguments are required: {', '.join(missing)}")


def parse_suggesting(parser: argparse.ArgumentParser, argv: Sequence[str] | None
                     ) -> argparse.Namespace:
    """``parser.parse_args`` where an unknown flag names the closest known one.

    Raises:
        SystemExit: Code 2 through ``parser.error``: an unrecognized argument (with the
            closest known flag) is reported before missing required flags.

    Example:
        >>> p = argparse.ArgumentParser(prog="job")
        >>> _ = p.add_argument("--output", required=True)
        >>> parse_suggesting(p, ["--output", "o"]).output
        'o'
    """
    args, rest = parse_relaxed(parser, argv)
    if rest:
        flags = known_flags(parser)
        shown = [(t if len(t) <= 100 else t[:97] + "...")
                 + (suggestion(t, flags) if t.startswith("--") else "") for t in rest]
        parser.error(f"unrecognized argument{'s' if len(rest) > 1 else ''}: "
                     f"{' '.join(shown)}. Fix the spelling (see --help).")
    require(parser, args)
    return args
