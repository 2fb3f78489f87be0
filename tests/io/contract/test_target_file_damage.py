"""A damaged ``vocab/<name>.target.jsonl`` whose sha256 and fingerprint were re-sealed is
refused in one line, naming the file and the line, by every reader: transform (the encoder
and the CLI), the runtime layers, the generated module and diff. Before, transform accepted
it and `build_preprocessor` died in Keras' raw "repeated term" ValueError.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from beam_prep.pipelines import analyze

from beam_prep import cli
from beam_prep.errors import ArtifactError
from beam_prep.io.contract.artifacts import Artifacts, manifest_fingerprint
from beam_prep.io.contract.target_file import read_target
from beam_prep.transform.layers import BatchEncoder

SPEC = ("features:\n"
        "  - {name: c, kind: string, target_encoding: {labels: y, fold_column: u, folds: 3}}\n"
        "  - {name: n, kind: integer, target_encoding: {labels: y, fold_column: u, folds: 2}}\n")


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("target_file")
    rows = [{"c": f"t{i % 5}", "n": i % 4 * 10, "u": i, "y": float(i % 3 == 0)}
            for i in range(120)]
    (tmp / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "s.yaml").write_text(SPEC)
    analyze.run(["--spec", str(tmp / "s.yaml"), "--input", str(tmp / "d.jsonl"),
                 "--output", str(tmp / "art"), "--quiet", "--no_report"])
    return tmp


def _lines(art: str, name: str) -> list[list]:
    with open(f"{art}/vocab/{name}.target.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _damaged(tmp, name: str, edit, tag: str) -> str:
    """A copy of the artifacts with ``edit`` applied to feature ``name``'s lines, the file's
    sha256 / bytes and the manifest fingerprint made to match (a careful hand edit)."""
    art = str(tmp / f"art_{tag}")
    shutil.rmtree(art, ignore_errors=True)
    shutil.copytree(str(tmp / "art"), art)
    body = "".join(json.dumps(r, separators=(",", ":")) + "\n"
                   for r in edit(_lines(art, name))).encode()
    rel = f"vocab/{name}.target.jsonl"
    with open(os.path.join(art, rel), "wb") as f:
        f.write(body)
    with open(os.path.join(art, "manifest.json"), encoding="utf-8") as f:
        m = json.load(f)
    m["features"][name]["files"]["target_encoding"].update(
        sha256=hashlib.sha256(body).hexdigest(), bytes=len(body))
    m["fingerprint"] = manifest_fingerprint(m)
    with open(os.path.join(art, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(m, f, sort_keys=True, indent=2)
    return art


def _fold(i: int, cut: int):
    def edit(rows):
        rows[1][i] = rows[1][i][:cut] if cut >= 0 else rows[1][i] + [0.5]
        return rows
    return edit


CASES = {
    # tag: (feature, edit, line named, words in the message)
    "repeated": ("c", lambda r: r[:2] + [r[1]] + r[3:], 3, "repeats the token"),
    "out of order": ("c", lambda r: [r[1], r[0]] + r[2:], 2, "not after the line before"),
    "rows short": ("c", _fold(2, 2), 2, "rows list holds 2 values, not one per fold (3)"),
    "sums long": ("c", _fold(3, -1), 2, "label sum list holds 4 values"),
    "oof short": ("c", _fold(4, 1), 2, "out-of-fold list holds 1 values"),
    "integer not canonical": ("n", lambda r: [["00"] + r[0][1:]] + r[1:], 1,
                              "not a canonical int64 decimal"),
    "integer repeated as another spelling": (
        "n", lambda r: [r[0], ["+0"] + r[0][1:]] + r[1:] if r[0][0] == "0" else r, 2,
        "not a canonical int64 decimal"),
}


@pytest.mark.parametrize("tag", sorted(CASES))
def test_encoder_and_reader_refuse_the_damage_in_one_line(good, tag):
    name, edit, line, words = CASES[tag]
    art = _damaged(good, name, edit, tag.replace(" ", "_"))
    Artifacts(art, verify=True)  # sha256 and fingerprint match: only the content is wrong
    for read in (lambda: read_target(Artifacts(art), name), lambda: BatchEncoder(art)):
        with pytest.raises(ArtifactError) as err:
            read()
        text = str(err.value)
        assert "\n" not in text
        assert f"vocab/{name}.target.jsonl line {line}: " in text and words in text, text
        assert "re-run `beam-prep analyze`" in text


@pytest.mark.parametrize("tag", ["repeated", "rows short"])
def test_transform_and_diff_cli_print_one_line(good, tag, capsys):
    name, edit, line, words = CASES[tag]
    art = _damaged(good, name, edit, tag.replace(" ", "_"))
    code = cli.main(["transform", "--artifacts", art, "--input", str(good / "d.jsonl"),
                     "--output", str(good / f"out_{tag.replace(' ', '_')}"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err and words in err
    assert len([x for x in err.splitlines() if words in x]) == 1
    assert not os.path.exists(good / f"out_{tag.replace(' ', '_')}" / "transform.json")
    assert cli.main(["diff", str(good / "art"), art]) == 1
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_the_job_file_reads_back(good):
    art = Artifacts(str(good / "art"))
    table = read_target(art, "c")
    assert table.tokens == [f"t{i}" for i in range(5)]
    assert table.encoding.tolist() == [r[1] for r in _lines(str(good / "art"), "c")]
    assert table.out_of_fold.shape == (5, 3)
    assert read_target(art, "n").tokens == [0, 10, 20, 30]


@pytest.mark.parametrize("tag", ["repeated", "out of order"])
def test_runtime_and_generated_layers_refuse_instead_of_keras_repeated_term(good, tag,
                                                                             tmp_path):
    pytest.importorskip("tensorflow")
    from beam_prep.codegen.render import generate
    from beam_prep.codegen.runtime import PreprocessingLayers
    from tests.codegen.conftest import import_module_from

    name, edit, line, words = CASES[tag]
    art = _damaged(good, name, edit, tag.replace(" ", "_"))
    with pytest.raises(ArtifactError, match=f"line {line}: .*{words}"):
        PreprocessingLayers(art).build_preprocessor()
    generate(art, str(tmp_path / "pp.py"))
    module = import_module_from(str(tmp_path / "pp.py"), f"pp_target_{tag[:3]}")
    with pytest.raises(ValueError, match=f"line {line} is not .*no token twice") as err:
        module.build_layers(art, verify=False)
    assert "repeated term" not in str(err.value)
