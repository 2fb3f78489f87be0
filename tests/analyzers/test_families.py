"""The analysis family registry: a new family is one object plus one registry entry.

A toy family (the longest value of a string feature, in UTF-8 bytes) is registered for a
test; the split DoFn, the graph, the cache and the manifest must pick it up with no other
change, and its result must equal what Python computes from the CSV. The test patches the
registry of this process (the in-process runner); a real family is a line in
``analyzers/families.py``, which every worker process imports.
"""

from __future__ import annotations

import csv
import hashlib
import json
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from beam_prep.pipelines import analyze

from beam_prep.analyzers import families, split_fn
from beam_prep.analyzers.family import AnalysisFamily, FeatureBatch, merged_entries
from beam_prep.io import filesystem as fs

SPEC = """
version: 1
features:
  - {name: city, kind: string}
  - {name: shop, kind: string}
  - {name: price, kind: numeric, per_key: city}
"""


class _MaxLength:
    def __init__(self) -> None:
        self.value = 0

    def add(self, view: FeatureBatch) -> None:
        lengths = pc.binary_length(view.values.cast(pa.large_string()))
        self.value = max(self.value, int(pc.max(lengths).as_py() or 0))

    def result(self) -> int:
        return self.value


class _WriteMaxLength(beam.DoFn):
    def __init__(self, out: str) -> None:
        self._out = out

    def process(self, kv: tuple[str, int]):
        name, value = kv
        rel = f"vocab/{name}.max_length.json"
        body = json.dumps({"max_length": value}).encode()
        fs.write_bytes(fs.join(self._out, rel), body)
        yield name, {"files": {"max_length": {"path": rel, "bytes": len(body)}},
                     "max_length": value}


class _Branch(beam.PTransform):
    def __init__(self, names: list[str], out: str) -> None:
        super().__init__()
        self._names, self._out = names, out

    def expand(self, pcoll):
        seeds = pcoll.pipeline | "Seeds" >> beam.Create([((n, 0), 0) for n in self._names])
        return ((pcoll, seeds) | beam.Flatten()
                | beam.CombinePerKey(max)
                | beam.MapTuple(lambda key, value: (key[0], value))
                | beam.ParDo(_WriteMaxLength(self._out)))


class MaxLengthFamily(AnalysisFamily):
    """The toy family, for the feature ``city`` (a real family reads a spec field)."""

    tag = "max_length"
    label = "MaxLength"
    folders = ("vocab",)
    suffix = "json"

    def applies(self, feature: Any) -> bool:
        return feature.name == "city"

    def accumulator(self, feature: Any) -> _MaxLength:
        return _MaxLength()

    def elements(self, name: str, value: int, num_partitions: int) -> list:
        return [((name, 0), value)]

    def merge(self, values: list[int]) -> int:
        return max(values)

    def to_bytes(self, value: int) -> bytes:
        return json.dumps(value).encode()

    def from_bytes(self, data: bytes, feature: Any, relname: str) -> int:
        value = json.loads(data)
        if not isinstance(value, int):
            raise TypeError(f"{relname}: not an integer")
        return value

    def transform(self, spec: Any, output_dir: str) -> _Branch:
        return _Branch([f.name for f in self.features(spec)], output_dir)

    def manifest(self, out: dict, entry: dict) -> None:
        out["stats"]["max_length"] = entry["max_length"]


def _write_data(path) -> dict[str, int]:
    rows = [("Zürich", "a", 3.0), ("Oslo", "b", 1.5), ("São Paulo", "a", 2.0),
            ("", "c", 4.0), ("Lima", "b", 8.0)] * 40
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["city", "shop", "price"])
        w.writerows(rows)
    return {"city": max(len(c.encode()) for c, _, _ in rows)}


def test_registry_names_each_family_once_and_the_split_fn_emits_each_tag():
    tags = [family.tag for family in families.FAMILIES]
    labels = [family.label for family in families.FAMILIES]
    assert len(set(tags)) == len(tags) and len(set(labels)) == len(labels)
    assert split_fn.output_tags()[3:] == tags
    assert families.by_tag("per_key") is families.FAMILIES[2]
    from beam_prep.analyzers.pipeline import ARTIFACT_OUTPUT

    for family in families.FAMILIES:  # the analyze job owns (replaces) each family's folders
        assert family.folders and all(f"{folder}/**" in ARTIFACT_OUTPUT.owned
                                      for folder in family.folders)
    with pytest.raises(KeyError):
        families.by_tag("no_such_family")


