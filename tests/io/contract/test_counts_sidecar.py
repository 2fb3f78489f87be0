"""io.counts_sidecar: the one parser of ``vocab/<f>.counts.jsonl`` lines.

Expected rows are written out by hand from the lines; errors must name the physical line.
"""

from __future__ import annotations

import io
import json

import pytest

from beam_prep.errors import ArtifactError
from beam_prep.io.contract import counts_sidecar as cs

LINES = [b'["a",3]', b"", b'["b, c",1]', b'  ["\\u2028x",2]  ', b'["d\\"",0]']
ROWS = [["a", 3], ["b, c", 1], ["\u2028x", 2], ['d"', 0]]


@pytest.mark.parametrize("block_bytes", [1, 3, 7, 1 << 22])
@pytest.mark.parametrize("final_newline", [True, False])
def test_rows_do_not_depend_on_the_block_size(block_bytes, final_newline):
    body = b"\n".join(LINES) + (b"\n" if final_newline else b"")
    got = list(cs.iter_rows(io.BytesIO(body), name="f", block_bytes=block_bytes))
    assert got == ROWS


@pytest.mark.parametrize("block_bytes", [2, 1 << 22])
@pytest.mark.parametrize(("line", "problem"), [
    (b'["x",-1]', "the count is not a non-negative integer"),
    (b'["x",1.5]', "the count is not a non-negative integer"),
    (b'["x",true]', "the count is not a non-negative integer"),
    (b'["x",1,-2]', "the document frequency is not a non-negative integer"),
    (b'["x",1,"2"]', "the document frequency is not a non-negative integer"),
    (b'[1,1]', "not a [token, count] array"),
    (b'["x"]', "not a [token, count] array"),
    (b'["x",1,2,3]', "not a [token, count] array"),
    (b'{"x":1}', "not a [token, count] array"),
    (b'["x",1', "Expecting"),
])
def test_a_bad_line_is_named_by_its_line_number(line, problem, block_bytes):
    body = b'["ok",1]\n\n' + line + b'\n["ok2",2]\n'  # line 3 (a blank line 2 counts)
    with pytest.raises(ArtifactError) as e:
        list(cs.iter_rows(io.BytesIO(body), name="city", path="v.counts.jsonl",
                          block_bytes=block_bytes))
    msg = str(e.value)
    assert msg.startswith("Feature 'city': line 3 of the counts sidecar v.counts.jsonl is not ")
    assert problem in msg and repr(line) in msg


def test_weighted_counts_are_finite_numbers():
    body = b'["a",2.5]\n["b",3]\n'
    assert list(cs.iter_rows(io.BytesIO(body), name="w", weighted=True)) == [["a", 2.5],
                                                                           ["b", 3]]
    with pytest.raises(ArtifactError, match="non-negative integer"):
        list(cs.iter_rows(io.BytesIO(body), name="w"))
    for bad in (b'["a",NaN]', b'["a",Infinity]', b'["a",-0.5]'):
        with pytest.raises(ArtifactError, match="line 1 of"):
            list(cs.iter_rows(io.BytesIO(bad), name="w", weighted=True))


def test_a_line_longer_than_the_bound_is_refused():
    with pytest.raises(ArtifactError, match="longer than 10 bytes"):
        list(cs.iter_rows(io.BytesIO(b'["' + b"x" * 20 + b'",1]\n'), name="f", max_line=10,
                          block_bytes=4))


def test_document_frequencies_of_a_file(tmp_path):
    path = tmp_path / "t.counts.jsonl"
    # a token with U+2028 and U+0085 (written unescaped, as the analysis writes them):
    # str.splitlines() would cut these lines, the parser splits on b"\n" only
    tokens = ["a\u2028b", "c\x85", "d"]
    path.write_bytes("".join(json.dumps([t, 5, i], ensure_ascii=False) + "\n"
                             for i, t in enumerate(tokens)).encode())
    assert cs.read_document_frequencies(str(path)) == [0, 1, 2]
    path.write_bytes(b'["a",5,1]\n["b",5]\n')
    with pytest.raises(ArtifactError, match="has no document frequencies"):
        cs.read_document_frequencies(str(path))
