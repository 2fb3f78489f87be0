"""The analysis cache key of a JSONL spec with list features names their columns.

Before the line-by-line JSONL path read arrays of list features, a block holding one bad line
lost every array; cached entries of such runs must not be reused. Only JSONL specs with list
features get new keys: every other spec keeps its entries.
"""

from __future__ import annotations

from beam_prep.analyzers.cache import key as cache_key
from beam_prep.analyzers.cache.key import ReaderSettings, analysis_key
from beam_prep.spec import Spec

LISTS = Spec.from_dict({"features": [
    {"name": "tags", "kind": "string", "shape": "list"},
    {"name": "split_tags", "kind": "string", "expr": "split(text, '|')"},
    {"name": "n", "kind": "numeric"}]})
SCALARS = Spec.from_dict({"features": [{"name": "city", "kind": "string"},
                                       {"name": "n", "kind": "numeric"}]})


def test_only_jsonl_specs_with_list_features_get_new_keys(monkeypatch):
    jsonl, csv = ReaderSettings("jsonl", batch_size=1024), ReaderSettings("csv", batch_size=1024)
    before = {(name, r.format): analysis_key(spec, r)[0] for name, spec in
              (("lists", LISTS), ("scalars", SCALARS)) for r in (jsonl, csv)}
    assert cache_key.list_columns(LISTS) == frozenset({"tags"})  # split() reads a scalar
    monkeypatch.setattr(cache_key, "list_columns", lambda spec: frozenset())
    after = {(name, r.format): analysis_key(spec, r)[0] for name, spec in
             (("lists", LISTS), ("scalars", SCALARS)) for r in (jsonl, csv)}
    assert before.pop(("lists", "jsonl")) != after.pop(("lists", "jsonl"))
    assert before == after