def test_a_registered_family_runs_through_split_graph_cache_and_manifest(tmp_path, monkeypatch):
    monkeypatch.setattr(families, "FAMILIES", (*families.FAMILIES, MaxLengthFamily()))
    data = tmp_path / "data.csv"
    expected = _write_data(data)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    outs = {}
    for name in ("plain", "cold", "warm"):
        extra = [] if name == "plain" else ["--cache_dir", str(tmp_path / "cache")]
        analyze.run(["--spec", str(spec), "--input", str(data), "--output",
                     str(tmp_path / name), "--no_report", "--quiet", *extra])
        outs[name] = json.loads((tmp_path / name / "manifest.json").read_text())
    city = outs["plain"]["features"]["city"]
    assert city["stats"]["max_length"] == expected["city"] == len("São Paulo".encode())
    assert city["files"]["max_length"]["path"] == "vocab/city.max_length.json"
    assert json.loads((tmp_path / "plain" / "vocab" / "city.max_length.json").read_text()) == {
        "max_length": expected["city"]}
    assert "max_length" not in outs["plain"]["features"]["shop"]["stats"]
    # the other families still run beside it
    assert outs["plain"]["features"]["price"]["stats"]["key_count"] == 4
    assert outs["cold"] == outs["warm"] == outs["plain"]
    entries = list((tmp_path / "cache" / "entries").glob("*/*/index.json"))
    assert len(entries) == 1
    index = json.loads(entries[0].read_text())
    assert index["max_length"] == {"city": "max_length-000.json"}
    assert (entries[0].parent / "max_length-000.json").read_text() == str(expected["city"])
    runs = sorted((tmp_path / "cache" / "runs").glob("*.json"))
    assert [json.loads(r.read_text())["hits"] for r in runs] == [0, 1]


def _payload_not_an_integer(index: dict, folder) -> str:
    bad = b'"nine"'  # checksummed as the index says, but not an integer
    (folder / "max_length-000.json").write_bytes(bad)
    index["files"]["max_length-000.json"] = {"sha256": hashlib.sha256(bad).hexdigest(),
                                             "bytes": len(bad)}
    return "max_length-000.json does not parse"


def _field_not_an_object(index: dict, folder) -> str:
    index["per_key"] = None  # index.json itself is not checksummed
    return "the entry's per_key field is not an object"


@pytest.mark.parametrize("damage", [_payload_not_an_integer, _field_not_an_object])
def test_a_damaged_family_entry_is_analysed_again(damage, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(families, "FAMILIES", (*families.FAMILIES, MaxLengthFamily()))
    data = tmp_path / "data.csv"
    _write_data(data)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    args = ["--spec", str(spec), "--input", str(data), "--no_report", "--quiet",
            "--cache_dir", str(tmp_path / "cache")]
    analyze.run([*args, "--output", str(tmp_path / "a")])
    index_path = next((tmp_path / "cache" / "entries").glob("*/*/index.json"))
    index = json.loads(index_path.read_text())
    why = damage(index, index_path.parent)
    index_path.write_text(json.dumps(index), encoding="utf-8")
    analyze.run([*args, "--output", str(tmp_path / "b")])  # a miss, not a crash
    assert why in caplog.text
    a = json.loads((tmp_path / "a" / "manifest.json").read_text())
    b = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert a == b
    runs = sorted((tmp_path / "cache" / "runs").glob("*.json"))
    assert [json.loads(r.read_text())["hits"] for r in runs] == [0, 0]


def test_merged_entries_unite_files_and_keep_each_branch_keys():
    merged = merged_entries([("a", {"files": {"vocabulary": 1}, "vocabulary_size": 2}),
                             ("a", {"target_encoding": {"file": 3}}),
                             ("b", {"files": {"per_key": 4}, "key_count": 5}),
                             ("b", {"files": {"per_key_buckets": 6}, "bucket_key_count": 7})])
    assert merged == {
        "a": {"files": {"vocabulary": 1}, "vocabulary_size": 2, "target_encoding": {"file": 3}},
        "b": {"files": {"per_key": 4, "per_key_buckets": 6}, "key_count": 5,
              "bucket_key_count": 7}}
