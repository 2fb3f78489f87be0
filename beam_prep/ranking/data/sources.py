"""Read one input piece (byte range of a LETOR file, Parquet row group, whole file) into blocks.

Files are opened through Beam ``FileSystems`` (local, ``gs://``, ...). Uncompressed LETOR files
are cut into byte ranges aligned on line starts (:func:`plan_pieces`), so one large file is
parsed by several workers; every piece is parsed whole with pyarrow. The documents of a piece
are cut by output ``(split, shard)`` (a hash of the query id) into columnar
:class:`~beam_prep.ranking.data.lists.DocBlock` s, so the pipeline moves a few large elements of
numpy arrays, never one element per query or per document, and never encoded protos.

Layouts describe the features seen, to be merged over all files (see :class:`LayoutCombineFn`):
``{"ids": sorted int array}`` for LETOR, ``{"schema": {column: [dtype, is_list]}}`` for tables.

Example:
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "a.txt")
    >>> _ = open(p, "w").write("1 qid:3 2:0.5\\n0 qid:3 1:1\\n")
    >>> opts = ElwcOptions(input_format="letor")
    >>> r = read_piece(p, "a.txt", 0, plan_pieces(p, opts, 1 << 20)[0], opts)
    >>> [(key, len(b)) for key, b in r.blocks], r.counts["lines"]
    ([(('train', 0), 2)], 2)
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import InputError
from beam_prep.io import filesystem
from beam_prep.io.inputs import compressed, formats
from beam_prep.ranking.data.artifact_encode import load_encoder
from beam_prep.ranking.data.jsonl import read_jsonl_table
from beam_prep.ranking.data.letor import parse_letor, parse_query_sizes
from beam_prep.ranking.data.lists import DocBlock, shard_of, split_of
from beam_prep.ranking.data.options import ElwcOptions
from beam_prep.ranking.data.value_rules import (
    INT_OUT_OF_RANGE,
    MISSING_QUERY_ID,
    UNPARSABLE,
    Problem,
    beyond_float32,
    count_codes,
    label_not_a_number,
    label_problems,
    rejected_record,
    value_problem,
)
from beam_prep.ranking.feature_spec import FeatureInfo

Key = tuple[str, int]  # (split name, shard)


@dataclasses.dataclass
class PieceResult:
    """What one input piece contributes.

    Attributes:
        blocks: ``((split, shard), DocBlock)`` for every output shard the piece has documents for.
        rejected: one dict per rejected line (``file``, ``line`` counted from the piece's first
            line, ``code``, ``reason``, ``text``; see
            :func:`~beam_prep.ranking.data.value_rules.rejected_record`).
        counts: ``files`` (1 for a file's first piece), ``lines`` (non-blank lines),
            ``documents_read``, ``lines_rejected`` and ``rejected_by_reason`` (``{code:
            lines}``, from the same ``rejected`` list: summed over pieces it is exact on any
            runner, unlike a Beam counter).
        layout: the features seen (see :class:`LayoutCombineFn`).
        physical_lines: lines (or rows) in the piece, blank ones included: the offset of the
            line numbers of later pieces of the same file.
    """

    blocks: list[tuple[Key, DocBlock]]
    rejected: list[dict[str, Any]]
    counts: dict[str, int]
    layout: dict[str, Any]
    physical_lines: int


def _open(path: str) -> Any:
    return compressed.open_input(path)  # a cut .gz/.bz2/.xz fails (Beam's reader does not)


Piece = tuple[int, int, int, int, int]
"""``(piece index, start byte, end byte, first group, end group)``; end byte -1 = whole file."""
WHOLE_FILE: Piece = (0, 0, -1, 0, 0)
_BLANK_LINE = re.compile(r"[\t\n\f\r ]*(?:#.*)?")  # RE2's \s, as letor._BLANK


def plan_pieces(path: str, opts: ElwcOptions, split_bytes: int) -> list[Piece]:
    """The pieces one file is parsed in.

    Uncompressed LETOR files are cut into about equal byte ranges of at most ``split_bytes``
    (a piece owns the lines that start inside its range; ``split_bytes <= 0``: no cut).
    Uncompressed LightGBM files are cut at group starts (groups from the ``.query`` file; the
    file is read once here to find the line of each group), so a piece knows its groups. Parquet
    files give one piece per row group. Everything else (compressed files, CSV, JSONL) is one
    piece, :data:`WHOLE_FILE`.
    """
    if opts.input_format == "parquet":
        with FileSystems.open(path) as f:
            n = formats.open_parquet(f, path).metadata.num_row_groups
        return [(rg, 0, -1, 0, 0) for rg in range(max(n, 1))]
    if not opts.is_letor or split_bytes <= 0 or \
            CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED:
        return [WHOLE_FILE]
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    n = max(1, -(-size // split_bytes))
    if n == 1:
        return [WHOLE_FILE]
    edges = [size * i // n for i in range(n + 1)]
    if opts.input_format == "letor":
        return [(i, edges[i], edges[i + 1], 0, 0) for i in range(n)]
    return _plan_lightgbm(path, edges)


def _plan_lightgbm(path: str, edges: list[int]) -> list[Piece]:
    """LightGBM pieces cut at the group start nearest after each byte edge."""
    qpath = path + ".query"
    if not filesystem.exists(qpath):
        return [WHOLE_FILE]  # the parser raises the error that names the missing file
    sizes = parse_query_sizes(filesystem.read_bytes(qpath), path=qpath)
    data = filesystem.read_bytes(path)
    buf = np.frombuffer(data, np.uint8)
    starts = np.concatenate([[0], np.flatnonzero(buf == 10) + 1])
    starts = starts[starts < len(data)]
    blank = np.zeros(len(starts), bool)
    for i in np.flatnonzero(np.isin(buf[starts], list(b"\t\n\f\r #"))).tolist():
        end = int(starts[i + 1]) if i + 1 < len(starts) else len(data)
        line = data[int(starts[i]):end].decode("utf-8", errors="replace").rstrip("\n").rstrip("\r")
        blank[i] = _BLANK_LINE.fullmatch(line) is not None
    nonblank = starts[~blank]
    if int(sizes.sum()) != len(nonblank):
        return [WHOLE_FILE]  # the parser raises the error that names both counts
    group_start = np.append(nonblank, len(data))[np.concatenate([[0], np.cumsum(sizes)[:-1]])] \
        if len(sizes) else np.zeros(0, np.int64)
    cuts = [0]
    for edge in edges[1:-1]:
        g = int(np.searchsorted(group_start, edge))
        if cuts[-1] < g < len(sizes):
            cuts.append(g)
    cuts.append(len(sizes))
    byte = [0, *[int(group_start[g]) for g in cuts[1:-1]], len(data)]
    return [(i, byte[i], byte[i + 1], cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)]


def read_line_range(path: str, start: int, end: int, *, chunk: int = 1 << 16) -> bytes:
    """The whole lines of an uncompressed file whose first byte lies in ``[start, end)``."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        if start > 0:
            f.seek(start - 1)
            head = f.read(end - start + 1)
            i = head[:end - start].find(b"\n")  # the byte before a line start is a newline
            if i < 0:
                return b""
            data = head[i + 1:]
        else:
            data = f.read(end)
        parts = [data]
        if data and not data.endswith(b"\n"):
            while True:  # finish the last line
                more = f.read(chunk)
                if not more:
                    break
                j = more.find(b"\n")
                if j >= 0:
                    parts.append(more[:j + 1])
                    break
                parts.append(more)
    return b"".join(parts)


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def read_piece(path: str, relpath: str, file_index: int, piece: Piece,
               opts: ElwcOptions) -> PieceResult:
    """Parses one piece from :func:`plan_pieces` according to ``opts.input_format``."""
    if opts.is_letor:
        return _read_letor(path, relpath, file_index, piece, opts)
    return _read_table(path, relpath, file_index, piece[0], opts)


def key_blocks(block: DocBlock, opts: ElwcOptions) -> list[tuple[Key, DocBlock]]:
    """Cuts a block into one block per output ``(split, shard)`` of its queries."""
    if len(block) == 0:
        return []
    keys = [(split_of(q, opts.splits, opts.split_seed), shard_of(q, opts.num_shards))
            for q in block.qid_names.tolist()]
    distinct = sorted(set(keys))
    index = {k: i for i, k in enumerate(distinct)}
    doc_key = np.array([index[k] for k in keys], np.int64)[block.qid_codes]
    order = np.argsort(doc_key, kind="stable")
    bounds = np.searchsorted(doc_key[order], np.arange(len(distinct) + 1))
    return [(k, block.take(order[bounds[i]:bounds[i + 1]])) for i, k in enumerate(distinct)
            if bounds[i + 1] > bounds[i]]


def _id_set(ids: np.ndarray) -> np.ndarray:
    """Sorted distinct feature ids."""
    if len(ids) and int(ids.min()) >= 0 and int(ids.max()) < (1 << 22):
        return np.flatnonzero(np.bincount(ids)).astype(np.int64)
    return np.unique(ids).astype(np.int64)


def _compact_ids(ids: np.ndarray) -> np.ndarray:
    """Feature ids (0 <= id < 10**9 by the grammar) in the smallest unsigned dtype: the shuffle
    carries them, and they are most of its bytes."""
    top = int(ids.max()) if len(ids) else 0
    return ids.astype(np.uint16 if top < (1 << 16) else np.uint32)


def _read_letor(path: str, relpath: str, file_index: int, piece: Piece,
                opts: ElwcOptions) -> PieceResult:
    index, start, end, g0, g1 = piece
    if end < 0:
        with _open(path) as f:
            data = f.read()
    else:
        data = read_line_range(path, start, end)
    sizes, num_groups = None, None
    if opts.input_format == "lightgbm":
        qpath = path + ".query"
        if not filesystem.exists(qpath):
            raise InputError(f"lightgbm input {path!r} has no group file {qpath!r}. Write the "
                             "group sizes there or use --input_format=letor with qid: columns.")
        sizes = parse_query_sizes(filesystem.read_bytes(qpath), path=qpath)
        num_groups = len(sizes)
        if end >= 0:
            sizes = sizes[g0:g1]
    p = parse_letor(data, fmt=opts.input_format, query_sizes=sizes,  # type: ignore[arg-type]
                    group_offset=g0, num_groups=num_groups,
                    num_features=opts.num_features, source=relpath)
    block = DocBlock(order=(file_index, index), qid_names=p.qid_names, qid_codes=p.qid_codes,
                     labels=p.labels, sparse=(p.indptr, _compact_ids(p.ids), p.values))
    rejected = [rejected_record(relpath, ln, why, text) for ln, why, text in p.rejected]
    counts = _counts(int(index == 0), p.num_lines, len(p.labels), rejected)
    return PieceResult(key_blocks(block, opts), rejected, counts, {"ids": _id_set(p.ids)},
                       _count_lines(data))


def _counts(files: int, lines: int, documents: int, rejected: list[dict[str, Any]]
            ) -> dict[str, Any]:
    """A piece's counters; the rejected ones are derived from its rejected records."""
    return {"files": files, "lines": lines, "documents_read": documents,
            "lines_rejected": len(rejected), "rejected_by_reason": count_codes(rejected)}


def _arrow_kind(t: pa.DataType, column: str, relpath: str) -> list[Any]:
    """[dtype, is_list] of an Arrow type; dtype ``null`` for all-null columns."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_arrow_kind(t.value_type, column, relpath)[0], True]
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return ["float", False]
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return ["int64", False]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        return ["string", False]
    if pa.types.is_null(t):
        return ["null", False]
    raise InputError(f"column {column!r} of {relpath!r} has type {t}, which ELWC cannot hold; "
                     "use numbers, strings or lists of them (or leave the column out).")


def _beyond_int64(table: pa.Table, columns: Iterable[str]) -> dict[int, Problem]:
    """Row index → problem, for rows holding a uint64 value that int64 features cannot hold."""
    out: dict[int, Problem] = {}
    for c in columns:
        t = table.schema.field(c).type
        flat = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else t
        if flat != pa.uint64():
            continue
        for i, v in enumerate(table.column(c).to_pylist()):
            big = [x for x in (v if isinstance(v, list) else [v]) if x is not None and x >= 2**63]
            if big and i not in out:
                out[i] = Problem(INT_OUT_OF_RANGE, f"column {c!r} holds {big[0]}, beyond int64")
    return out


def _beyond_float32_rows(table: pa.Table, columns: Iterable[str]) -> dict[int, Problem]:
    """Row index → problem, for rows with a float value beyond the float32 range
    (:mod:`.value_rules`; one row is named by its first such column)."""
    out: dict[int, Problem] = {}
    for c in columns:
        col = table.column(c)
        t = col.type
        is_list = pa.types.is_list(t) or pa.types.is_large_list(t)
        flat_type = t.value_type if is_list else t
        if not (pa.types.is_floating(flat_type) or pa.types.is_decimal(flat_type)):
            continue
        for chunk_start, chunk in _chunks(col):
            flat = pc.list_flatten(chunk) if is_list else chunk
            values = pc.cast(flat, pa.float64()).to_numpy(zero_copy_only=False)
            rows = (pc.list_parent_indices(chunk).to_numpy(zero_copy_only=False) if is_list
                    else np.arange(len(chunk)))
            for pos in np.flatnonzero(beyond_float32(values)).tolist():
                out.setdefault(chunk_start + int(rows[pos]),
                               value_problem(repr(c), values[pos]))
    return out


def _chunks(col: pa.ChunkedArray) -> Iterator[tuple[int, pa.Array]]:
    start = 0
    for chunk in col.chunks:
        yield start, chunk
        start += len(chunk)


def _read_table_file(path: str, relpath: str, fmt: str, row_group: int
                     ) -> tuple[pa.Table | None, list[dict[str, Any]], list[int] | None]:
    """``(table or None for an empty file, lines rejected while parsing, line numbers)``."""
    with _open(path) as f:
        if fmt == "parquet":
            pf = formats.open_parquet(f, relpath)
            try:
                return pf.read_row_group(row_group), [], None
            except (pa.ArrowException, OSError) as e:
                raise InputError(f"Cannot read row group {row_group} of Parquet file "
                                 f"{relpath!r}: {e}. Rewrite or remove the file.") from e
        data = f.read()
    if not data.strip():
        return None, [], None  # an empty file (e.g. an empty part file): no rows
    if fmt == "jsonl":
        return read_jsonl_table(data, relpath)
    return _read_csv(data, relpath)


def _read_csv(data: bytes, relpath: str
              ) -> tuple[pa.Table, list[dict[str, Any]], list[int] | None]:
    """CSV → ``(table, rejected rows, row numbers)``: a row whose field count differs from the
    header's is rejected (code ``unparsable``), named by its data row (the header is row 0);
    row numbers are None when no row was rejected (table row ``i`` is data row ``i + 1``)."""
    import pyarrow.csv as pacsv

    for threads in (True, False):  # threaded parsing does not know the rows' numbers
        bad: list[Any] = []

        def skip(row: Any, bad: list[Any] = bad) -> str:
            bad.append(row)
            return "skip"

        try:
            table = pacsv.read_csv(io.BytesIO(data),
                                   read_options=pacsv.ReadOptions(use_threads=threads),
                                   parse_options=pacsv.ParseOptions(invalid_row_handler=skip))
        except pa.ArrowInvalid as e:
            raise InputError(f"Cannot parse CSV file {relpath!r}: {e}. Fix or remove the "
                             "file.") from e
        if all(row.number is not None for row in bad):
            break
    if not bad:
        return table, [], None
    rejected = [rejected_record(relpath, row.number - 1, Problem(
        UNPARSABLE, f"{row.actual_columns} fields where the header has {row.expected_columns}"),
        row.text) for row in sorted(bad, key=lambda r: r.number)]
    rows = np.arange(1, table.num_rows + len(bad) + 1)
    kept = np.setdiff1d(rows, [r["line"] for r in rejected], assume_unique=True)
    return table, rejected, kept.tolist()


def _read_table(path: str, relpath: str, file_index: int, row_group: int,
                opts: ElwcOptions) -> PieceResult:
    table, parse_rejects, line_numbers = _read_table_file(path, relpath, opts.input_format,
                                                          row_group)
    if table is None:
        return PieceResult([], [], _counts(int(row_group == 0), 0, 0, []), {"schema": {}}, 0)
    names = table.column_names
    for col in (opts.query_id_column, opts.label_column, *opts.context_columns):
        if col not in names:
            raise InputError(f"column {col!r} is missing from {relpath!r} (columns: {names}). "
                             "Fix --query_id_column/--label_column/--context_columns.")
    special = {opts.query_id_column, opts.label_column, *opts.context_columns}
    example_cols = list(opts.example_columns) if opts.example_columns is not None else \
        [c for c in names if c not in special]
    for col in example_cols:
        if col not in names:
            raise InputError(f"example column {col!r} is missing from {relpath!r} "
                             f"(columns: {names}). Fix --example_columns.")
    qid_arr = table.column(opts.query_id_column)
    qids = [None if q is None else str(q) for q in qid_arr.to_pylist()]
    labels, bad_label = _labels(table.column(opts.label_column))
    bad_qid = np.array([q is None or q == "" for q in qids], dtype=bool)
    too_big = _beyond_int64(table, (*example_cols, *opts.context_columns))
    for i, why in _beyond_float32_rows(table, (*example_cols, *opts.context_columns)).items():
        too_big.setdefault(i, why)
    label_why = {i: why for i, why in label_problems(labels).items() if not bad_label[i]}
    if opts.artifacts:  # rows a lookup without OOV slots cannot encode (artifact_encode)
        cols = (*example_cols, *opts.context_columns)
        infos = [_raw_info(c, _arrow_kind(table.schema.field(c).type, c, relpath), opts)
                 for c in cols]
        oov = load_encoder(opts.artifacts).oov_rows(
            infos, {c: table.column(c).to_pylist() for c in cols})
        too_big.update({i: why for i, why in oov.items() if i not in too_big})
    bad = bad_qid | bad_label
    bad[list(too_big)] = True
    bad[list(label_why)] = True
    rejected = list(parse_rejects)
    for i in np.flatnonzero(bad):
        why = Problem(MISSING_QUERY_ID, "missing query id") if bad_qid[i] else \
            label_not_a_number(table.column(opts.label_column)[int(i)].as_py()) \
            if bad_label[i] else label_why.get(int(i)) or too_big[int(i)]
        line = line_numbers[i] if line_numbers is not None else int(i) + 1
        rejected.append(rejected_record(relpath, line, why, ""))
    rejected.sort(key=lambda r: r["line"])
    good = np.flatnonzero(~bad).tolist()
    code_of: dict[str, int] = {}
    codes = np.array([code_of.setdefault(qids[i], len(code_of)) for i in good], np.int64)

    def pick(column: str) -> list[Any]:
        values = table.column(column).to_pylist()
        return [values[i] for i in good]

    block = DocBlock(order=(file_index, row_group),
                     qid_names=np.array(list(code_of), dtype=object), qid_codes=codes,
                     labels=labels[good], columns={c: pick(c) for c in example_cols},
                     context={c: pick(c) for c in opts.context_columns})
    schema = {c: _arrow_kind(table.schema.field(c).type, c, relpath)
              for c in (*example_cols, *opts.context_columns)}
    lines = table.num_rows + len(parse_rejects)
    counts = _counts(int(row_group == 0), lines, len(good), rejected)
    return PieceResult(key_blocks(block, opts), rejected, counts, {"schema": schema}, lines)


def _raw_info(col: str, kind: list[Any], opts: ElwcOptions) -> FeatureInfo:
    """The raw feature a column is written as (``build._column_info`` for one file)."""
    dtype = "float" if kind[0] in ("null", "float") else kind[0]
    if kind[1]:
        return FeatureInfo(col, dtype, (None,), None)
    return FeatureInfo(col, dtype, (), {"float": float(opts.missing_value), "int64": 0,
                                        "string": ""}[dtype])


def _labels(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """float64 labels and a mask of rows whose label is null or not a number."""
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or \
            pa.types.is_boolean(col.type):
        arr = pc.cast(col, pa.float64())
        bad = arr.is_null().to_numpy(zero_copy_only=False)
        return arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64), bad
    values = np.zeros(len(col))
    bad = np.zeros(len(col), dtype=bool)
    for i, v in enumerate(col.to_pylist()):
        try:
            values[i] = float(v)
        except (TypeError, ValueError):
            bad[i] = True
    bad |= np.isnan(values)
    return values, bad


_ORDER = ("null", "int64", "float")


def merge_kinds(a: list[Any], b: list[Any], column: str) -> list[Any]:
    """Combines the [dtype, is_list] of a column seen in two files (int64 + float → float)."""
    if a[0] == "null":
        return [b[0], a[1] or b[1]]
    if b[0] == "null":
        return [a[0], a[1] or b[1]]
    if a[1] != b[1]:
        return ["conflict: list and scalar", False]
    if a[0] == b[0]:
        return a
    if a[0] in _ORDER and b[0] in _ORDER:
        return [max(a[0], b[0], key=_ORDER.index), a[1]]
    return [f"conflict: {a[0]} and {b[0]}", a[1]]


class LayoutCombineFn(beam.CombineFn):
    """Union of LETOR feature ids / merge of tabular column kinds over all files."""

    def create_accumulator(self) -> dict[str, Any]:
        return {}

    def add_input(self, acc: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
        return self.merge_accumulators([acc, layout])

    def merge_accumulators(self, accs: Iterable[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for a in accs:
            if "ids" in a:
                out["ids"] = np.union1d(out.get("ids", np.zeros(0, np.int64)), a["ids"])
            for col, kind in a.get("schema", {}).items():
                schema = out.setdefault("schema", {})
                schema[col] = merge_kinds(schema[col], kind, col) if col in schema else list(kind)
        return out

    def extract_output(self, acc: dict[str, Any]) -> dict[str, Any]:
        return acc
