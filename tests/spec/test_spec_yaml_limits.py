"""YAML limits that are not alias bombs (found by the hostile review).

* A spec nested hundreds of levels deep (``features: [[[[...]]]]``) died with a RecursionError
  traceback inside PyYAML; it is now one SpecError line.
* A large spec *without any alias* (20,000 features, 100,000+ nodes) was refused as a
  "billion laughs" document: the guard counted every node, not the nodes the aliases add
  (tested under a lowered limit).
"""

from __future__ import annotations

import pytest

from beam_prep.config import yaml_text
from beam_prep.config.yaml_text import MAX_EXPANDED_NODES, load_yaml
from beam_prep.errors import SpecError
from beam_prep.spec import Spec


@pytest.mark.parametrize("text", [
    "features: " + "[" * 5000 + "]" * 5000 + "\n",
    "features:\n  - {name: a, kind: string, top_k: " + "{a: " * 3000 + "1" + "}" * 3000 + "}\n",
])
def test_deep_nesting_is_one_spec_error(text):
    with pytest.raises(SpecError, match="nest too deeply") as e:
        Spec.from_yaml_text(text)
    assert len(str(e.value)) < 400


def test_a_large_spec_without_aliases_is_read(monkeypatch):
    # The limit lowered to 1,000 nodes, so 250 features stand for 25,000 under the real one
    # (parsing 25,000 features takes ~10 s of CPU); the guard reads the limit at each load.
    monkeypatch.setattr(yaml_text, "MAX_EXPANDED_NODES", 1_000)
    n = 250  # 5 nodes per feature (a mapping, two keys, two values)
    text = "features:\n" + "".join(f"  - {{name: f{i}, kind: string}}\n" for i in range(n))
    assert 5 * n > yaml_text.MAX_EXPANDED_NODES
    spec = Spec.from_yaml_text(text)
    assert len(spec.names()) == n and spec.names()[-1] == f"f{n - 1}"
    # ...while aliases adding more than the lowered limit are refused under it
    reps = 1_000 // 9 + 10
    with pytest.raises(SpecError, match="aliases"):
        load_yaml("a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: [" + ", ".join(["*a"] * reps) + "]\n",
                  what="The spec")


def test_aliases_adding_more_than_the_limit_are_still_refused():
    # 2 distinct lists; the second names the first 200,000 / 9 times: ~200,000 added nodes.
    reps = MAX_EXPANDED_NODES // 9 + 10
    text = ("a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: [" + ", ".join(["*a"] * reps) + "]\n")
    with pytest.raises(SpecError, match="aliases"):
        load_yaml(text, what="The spec")
    assert load_yaml("a: &a [1, 2]\nb: [*a, *a]\n", what="x") == {"a": [1, 2],
                                                                  "b": [[1, 2], [1, 2]]}
