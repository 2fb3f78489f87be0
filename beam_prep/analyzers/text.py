"""Text tokenisation identical to ``keras.layers.TextVectorization``, vectorised with Arrow.

Vocabularies computed in Beam must hold exactly the tokens the layer produces at serving
time, so every step below reproduces the layer's built-in modes byte for byte (Keras 3.15,
TensorFlow 2.21; checked against the real layer in ``tests/analyzers/test_text.py``):

====================================  =========================================================
Keras step (TF op)                    what it does, and how it is done here
====================================  =========================================================
``lower`` (``tf.strings.lower``)      ASCII ``A-Z`` only; ``"ÉΞ"`` is unchanged.
                                      ``pc.ascii_lower``.
``strip_punctuation``                 deletes the 32 ASCII punctuation characters
(``tf.strings.regex_replace``)        ``!"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~``; non-ASCII
                                      punctuation (``« » — ’ ᾽``) is kept. Arrow's regex is
                                      RE2 as in TF; an ASCII class never matches inside a
                                      multi-byte UTF-8 sequence.
``whitespace`` (``tf.strings.split``)  splits on runs of the six ASCII spaces
                                      ``" \\t\\n\\v\\f\\r"`` only (not ``\\x1c-\\x1f``,
                                      ``\\x85``, ``\\u00a0``, ``\\u2028``, ``\\u3000`` …), no
                                      empty tokens. ``pc.ascii_split_whitespace`` splits on
                                      the same six bytes but keeps a leading/trailing empty
                                      token: those are removed.
``character``                         one token per Unicode code point (a combining mark
(``tf.strings.unicode_split``)        or an emoji modifier is its own token). Done on the
                                      UTF-8 bytes with numpy: a token starts at every byte
                                      that is not ``0b10xxxxxx``.
``none``                              the (standardized) string is the one token, even
                                      ``""``.
``ngrams`` (``tf.strings.ngrams``)    per row, all n-grams of the first width, then of the
                                      next width, …, each in text order, joined by ``" "``;
                                      a row shorter than n gives no n-gram of width n.
====================================  =========================================================

Null rows give an empty token list (the caller decides what a missing value means).
Inputs may be ``string``, ``large_string``, ``binary`` or ``large_binary`` arrays (binary
must be valid UTF-8), chunked or not. Token arrays are ``string`` for string/binary input and
``large_string`` for the large types.

``text_counts.token_counts`` counts ``""`` and ``"[UNK]"`` like any other token;
``TextVectorization.adapt`` drops them from the vocabulary (:data:`KERAS_RESERVED_TOKENS`),
so a vocabulary writer must too.

Example:
    >>> import pyarrow as pa
    >>> from beam_prep.spec import TextFeature
    >>> f = TextFeature("t", ngrams=2)
    >>> tokenize(pa.array(["The Sky, the SEA"]), f).to_pylist()
    [['the', 'sky', 'the', 'sea', 'the sky', 'sky the', 'the sea']]
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.errors import InputError, SpecError
from beam_prep.spec import SPLIT_OPTIONS, STANDARDIZE_OPTIONS, TextFeature

__all__ = [
    "KERAS_RESERVED_TOKENS",
    "Grams",
    "add_ngrams",
    "grams",
    "split",
    "standardize",
    "tokenize",
]

#: Tokens ``TextVectorization.adapt`` never puts in a vocabulary (padding and OOV).
KERAS_RESERVED_TOKENS: tuple[str, ...] = ("", "[UNK]")

NGRAM_SEPARATOR = " "

# Every ASCII punctuation character, each escaped, in one RE2 character class.
_PUNCTUATION_PATTERN = "[" + "".join("\\" + c for c in string.punctuation) + "]"


# --------------------------------------------------------------------------- input

def _as_text_array(texts: Any) -> pa.Array:
    """Returns one non-chunked string or large_string array."""
    if isinstance(texts, pa.ChunkedArray):
        texts = (pa.concat_arrays(texts.chunks) if texts.num_chunks
                 else pa.array([], type=texts.type))
    elif not isinstance(texts, pa.Array):
        try:
            texts = pa.array(texts, type=pa.string())
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise InputError(
                "Texts must be a pyarrow string/binary array or a sequence of str. "
                f"Received: {type(texts).__name__} ({e})"
            ) from e
    if pa.types.is_dictionary(texts.type):
        texts = texts.dictionary_decode()
    t = texts.type
    if pa.types.is_null(t):
        return pa.nulls(len(texts), type=pa.string())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return texts
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        target = pa.string() if pa.types.is_binary(t) else pa.large_string()
        try:
            return texts.cast(target)
        except pa.ArrowInvalid as e:
            raise InputError(
                "Text must be valid UTF-8 (TextVectorization decodes it as UTF-8). "
                f"Received: a {t} array with invalid bytes ({e}). Fix the input encoding "
                "or decode it with errors='replace' before analysis."
            ) from e
    raise InputError(
        f"Texts must be a string, large_string, binary or large_binary array. Received: {t}"
    )


def _check_mode(field: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value is None:
        return "none"
    if value not in allowed:
        raise SpecError(
            f"`{field}` must be one of {', '.join(repr(a) for a in allowed)} (or None). "
            f"Received: {field}={value!r}"
        )
    return value


def _offsets(arr: pa.Array) -> np.ndarray:
    """The offsets of a string/list array as int64 numpy, honouring its slice offset."""
    buf = arr.buffers()[1]
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_list(arr.type)
    dtype = np.int64 if large else np.int32
    if buf is None:  # zero-length array
        return np.zeros(len(arr) + 1, dtype=np.int64)
    raw = np.frombuffer(buf, dtype=dtype)
    return raw[arr.offset: arr.offset + len(arr) + 1].astype(np.int64)


def _list_array(offsets: np.ndarray, values: pa.Array) -> pa.ListArray:
    """A list array with no nulls from int64 offsets (starting at 0) and values."""
    if offsets[-1] > np.iinfo(np.int32).max:
        raise InputError(
            f"A batch produced {int(offsets[-1])} tokens, more than a list array holds "
            "(2**31 - 1). Fix: use smaller input batches."
        )
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values)


def _flat(tokens: pa.ListArray) -> tuple[np.ndarray, pa.Array]:
    """Offsets rebased to 0 and the values they index (handles sliced list arrays)."""
    if isinstance(tokens, pa.ChunkedArray):
        tokens = (pa.concat_arrays(tokens.chunks) if tokens.num_chunks
                  else pa.array([], type=tokens.type))
    if tokens.null_count:
        tokens = pc.fill_null(tokens, pa.scalar([], type=tokens.type))
    offsets = _offsets(tokens)
    base = int(offsets[0])
    values = tokens.values.slice(base, int(offsets[-1]) - base)
    return offsets - base, values


# --------------------------------------------------------------------------- steps

def standardize(texts: pa.Array, mode: str | None) -> pa.Array:
    """Applies a TextVectorization ``standardize`` mode.

    Args:
        texts: String/binary array (chunked or not), one text per row.
        mode: ``lower_and_strip_punctuation``, ``lower``, ``strip_punctuation`` or
            ``none`` (``None`` means ``none``, as in Keras).

    Returns:
        A string (or large_string) array of the same length; nulls stay null.

    Example:
        >>> standardize(pa.array(["Ξ É A-b!", None]), "lower_and_strip_punctuation").to_pylist()
        ['Ξ É ab', None]
    """
    mode = _check_mode("standardize", mode, STANDARDIZE_OPTIONS)
    arr = _as_text_array(texts)
    if mode in ("lower", "lower_and_strip_punctuation"):
        arr = pc.ascii_lower(arr)
    if mode in ("strip_punctuation", "lower_and_strip_punctuation"):
        arr = pc.replace_substring_regex(arr, pattern=_PUNCTUATION_PATTERN, replacement="")
    return arr


def _split_whitespace(arr: pa.Array) -> pa.ListArray:
    parts = pc.ascii_split_whitespace(pc.fill_null(arr, ""))
    offsets, values = _flat(parts)
    keep = np.asarray(pc.binary_length(values)) > 0
    if keep.all():
        return _list_array(offsets, values)
    kept_before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    return _list_array(kept_before[offsets], values.filter(pa.array(keep)))


def _split_characters(arr: pa.Array) -> pa.ListArray:
    arr = pc.fill_null(arr, "")
    offsets = _offsets(arr)
    data_buf = arr.buffers()[2]
    start, end = int(offsets[0]), int(offsets[-1])
    if data_buf is None or end == start:
        empty = pa.array([], type=arr.type)
        return _list_array(np.zeros(len(arr) + 1, dtype=np.int64), empty)
    data = np.frombuffer(data_buf, dtype=np.uint8)[start:end]
    # A code point starts at every byte that is not a UTF-8 continuation byte (10xxxxxx).
    starts = np.flatnonzero((data & 0xC0) != 0x80).astype(np.int64) + start
    value_offsets = np.append(starts, end)
    large = pa.types.is_large_string(arr.type)
    cls = pa.LargeStringArray if large else pa.StringArray
    values = cls.from_buffers(
        len(starts), pa.py_buffer(value_offsets.astype(np.int64 if large else np.int32)),
        data_buf)
    # Every row begins on a code point boundary, so row r owns tokens from the number of
    # code points that start before offsets[r].
    list_offsets = np.searchsorted(starts, offsets, side="left").astype(np.int64)
    return _list_array(list_offsets, values)


def _split_none(arr: pa.Array) -> pa.ListArray:
    valid = np.ones(len(arr), dtype=bool) if not arr.null_count else \
        np.asarray(arr.is_valid())
    offsets = np.concatenate(([0], np.cumsum(valid, dtype=np.int64)))
    return _list_array(offsets, arr.drop_null() if arr.null_count else arr)


def split(texts: pa.Array, mode: str | None) -> pa.ListArray:
    """Applies a TextVectorization ``split`` mode (no standardization).

    Args:
        texts: String/binary array (chunked or not).
        mode: ``whitespace``, ``character`` or ``none`` (``None`` means ``none``).

    Returns:
        A list array with one (possibly empty) token list per row; null rows give ``[]``.

    Example:
        >>> split(pa.array([" a\\u00a0b  c ", None, ""]), "whitespace").to_pylist()
        [['a\\xa0b', 'c'], [], []]
        >>> split(pa.array(["e\\u0301!"]), "character").to_pylist()
        [['e', '́', '!']]
    """
    mode = _check_mode("split", mode, SPLIT_OPTIONS)
    arr = _as_text_array(texts)
    if mode == "whitespace":
        return _split_whitespace(arr)
    if mode == "character":
        return _split_characters(arr)
    return _split_none(arr)


def _check_widths(widths: Sequence[int]) -> tuple[int, ...]:
    widths = tuple(widths)
    if not widths or any(isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1
                         for w in widths):
        raise SpecError(
            "`widths` must be a non-empty tuple of positive integers (e.g. (1, 2) for "
            f"ngrams=2). Received: widths={widths!r}"
        )
    return tuple(int(w) for w in widths)


class Grams:
    """The n-grams of split tokens, one block per width, each block in token order.

    Attributes:
        offsets: Row offsets into the split tokens (from 0).
        widths: The n-gram widths, in output order.
        row_of_token: Row of every split token.
        blocks: Per width: (index of each n-gram's first token, the n-grams).
    """

    def __init__(self, offsets: np.ndarray, values: pa.Array, widths: tuple[int, ...]):
        self.offsets = offsets
        self.widths = widths
        lengths = np.diff(offsets)
        n_tokens = len(values)
        self.row_of_token = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        # Tokens from each token to the end of its row, itself included.
        remaining = offsets[1:][self.row_of_token] - np.arange(n_tokens, dtype=np.int64)
        separator = pa.scalar(NGRAM_SEPARATOR, type=values.type)
        self.blocks: list[tuple[np.ndarray, pa.Array]] = []
        for w in widths:
            if w == 1:
                self.blocks.append((np.arange(n_tokens, dtype=np.int64), values))
                continue
            starts = np.flatnonzero(remaining >= w)
            parts = [values.take(pa.array(starts + k)) for k in range(w)]
            self.blocks.append((starts, pc.binary_join_element_wise(*parts, separator)))

    def values(self) -> pa.Array:
        """Every n-gram, blocks one after the other (not in row order)."""
        return pa.concat_arrays([grams for _, grams in self.blocks])

    def rows(self) -> np.ndarray:
        """The row of every n-gram of :meth:`values`."""
        return np.concatenate([self.row_of_token[starts] for starts, _ in self.blocks])

    def in_row_order(self) -> pa.ListArray:
        """Per row: the block of the first width, then the next width, … (Keras order)."""
        lengths = np.diff(self.offsets)
        counts = np.stack([np.maximum(lengths - (w - 1), 0) for w in self.widths])
        block_end = np.cumsum(counts, axis=0)
        out_offsets = np.concatenate(([0], np.cumsum(block_end[-1], dtype=np.int64)))
        # The n-gram of block i starting at token t (row r) goes to output slot
        # t + out_offsets[r] + block_end[i - 1][r] - offsets[r].
        slots = []
        for i, (starts, _) in enumerate(self.blocks):
            shift = out_offsets[:-1] - self.offsets[:-1] + (block_end[i - 1] if i else 0)
            slots.append(starts + shift[self.row_of_token[starts]])
        source = np.empty(int(out_offsets[-1]), dtype=np.int64)
        source[np.concatenate(slots)] = np.arange(len(source), dtype=np.int64)
        return _list_array(out_offsets, self.values().take(pa.array(source)))


def add_ngrams(tokens: pa.ListArray, widths: Sequence[int]) -> pa.ListArray:
    """Replaces each row's tokens by its n-grams of the given widths, in Keras order.

    Per row: every n-gram of ``widths[0]`` in text order, then of ``widths[1]``, …;
    tokens are joined by a single space. ``widths=(1,)`` returns the tokens unchanged.

    Args:
        tokens: List array of strings (from :func:`split`).
        widths: N-gram widths, e.g. ``(1, 2)`` (Keras ``ngrams=2``).

    Returns:
        A list array with the same number of rows.

    Example:
        >>> add_ngrams(pa.array([["a", "b", "c"], ["x"]]), (1, 2)).to_pylist()
        [['a', 'b', 'c', 'a b', 'b c'], ['x']]
    """
    widths = _check_widths(widths)
    offsets, values = _flat(tokens)
    if widths == (1,):
        return _list_array(offsets, values)
    return Grams(offsets, values, widths).in_row_order()


def grams(texts: pa.Array, feature: TextFeature) -> Grams:
    """The n-grams of ``feature`` over a batch, kept per width block (see :class:`Grams`)."""
    offsets, values = _flat(split(standardize(texts, feature.standardize), feature.split))
    return Grams(offsets, values, feature.ngram_widths())


def tokenize(texts: pa.Array, feature: TextFeature) -> pa.ListArray:
    """Standardize → split → n-grams, as ``TextVectorization`` does for ``feature``.

    Args:
        texts: String/binary array (chunked or not), one document per row.
        feature: The text feature (``standardize``, ``split``, ``ngrams``).

    Returns:
        One token list per row (null rows give ``[]``).

    Example:
        >>> tokenize(pa.array(["Hi, YOU!"]), TextFeature("t")).to_pylist()
        [['hi', 'you']]
    """
    tokens = split(standardize(texts, feature.standardize), feature.split)
    if feature.ngrams is not None and feature.ngrams > 1:
        tokens = add_ngrams(tokens, feature.ngram_widths())
    return tokens
