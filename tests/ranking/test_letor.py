"""LETOR/LibSVM parsing: checked against a plain per-token reference parser written here."""

from __future__ import annotations

import numpy as np
import pytest

from beam_prep.errors import InputError
from beam_prep.ranking.data.letor import parse_letor, parse_query_sizes
from tests.sample_data import LIGHTGBM


def reference_parse(text: str) -> list[tuple[str | None, float, dict[int, np.float32]]]:
    """(qid, label, {id: value}) per non-blank line; the last value of a repeated id wins."""
    out = []
    for line in text.splitlines():
        body = line.split("#", 1)[0].split()
        if not body:
            continue
        qid = None
        feats: dict[int, np.float32] = {}
        for tok in body[1:]:
            key, value = tok.split(":", 1)
            if key == "qid":
                qid = value
            else:
                feats[int(key)] = np.float32(float(value))
        out.append((qid, float(body[0]), feats))
    return out


def rows_of(p) -> list[tuple[str, float, dict[int, np.float32]]]:
    rows = []
    for i in range(len(p.labels)):
        s, e = p.indptr[i], p.indptr[i + 1]
        rows.append((p.qids[i], p.labels[i], dict(zip(p.ids[s:e].tolist(), p.values[s:e]))))
    return rows


def test_grammar_comments_repeats_and_order():
    text = ("2 qid:7 3:0.5 1:1 # a comment with 9:9\n"
            "\n"
            "# only a comment\n"
            "0 qid:7 1:2 1:3 10:-1.5e-2\r\n"
            "  1   qid:x:y\t4:.25  \n"
            "3 qid:8\n")
    p = parse_letor(text.encode(), fmt="letor")
    assert p.rejected == ()
    assert p.num_lines == 4
    assert p.line_numbers.tolist() == [1, 4, 5, 6]
    assert rows_of(p) == reference_parse(text)
    # the repeated id 1 keeps the last value, and ids stay in line order
    assert p.ids[2:4].tolist() == [1, 10]
    assert p.values[2] == np.float32(3.0)


def test_rejected_lines_have_line_numbers_and_reasons():
    text = ("1 qid:1 1:0.5\n"
            "abc qid:1 1:0.5\n"
            "1 qid:1 1:zz\n"
            "1 2:0.5\n"
            "1 qid:1 1:0.5 qid:2\n"
            "1 qid:1 nan:3\n"
            "0 qid:2 1:1\n")
    p = parse_letor(text.encode(), fmt="letor")
    assert p.qids.tolist() == ["1", "2"]
    assert [r[0] for r in p.rejected] == [2, 3, 4, 5, 6]
    assert [r[1].code for r in p.rejected] == [
        "label_not_a_number", "unparsable", "missing_query_id", "unparsable", "unparsable"]
    reasons = [r[1].reason for r in p.rejected]
    assert "label 'abc'" in reasons[0]
    assert "'1:zz'" in reasons[1]
    assert "missing qid" in reasons[2]
    assert "qid: must follow the label" in reasons[3]
    assert "'nan:3'" in reasons[4]
    assert p.rejected[1][2] == "1 qid:1 1:zz"


def test_num_features_bounds():
    p = parse_letor(b"1 qid:1 1:1 3:1\n0 qid:1 4:1\n0 qid:1 0:1\n", fmt="letor", num_features=3)
    assert p.line_numbers.tolist() == [1]
    assert [r[0] for r in p.rejected] == [2, 3]
    assert "outside [1, 3]" in p.rejected[0][1].reason
    assert {r[1].code for r in p.rejected} == {"feature_id_out_of_range"}


def test_lightgbm_sample_matches_reference():
    with open(LIGHTGBM + "rank.train", "rb") as f:
        data = f.read()
    with open(LIGHTGBM + "rank.train.query", "rb") as f:
        sizes = parse_query_sizes(f.read())
    p = parse_letor(data, fmt="lightgbm", query_sizes=sizes, source="rank.train")
    ref = reference_parse(data.decode())
    assert len(p.labels) == len(ref) == 3005
    assert p.rejected == ()
    got = rows_of(p)
    assert [(lab, feats) for _, lab, feats in got] == [(lab, feats) for _, lab, feats in ref]
    # group g holds sizes[g] consecutive rows
    expected_q = np.repeat(np.arange(len(sizes)), sizes)
    assert [int(q.split(":")[1]) for q in p.qids] == expected_q.tolist()
    assert len(set(p.qids)) == 201


def test_lightgbm_group_size_mismatch_is_an_error():
    with pytest.raises(InputError, match="sums to 3 rows"):
        parse_letor(b"1 1:1\n0 1:2\n", fmt="lightgbm", query_sizes=np.array([1, 2]))
    with pytest.raises(InputError, match="one integer"):
        parse_query_sizes(b"3\nx\n")


