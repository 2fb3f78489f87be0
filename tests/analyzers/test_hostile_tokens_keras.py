"""Hostile data values as vocabulary tokens, from a real analysis to the Keras layer.

Each data value below comes from an attacker: NUL, ESC sequences, bidi overrides, HTML,
quotes and backslashes, a 5000-character token, and every line boundary Python or
TensorFlow could split a line on. The vocabulary file is one token per line, read by
``keras.layers.StringLookup`` (TensorFlow's text-file reader: lines end at ``\\n``).

Oracle (computed here from the raw values, not from the code under test): a value with a
line boundary (``\\n \\r \\x0b \\x0c \\x1c \\x1d \\x1e \\x85 \\u2028 \\u2029``) or empty cannot be a
line and is OOV (index 1; TF Transform filters ``\\n``/``\\r`` tokens the same way); every
other distinct value has its own line, and the layer maps the value to 2 + that line's
position as Python reads the file (``bytes.split(b"\\n")``).
"""

from __future__ import annotations

import csv
import os

import pytest
from beam_prep.pipelines import analyze

BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # written out here, not imported
WRITABLE = ["nul\x00byte", "\x1b[2J\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "\u202eevil",
            "<script>alert(1)</script>", '"""; import os #', "back\\slash", "tab\there",
            " lead and trail ", "x" * 5000, "\ufeffbom", "\U0001f600 emoji", "csi\x9b31m",
            "tag\U000e0041"]
UNWRITABLE = [f"a{b}b" for b in BREAKS] + ["ends\r"]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_vocab")
    data, spec = str(root / "d.csv"), str(root / "spec.yaml")
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n", quoting=csv.QUOTE_ALL)
        w.writerow(["c"])
        for i, t in enumerate(WRITABLE + UNWRITABLE):
            for _ in range(1 + i % 3):
                w.writerow([t])
    with open(spec, "w", encoding="utf-8") as f:
        f.write("version: 1\nfeatures:\n  - {name: c, kind: string}\n")
    out = str(root / "art")
    analyze.run(["--spec", spec, "--input", data, "--output", out, "--quiet"])
    return out


def test_written_tokens_are_exactly_the_writable_values(artifacts):
    with open(os.path.join(artifacts, "vocab", "c.txt"), "rb") as f:
        lines = f.read().split(b"\n")
    assert lines[-1] == b""  # trailing newline, nothing after it
    assert sorted(lines[:-1]) == sorted(t.encode() for t in WRITABLE)


def test_string_lookup_reading_the_file_matches_the_oracle(artifacts):
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    path = os.path.join(artifacts, "vocab", "c.txt")
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    values = WRITABLE + UNWRITABLE + ["never seen"]
    expected = [2 + lines.index(v.encode()) if not any(b in v for b in BREAKS) and v
                and v != "never seen" else 1 for v in values]
    layer = keras.layers.StringLookup(vocabulary=path, mask_token="", num_oov_indices=1)
    got = layer(tf.constant([v.encode() for v in values])).numpy().tolist()
    assert got == expected
    assert layer.vocabulary_size() == 2 + len(WRITABLE)
