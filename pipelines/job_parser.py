"""An ``argparse.ArgumentParser`` that lists the flags declared on it (Beam-free).

argparse keeps its actions in a private list. The jobs' parsers are :class:`JobParser`
instances, which record every action that ``add_argument`` returns (on the parser and on its
argument groups), in declaration order, and offer them as :attr:`JobParser.flags`. The Flex
Template metadata (:mod:`beam_prep.pipelines.flex_template`) is generated from that list;
``tests/dataflow/test_dataflow_template.py`` pins it against argparse's own.

Example:
    >>> p = JobParser(prog="job")
    >>> _ = p.add_argument("--input", required=True)
    >>> _ = p.add_argument_group("output").add_argument("--overwrite", action="store_true")
    >>> [(a.dest, is_switch(a)) for a in p.flags]
    [('help', False), ('input', False), ('overwrite', True)]
"""

from __future__ import annotations

import argparse
from typing import Any


class _RecordingGroup:
    """An argument group that also records the actions added through it."""

    def __init__(self, group: Any, declared: list[argparse.Action]) -> None:
        self._group = group
        self._declared = declared

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = self._group.add_argument(*args, **kwargs)
        self._declared.append(action)
        return action

    def __getattr__(self, name: str) -> Any:
        return getattr(self._group, name)


class JobParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose :attr:`flags` lists the declared ``--flags``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._declared: list[argparse.Action] = []  # before __init__ adds --help
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self._declared.append(action)
        return action

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:
        return _RecordingGroup(super().add_argument_group(*args, **kwargs), self._declared)

    @property
    def flags(self) -> list[argparse.Action]:
        """The optional (``--name``) actions, ``--help`` included, in declaration order."""
        return [a for a in self._declared if a.option_strings]


def is_switch(action: argparse.Action) -> bool:
    """True for an ``action="store_true"`` flag (takes no value, sets True).

    Uses the documented ``Action`` attributes: such an action takes no argument
    (``nargs == 0``), stores the constant True and defaults to False.
    """
    return action.nargs == 0 and action.const is True and action.default is False