def test_line_aligned_pieces_cover_the_file_exactly(tmp_path):
    from beam_prep.ranking.data.options import ElwcOptions
    from beam_prep.ranking.data.sources import plan_pieces, read_line_range

    text = b"1 qid:1 1:1\n\n0 qid:2 2:5 # x\r\nlong line " + b"z" * 50 + b"\n\n\nlast 1:1"
    path = tmp_path / "a.txt"
    path.write_bytes(text)
    starts = {0} | {i + 1 for i, b in enumerate(text) if b == ord("\n")}
    opts = ElwcOptions(input_format="letor")
    for size in range(1, len(text) + 2):
        pieces = plan_pieces(str(path), opts, size)
        assert len(pieces) == -(-len(text) // size)
        parts = [read_line_range(str(path), s, e) if e >= 0 else text
                 for _, s, e, _, _ in pieces]
        assert b"".join(parts) == text, size
        offset = 0
        for part in parts:  # every non-empty piece begins at a line start
            assert not part or offset in starts
            offset += len(part)
    assert plan_pieces(str(path), opts, 0) == [(0, 0, -1, 0, 0)]


F32_MAX = float(np.finfo(np.float32).max)  # 3.4028234663852886e38


@pytest.mark.parametrize("fmt", ["letor", "lightgbm"])
def test_numbers_beyond_float32_and_negative_labels_reject_their_line(fmt):
    qid = " qid:1" if fmt == "letor" else ""
    lines = [
        f"1{qid} 1:1e39 2:1",              # 2: value would be written as inf
        f"1e39{qid} 1:1",                  # 3: label would crash struct.pack
        f"-1{qid} 1:1",                    # 4: -1 is the padding label
        f"-0.5{qid} 1:1",                  # 5: any negative label
        f"2{qid} 2:-3.5e38 1:7",           # 6: beyond float32 on the negative side
        f"0{qid} 1:3.4028235e38 2:-3.4028235e38",  # 7: rounds to +-max: kept
        f"-0{qid} 1:1e-50",                # 8: -0 is not negative; underflow is not overflow
    ]
    text = "\n".join([f"3{qid} 1:0.5", *lines, f"1e400{qid} 1:1"]) + "\n"
    sizes = np.array([9]) if fmt == "lightgbm" else None
    p = parse_letor(text.encode(), fmt=fmt, query_sizes=sizes)
    assert p.line_numbers.tolist() == [1, 7, 8]
    assert p.labels.tolist() == [3.0, 0.0, 0.0]
    assert p.values.tolist() == [0.5, F32_MAX, -F32_MAX, 0.0]
    assert np.isfinite(p.values).all()
    assert [r[0] for r in p.rejected] == [2, 3, 4, 5, 6, 9]
    assert [r[1].code for r in p.rejected] == [
        "value_out_of_range", "label_out_of_range", "label_negative", "label_negative",
        "value_out_of_range", "label_out_of_range"]
    reasons = [r[1].reason for r in p.rejected]
    assert "feature 1 value 1e+39 is beyond the float32 range" in reasons[0]
    assert "label 1e+39 is beyond the float32 range" in reasons[1]
    assert "label -1.0 is negative" in reasons[2] and "padding" in reasons[2]
    assert "label -0.5 is negative" in reasons[3]
    assert "feature 2 value -3.5e+38" in reasons[4]
    assert "label inf is beyond the float32 range" in reasons[5]
    assert p.rejected[0][2] == lines[0]


def test_range_checks_combine_with_num_features():
    p = parse_letor(b"1 qid:1 5:1e39\n-1 qid:1 1:1\n1 qid:1 1:1 2:2\n", fmt="letor",
                    num_features=3)
    assert p.line_numbers.tolist() == [3]
    assert p.ids.tolist() == [1, 2] and p.values.tolist() == [1.0, 2.0]
    assert [(r[0], r[1].code) for r in p.rejected] == [(1, "feature_id_out_of_range"),
                                                        (2, "label_negative")]
    assert "outside [1, 3]" in p.rejected[0][1].reason


def test_inf_and_nan_tokens_get_the_codes_of_the_value_rules():
    """The grammar has no inf/nan; a line holding one still gets the code of the rule it
    breaks (as the same value in a table would), not a generic parse error."""
    text = ("inf qid:1 1:1\n-inf qid:1 1:1\nnan qid:1 1:1\n1 qid:1 2:inf\n"
            "1 qid:1 2:-Infinity\n1 qid:1 2:nan\n1 qid:1 1:1\n")
    p = parse_letor(text.encode(), fmt="letor")
    assert p.line_numbers.tolist() == [7]
    assert [(r[0], r[1].code) for r in p.rejected] == [
        (1, "label_out_of_range"), (2, "label_negative"), (3, "label_not_a_number"),
        (4, "value_out_of_range"), (5, "value_out_of_range"), (6, "unparsable")]
    assert p.rejected[3][1].reason.startswith("feature 2 value inf is beyond the float32")
