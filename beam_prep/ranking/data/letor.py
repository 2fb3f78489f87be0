"""Vectorised parsing of LETOR / LibSVM ranking text into per-query document chunks.

Line grammar (one document per line)::

    <label> [qid:<query id>] <id>:<value> <id>:<value> ... [# comment]

* ``label`` and values are decimal numbers (``1``, ``0.5``, ``.5``, ``2e-3``); ``nan``/``inf``
  are rejected (an ``inf`` label or value with the code of a value beyond the float32 range, a
  ``nan`` label as not a number, a ``nan`` value as unparsable). Values are parsed as float64
  and rounded to float32; a line with a label or a value beyond the float32 range (``1e39``:
  it would become ``inf``) is rejected, and so is a line with a negative label (``-1`` is the
  padding label of the reader output). Every rejected line carries a reason code of
  :data:`~beam_prep.ranking.data.value_rules.REJECT_CODES`.
* Feature ids are non-negative integers (at most 9 digits), in any order; when an id repeats
  within a line the **last** value wins.
* Blank lines and comment-only lines are skipped (they are not documents and not rejected).
* ``letor`` format: ``qid:`` is required. ``lightgbm`` format: ``qid:`` is ignored and the
  document's query is given by the ``.query`` file beside the data file (one group size per
  line, groups of consecutive non-blank lines); the query id is ``<file>:<group index>``.

The whole file is parsed with pyarrow compute kernels (RE2 regular expressions and casts); only
rejected lines get per-line Python (to explain why they were rejected).

Example:
    >>> p = parse_letor(b"2 qid:7 3:0.5 1:1 # doc a\\n0 qid:7 1:2 1:3\\n", fmt="letor")
    >>> p.qids.tolist(), p.labels.tolist(), p.ids.tolist(), p.values.tolist()
    (['7', '7'], [2.0, 0.0], [3, 1, 1], [0.5, 1.0, 3.0])
    >>> p.qid_names.tolist(), p.qid_codes.tolist()
    (['7'], [0, 0])
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.errors import InputError
from beam_prep.ranking.data.value_rules import (
    FEATURE_ID_OUT_OF_RANGE,
    MISSING_QUERY_ID,
    UNPARSABLE,
    Problem,
    beyond_float32,
    label_not_a_number,
    label_problems,
    value_problem,
)

LetorFormat = Literal["letor", "lightgbm"]
LETOR_FORMATS: tuple[str, ...] = ("letor", "lightgbm")

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LINE = (
    r"^\s*(?P<label>" + _NUM + r")(?:\s+qid:(?P<qid>[^\s#]+))?"
    r"(?P<rest>(?:\s+\d{1,9}:" + _NUM + r")*)\s*(?:#.*)?$"
)
_HEAD = r"^\s*(?P<label>\S+)(?:\s+qid:(?P<qid>[^\s#]+))?"
_BLANK = r"^\s*(?:#.*)?$"
_NUM_RE = re.compile(_NUM + "$")
_PAIR_RE = re.compile(r"\d{1,9}:" + _NUM + "$")


@dataclasses.dataclass(frozen=True)
class ParsedLetor:
    """Documents parsed from one file, in line order (CSR layout for the sparse features).

    Attributes:
        line_numbers: 1-based line number of each document, int64 ``[n]``.
        labels: float64 ``[n]``.
        qid_names: the distinct query ids (numpy object array of ``str``), first-seen order for
            ``letor``, group order for ``lightgbm`` (may include empty groups).
        qid_codes: int64 ``[n]``; document ``i`` belongs to query ``qid_names[qid_codes[i]]``.
        indptr: int64 ``[n + 1]``; document ``i``'s features are
            ``ids/values[indptr[i]:indptr[i+1]]``.
        ids: int64 feature ids, duplicates already resolved (last value wins).
        values: float32 feature values.
        rejected: ``(line number, problem, line text)`` for every line that could not be
            parsed or kept (:class:`~beam_prep.ranking.data.value_rules.Problem`).
        num_lines: non-blank lines seen (documents + rejected).
    """

    line_numbers: np.ndarray
    labels: np.ndarray
    qid_names: np.ndarray
    qid_codes: np.ndarray
    indptr: np.ndarray
    ids: np.ndarray
    values: np.ndarray
    rejected: tuple[tuple[int, Problem, str], ...]
    num_lines: int

    @property
    def qids(self) -> np.ndarray:
        """Query id of each document (object array of ``str`` ``[n]``); builds ``n`` objects."""
        return self.qid_names[self.qid_codes] if len(self.qid_codes) else \
            np.array([], dtype=object)


def parse_query_sizes(data: bytes, *, path: str = "<query file>") -> np.ndarray:
    """Parses a LightGBM ``.query`` file: one non-negative group size per non-blank line."""
    tokens = data.split()
    try:
        sizes = np.array([int(t) for t in tokens], dtype=np.int64)
    except ValueError as e:
        raise InputError(
            f"query file {path!r} must hold one integer group size per line. Received: {e}. "
            "Fix the file or use --input_format=letor with qid: columns."
        ) from None
    if (sizes < 0).any():
        raise InputError(f"query file {path!r} holds a negative group size; sizes must be >= 0.")
    return sizes


def parse_letor(
    data: bytes,
    *,
    fmt: LetorFormat = "letor",
    query_sizes: np.ndarray | None = None,
    group_offset: int = 0,
    num_groups: int | None = None,
    num_features: int | None = None,
    source: str = "<input>",
) -> ParsedLetor:
    """Parses a whole LETOR/LibSVM file.

    Args:
        data: the file's bytes (UTF-8; undecodable bytes become U+FFFD and usually reject the line).
        fmt: ``"letor"`` (``qid:`` required) or ``"lightgbm"`` (groups from ``query_sizes``).
        query_sizes: group sizes for ``"lightgbm"``; their sum must equal the non-blank line count.
        group_offset: index of the first group of ``query_sizes`` in the whole ``.query`` file
            (when ``data`` is a piece of the file that starts at a group boundary).
        num_groups: groups in the whole ``.query`` file (sets the zero padding of the query ids;
            default ``len(query_sizes)``).
        num_features: if set, feature ids must lie in ``[1, num_features]``; others reject the line.
        source: file name used in error messages.

    Returns:
        A :class:`ParsedLetor`.
    """
    if fmt not in LETOR_FORMATS:
        raise InputError(f"`fmt` must be one of {LETOR_FORMATS}. Received: fmt={fmt!r}")
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    arr = pa.array(lines, type=pa.large_string())
    arr = pc.utf8_rtrim(arr, characters="\r")
    line_no_all = np.arange(1, len(lines) + 1, dtype=np.int64)

    blank = pc.match_substring_regex(arr, _BLANK).to_numpy(zero_copy_only=False)
    keep = ~blank
    arr = arr.filter(pa.array(keep))
    line_no = line_no_all[keep]
    n_lines = len(arr)

    if fmt == "lightgbm":
        if query_sizes is None:
            raise InputError(f"lightgbm input {source!r} needs its .query file (group sizes).")
        if int(query_sizes.sum()) != n_lines:
            raise InputError(
                f"query file for {source!r} sums to {int(query_sizes.sum())} rows but the data "
                f"file has {n_lines} non-blank lines. Fix the .query file so the sizes add up."
            )
        groups = np.repeat(np.arange(len(query_sizes), dtype=np.int64), query_sizes)
        total = len(query_sizes) if num_groups is None else num_groups
        width = max(6, len(str(max(total - 1, 0))))
        group_names = np.array([f"{source}:{g + group_offset:0{width}d}"
                                for g in range(len(query_sizes))],
                               dtype=object)

    ok = pc.match_substring_regex(arr, _LINE).to_numpy(zero_copy_only=False)
    head = pc.extract_regex(arr, _HEAD)
    qid_col = head.field("qid")
    if fmt == "letor":
        has_qid = pc.not_equal(qid_col, "").fill_null(False).to_numpy(zero_copy_only=False)
        ok_final = ok & has_qid
    else:
        ok_final = ok

    mask = pa.array(ok_final)
    good = arr.filter(mask)
    labels = pc.cast(head.field("label").filter(mask), pa.float64()).to_numpy(zero_copy_only=False)
    body = pc.list_element(pc.split_pattern(good, "#", max_splits=1), 0)
    rest = pc.replace_substring_regex(body, _HEAD, "", max_replacements=1)
    rest = pc.ascii_trim_whitespace(pc.replace_substring(rest, ":", " "))
    rest = pc.if_else(pc.equal(rest, ""), pa.scalar(None, pa.large_string()), rest)
    tokens = pc.ascii_split_whitespace(rest)
    counts = pc.list_value_length(tokens).fill_null(0).to_numpy(zero_copy_only=False)
    counts = counts.astype(np.int64) // 2
    flat = pc.list_flatten(tokens)
    ids = pc.cast(pc.take(flat, pa.array(np.arange(0, len(flat), 2))),
                  pa.int64()).to_numpy(zero_copy_only=False)
    vals64 = pc.cast(pc.take(flat, pa.array(np.arange(1, len(flat), 2))),
                     pa.float64()).to_numpy(zero_copy_only=False)
    good_lines = line_no[ok_final]
    if fmt == "letor":
        encoded = pc.dictionary_encode(qid_col.filter(mask))
        qid_names = np.array(encoded.dictionary.to_pylist(), dtype=object)
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        qid_names = group_names
        codes = groups[ok_final]

    rejected: list[tuple[int, Problem, str]] = []
    bad_idx = np.flatnonzero(~ok_final)
    for i in bad_idx:
        line = arr[int(i)].as_py()
        rejected.append((int(line_no[i]), _explain(line, fmt), line))

    doc_of = np.repeat(np.arange(len(counts)), counts)
    reasons = _document_problems(labels, doc_of, ids, vals64, num_features)
    if reasons:
        for d, why in reasons.items():
            i_line = int(good_lines[d])
            rejected.append((i_line, why, lines[i_line - 1]))
        keep_doc = np.ones(len(counts), dtype=bool)
        keep_doc[list(reasons)] = False
        labels, codes, good_lines = labels[keep_doc], codes[keep_doc], good_lines[keep_doc]
        keep_feat = keep_doc[doc_of]
        ids, vals64 = ids[keep_feat], vals64[keep_feat]
        counts = counts[keep_doc]
        doc_of = np.repeat(np.arange(len(counts)), counts)
    rejected.sort()

    ids, vals, counts = _last_value_wins(doc_of, ids, vals64.astype(np.float32), len(counts))
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return ParsedLetor(
        line_numbers=good_lines, labels=labels, qid_names=qid_names, qid_codes=codes,
        indptr=indptr, ids=ids,
        values=vals, rejected=tuple(rejected), num_lines=n_lines,
    )


def _first_per_document(bad: np.ndarray, doc_of: np.ndarray) -> dict[int, int]:
    """``{document: position of its first bad feature}`` for a per-feature mask."""
    positions = np.flatnonzero(bad)
    docs, first = np.unique(doc_of[positions], return_index=True)
    return dict(zip(docs.tolist(), positions[first].tolist()))


def _document_problems(labels: np.ndarray, doc_of: np.ndarray, ids: np.ndarray,
                       vals64: np.ndarray, num_features: int | None) -> dict[int, Problem]:
    """``{document index: problem}`` for well-formed lines whose numbers cannot be kept.

    One reason per document (the first found, in this order): a feature id outside
    ``[1, num_features]``, a negative label (``-1`` marks padding lists), a label or a
    feature value beyond the float32 range (it would be written as ``inf``).
    """
    reasons: dict[int, Problem] = {}
    if num_features is not None and len(ids):
        out_of_range = (ids < 1) | (ids > num_features)
        for d, pos in _first_per_document(out_of_range, doc_of).items():
            reasons[d] = Problem(FEATURE_ID_OUT_OF_RANGE, f"feature id {int(ids[pos])} outside "
                                 f"[1, {num_features}] (--num_features)")
    for d, why in label_problems(labels).items():
        reasons.setdefault(d, why)
    for d, pos in _first_per_document(beyond_float32(vals64), doc_of).items():
        reasons.setdefault(d, value_problem(str(int(ids[pos])), vals64[pos]))
    return dict(sorted(reasons.items()))


def _last_value_wins(
    doc_of: np.ndarray, ids: np.ndarray, vals: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drops earlier duplicates of (doc, id), keeping the original order of the survivors."""
    if len(ids) == 0:
        return ids, vals, np.zeros(n_docs, dtype=np.int64)
    same_doc = doc_of[1:] == doc_of[:-1]
    if not (same_doc & (ids[1:] <= ids[:-1])).any():  # ids increase within every document
        return ids, vals, np.bincount(doc_of, minlength=n_docs).astype(np.int64)
    key = doc_of.astype(np.int64) * (1 << 31) + ids
    rev = key[::-1]
    _, first_in_rev = np.unique(rev, return_index=True)
    keep = np.zeros(len(key), dtype=bool)
    keep[len(key) - 1 - first_in_rev] = True
    if keep.all():
        return ids, vals, np.bincount(doc_of, minlength=n_docs).astype(np.int64)
    return ids[keep], vals[keep], np.bincount(doc_of[keep], minlength=n_docs).astype(np.int64)


