"""The generated module reads a per-key file's lines as the library's checked readers do.

The generated ``_per_key_state`` / ``_per_key_bucket_state`` dropped a last line without its
``\\n`` (the library reads it: the layers and the transform job then differed) and took a
count of 0 or below (the library refuses it).
"""

from __future__ import annotations

import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

from beam_prep import Artifacts  # noqa: E402
from beam_prep.codegen.render import render_module  # noqa: E402
from beam_prep.errors import ArtifactError  # noqa: E402
from beam_prep.io.contract.per_key_columns import parse_per_key  # noqa: E402
from tests.codegen.conftest import import_module_from  # noqa: E402
from tests.per_key import helpers  # noqa: E402

SPEC = """
features:
  - {name: price, kind: numeric, per_key: store, num_buckets: 3}
"""


@pytest.fixture(scope="module")
def pp(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pk_gen_lines")
    helpers.write_jsonl(helpers.make_rows(n=200, keys=15), str(tmp / "t.jsonl"))
    out = helpers.run(tmp, SPEC, str(tmp / "t.jsonl"))
    (tmp / "pp.py").write_text(render_module(Artifacts(out)), encoding="utf-8")
    return import_module_from(str(tmp / "pp.py"), "bp_pk_gen_lines")


def _keys(keys) -> list[str]:
    if isinstance(keys, tf.Tensor):
        return [k.decode("utf-8") for k in keys.numpy().tolist()]
    return list(keys)


@pytest.mark.parametrize("text", [
    '["a",2,1.0,1.0,0.0,2.0]\n["b",1,3.0,0.0,3.0,3.0]',  # columnar-simple lines
    '["a\\tb",2,1.0,1.0,0.0,2.0]\n["c",1,3.0,0.0,3.0,3.0]',  # an escape: line by line
])
def test_a_last_line_without_newline_is_read(pp, tmp_path, text):
    (tmp_path / "k.jsonl").write_text(text, encoding="utf-8")
    want = parse_per_key(text.encode(), "k.jsonl")  # the library's reader: 2 keys
    got = pp._per_key_state(str(tmp_path), "k.jsonl", "z_score", [0.0, 1.0, False])
    assert _keys(got[0]) == want.keys.to_pylist() and len(want.keys) == 2
    assert [int(c) for c in got[4]] == want.count.tolist()


def test_bucket_file_last_line_without_newline_is_read(pp, tmp_path):
    (tmp_path / "b.jsonl").write_text('["a",2,0,[1.0,2.0]]\n["b",1,0,[3.0,3.0]]',
                                      encoding="utf-8")
    keys, rows, lengths = pp._per_key_bucket_state(str(tmp_path), "b.jsonl", 3, [0.0, 1.0])
    assert keys == ["a", "b"] and rows[2] == [3.0, 3.0] and lengths == [2, 2, 2]


@pytest.mark.parametrize("count", ["0", "-1"])
def test_a_count_below_one_is_refused_as_the_library_refuses_it(pp, tmp_path, count):
    text = f'["a\\tb",{count},1.0,1.0,0.0,2.0]\n'
    with pytest.raises(ArtifactError):
        parse_per_key(text.encode(), "k.jsonl")
    (tmp_path / "k.jsonl").write_text(text, encoding="utf-8")
    with pytest.raises(pp.ArtifactMismatchError, match="line 1"):
        pp._per_key_state(str(tmp_path), "k.jsonl", "z_score", [0.0, 1.0, False])
