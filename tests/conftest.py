"""Test-suite wide settings: the hypothesis profiles.

``ci`` (the default, what ``make test`` runs): derandomized, so every run tries the same
examples, and no example database, so a failure found once is not replayed from
``.hypothesis/`` by every later run; a failing example is printed with its
``@reproduce_failure`` blob. ``fuzz`` (``make test-fuzz``): a random seed per run (printed on
failure) and :func:`tests.fuzzing.examples` budgets multiplied by ``BEAM_PREP_FUZZ_SCALE``.

Example:
    HYPOTHESIS_PROFILE=fuzz BEAM_PREP_FUZZ_SCALE=25 pytest -m hypothesis -p no:randomly
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          print_blob=True)
settings.register_profile("fuzz", derandomize=False, database=None, deadline=None,
                          print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


#: Folders of many small files, run last (see :func:`pytest_collection_modifyitems`).
LIGHT_FOLDERS = ("cli", "dataflow", "spec", "project")


def pytest_collection_modifyitems(config, items):
    """The heavy folders' tests first, then :data:`LIGHT_FOLDERS` (names sorted within each
    group, as collected).

    ``make test`` runs ``-n 2 --dist loadfile``: xdist hands whole files to the workers in this
    order, so the suite ends on the many small command, spec and project files instead of on
    the heavy ``tests/transform`` ones, and the two workers finish together.
    """
    top = os.path.dirname(os.path.abspath(__file__))

    def light(item) -> bool:
        rel = os.path.relpath(str(item.path), top)
        return rel.split(os.sep, 1)[0] in LIGHT_FOLDERS

    items.sort(key=light)  # stable: the collected order within each group