def _float_token(token: str) -> float | None:
    """``float(token)`` for the tokens Python reads but the grammar refuses (``inf``, ``nan``,
    ``Infinity``), else None."""
    try:
        return float(token)
    except ValueError:
        return None


def _explain(line: str, fmt: str) -> Problem:
    """Why ``line`` did not match the grammar (slow path, bad lines only)."""
    body = line.split("#", 1)[0].split()
    if not _NUM_RE.match(body[0]):
        label = _float_token(body[0])  # inf / nan: the label rules say which
        found = label_problems(np.array([label])).get(0) if label is not None else None
        return found or label_not_a_number(body[0][:40])
    rest = body[1:]
    if rest and rest[0].startswith("qid:"):
        if len(rest[0]) == 4:
            return Problem(MISSING_QUERY_ID, "empty qid:")
        rest = rest[1:]
    elif fmt == "letor":
        return Problem(MISSING_QUERY_ID, "missing qid: after the label (use "
                       "--input_format=lightgbm for .query files)")
    for tok in rest:
        if tok.startswith("qid:"):
            return Problem(UNPARSABLE, f"unexpected {tok[:40]!r} (qid: must follow the label)")
        if not _PAIR_RE.match(tok):
            fid, _, text = tok.partition(":")
            value = _float_token(text) if fid.isdigit() else None
            if value is not None and beyond_float32(np.array([value]))[0]:
                return value_problem(fid, value)
            return Problem(UNPARSABLE, f"bad feature token {tok[:40]!r} (expected <id>:<number>)")
    return Problem(UNPARSABLE, "line does not match `label [qid:Q] id:value ... [# comment]`")
