"""The bytes of the vocabulary files: the ``.txt`` token list and the counts sidecar.

Both bodies are built with element-wise joins over the Arrow buffers: no Python string per
token, except for the rare tokens that need JSON escapes. A line-based file cannot hold an
empty token or one containing a line break: :func:`unwritable_mask` finds them so they are
dropped (and counted) before writing.

Example:
    >>> import pyarrow as pa
    >>> from beam_prep.analyzers.vocab.count import table_from_counts
    >>> t = table_from_counts(pa.array(["b", 'q"']), pa.array([2, 1]))
    >>> vocabulary_text(t.column("token").combine_chunks())
    b'b\\nq"\\n'
    >>> counts_jsonl(t, with_df=False)
    b'["b",2]\\n["q\\\\"",1]\\n'
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.vocab.strings import string_buffers
from beam_prep.io.contract.artifacts import LINE_BREAK_CHARS

__all__ = ["counts_jsonl", "unwritable_mask", "vocabulary_text"]

_UNWRITABLE_RE = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in LINE_BREAK_CHARS) + "]"
_JSON_UNSAFE_RE = r'["\\\x00-\x1f]'


def unwritable_mask(tokens: pa.Array) -> pa.Array:
    """Tokens a line-based vocabulary file cannot hold: empty or containing a line break.

    Every line-break character is a control byte (< 0x20) or non-ASCII, so when the
    token bytes hold neither (the common case) only empty tokens need looking at.
    """
    if isinstance(tokens, pa.ChunkedArray):
        tokens = tokens.combine_chunks()
    empty = pc.equal(pc.binary_length(tokens), 0)
    if len(tokens) == 0:
        return empty
    _, data = string_buffers(tokens)
    if not ((data < 0x20) | (data >= 0x80)).any():
        return empty
    return pc.or_(empty, pc.match_substring_regex(tokens, _UNWRITABLE_RE))


def _concatenated(strings: pa.Array) -> bytes:
    """The bytes of every element of a string array, back to back (its data buffer)."""
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)
    start = int(offsets[strings.offset])
    end = int(offsets[strings.offset + len(strings)])
    return strings.buffers()[2].slice(start, end - start).to_pybytes()


def _ls(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def vocabulary_text(tokens: pa.Array) -> bytes:
    """The .txt file body: one token per line, UTF-8, trailing newline (empty if none)."""
    if len(tokens) == 0:
        return b""
    if isinstance(tokens, pa.ChunkedArray):
        tokens = tokens.combine_chunks()
    return _concatenated(pc.binary_join_element_wise(tokens.cast(pa.large_string()),
                                                     _ls("\n"), _ls("")))


def _json_unsafe(tokens: pa.Array) -> pa.Array | None:
    """Per-token mask of tokens needing JSON escapes (quote, backslash, control byte), or
    None when no token does (checked on the raw bytes first: one numpy pass)."""
    _, data = string_buffers(tokens)
    if not ((data < 0x20) | (data == 0x22) | (data == 0x5C)).any():
        return None
    return pc.match_substring_regex(tokens, _JSON_UNSAFE_RE)


def counts_jsonl(table: pa.Table, *, with_df: bool) -> bytes:
    """The sidecar body: ``[token, count]`` (or ``[token, count, df]``) per line.

    Built by one element-wise join over the Arrow buffers; only tokens that need JSON
    escapes go through ``json.dumps``.
    """
    if table.num_rows == 0:
        return b""
    tokens = table.column("token").combine_chunks().cast(pa.large_string())
    nums = [pc.cast(table.column(c).combine_chunks(), pa.large_string())
            for c in (("count", "df") if with_df else ("count",))]
    unsafe = _json_unsafe(tokens)
    if unsafe is None:
        parts = [_ls('["'), tokens, _ls('",')]
    else:
        quote = _ls('"')
        quoted = pc.binary_join_element_wise(quote, tokens, quote, _ls(""))
        fixed = [json.dumps(t, ensure_ascii=False) if u else None
                 for t, u in zip(tokens.to_pylist(), unsafe.to_pylist())]
        quoted = pc.if_else(unsafe, pa.array(fixed, pa.large_string()), quoted)
        parts = [_ls("["), quoted, _ls(",")]
    for i, num in enumerate(nums):
        parts += ([_ls(",")] if i else []) + [num]
    parts += [_ls("]\n"), _ls("")]
    return _concatenated(pc.binary_join_element_wise(*parts))
