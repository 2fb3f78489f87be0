"""Read one input file (or Parquet row group) into per-query :class:`DocChunk` s.

Files are opened through Beam ``FileSystems`` (local, ``gs://``, ...) and parsed whole with
pyarrow; documents are grouped by query inside the file so the pipeline moves one element per
(file, query) instead of one per document.

Layouts describe the features seen, to be merged over all files (see :class:`LayoutCombineFn`):
``{"ids": sorted int array}`` for LETOR, ``{"schema": {column: [dtype, is_list]}}`` for tables.

Example:
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "a.txt")
    >>> _ = open(p, "w").write("1 qid:3 2:0.5\\n0 qid:3 1:1\\n")
    >>> r = read_file(p, "a.txt", 0, ElwcOptions(input_format="letor"))
    >>> [(c.qid, len(c)) for c in r.chunks], r.counts["lines"]
    ([('3', 2)], 2)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import InputError
from beam_prep.io import filesystem
from beam_prep.ranking.letor import parse_letor, parse_query_sizes
from beam_prep.ranking.lists import DocChunk
from beam_prep.ranking.options import ElwcOptions


@dataclasses.dataclass
class FileResult:
    """What one file contributes: chunks, rejected lines, counters and the feature layout."""

    chunks: list[DocChunk]
    rejected: list[dict[str, Any]]
    counts: dict[str, int]
    layout: dict[str, Any]


def _open(path: str) -> Any:
    return FileSystems.open(path, compression_type=CompressionTypes.AUTO)


def _group_rows(qids: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(qid, row indices in input order) for every distinct qid, in first-seen order."""
    if len(qids) == 0:
        return []
    uniq, first, inverse = np.unique(qids.astype(str), return_index=True, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(uniq)))[:-1]
    groups = np.split(order, bounds)
    return [(str(uniq[g]), groups[g]) for g in np.argsort(first)]


def read_file(path: str, relpath: str, file_index: int, opts: ElwcOptions,
              row_group: int | None = None) -> FileResult:
    """Parses one file (or Parquet row group) according to ``opts.input_format``."""
    if opts.is_letor:
        return _read_letor(path, relpath, file_index, opts)
    return _read_table(path, relpath, file_index, opts, row_group)


def _read_letor(path: str, relpath: str, file_index: int, opts: ElwcOptions) -> FileResult:
    with _open(path) as f:
        data = f.read()
    sizes = None
    if opts.input_format == "lightgbm":
        qpath = path + ".query"
        if not filesystem.exists(qpath):
            raise InputError(f"lightgbm input {path!r} has no group file {qpath!r}. Write the "
                             "group sizes there or use --input_format=letor with qid: columns.")
        sizes = parse_query_sizes(filesystem.read_bytes(qpath), path=qpath)
    p = parse_letor(data, fmt=opts.input_format, query_sizes=sizes,  # type: ignore[arg-type]
                    num_features=opts.num_features, source=relpath)
    chunks = []
    for qid, rows in _group_rows(p.qids):
        starts, ends = p.indptr[rows], p.indptr[rows + 1]
        lens = ends - starts
        take = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + \
            np.arange(int(lens.sum()))
        indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        chunks.append(DocChunk(qid=qid, file_index=file_index, line_numbers=p.line_numbers[rows],
                               labels=p.labels[rows],
                               sparse=(indptr, p.ids[take], p.values[take])))
    rejected = [{"file": relpath, "line": ln, "reason": why, "text": text[:200]}
                for ln, why, text in p.rejected]
    counts = {"files": 1, "lines": p.num_lines, "documents_read": len(p.labels),
              "lines_rejected": len(rejected)}
    return FileResult(chunks, rejected, counts, {"ids": np.unique(p.ids)})


def _arrow_kind(t: pa.DataType, column: str) -> list[Any]:
    """[dtype, is_list] of an Arrow type; dtype ``null`` for all-null columns."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_arrow_kind(t.value_type, column)[0], True]
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return ["float", False]
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return ["int64", False]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        return ["string", False]
    if pa.types.is_null(t):
        return ["null", False]
    raise InputError(f"column {column!r} has type {t}, which ELWC cannot hold; use numbers, "
                     "strings or lists of them (or leave the column out).")


def _read_table_file(path: str, fmt: str, row_group: int | None) -> tuple[pa.Table, int]:
    with _open(path) as f:
        if fmt == "csv":
            import pyarrow.csv as pacsv
            return pacsv.read_csv(f), 0
        if fmt == "jsonl":
            import pyarrow.json as pajson
            return pajson.read_json(f), 0
        import pyarrow.parquet as pq
        pf = pq.ParquetFile(f)
        rg = row_group or 0
        offset = sum(pf.metadata.row_group(i).num_rows for i in range(rg))
        return pf.read_row_group(rg), offset


def _read_table(path: str, relpath: str, file_index: int, opts: ElwcOptions,
                row_group: int | None) -> FileResult:
    table, offset = _read_table_file(path, opts.input_format, row_group)
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
    rows = np.arange(1, table.num_rows + 1, dtype=np.int64) + offset
    qid_arr = table.column(opts.query_id_column)
    qids = np.asarray([None if q is None else str(q) for q in qid_arr.to_pylist()], dtype=object)
    labels, bad_label = _labels(table.column(opts.label_column))
    bad_qid = np.array([q is None or q == "" for q in qids], dtype=bool)
    rejected = []
    for i in np.flatnonzero(bad_qid | bad_label):
        why = "missing query id" if bad_qid[i] else \
            f"label {table.column(opts.label_column)[int(i)].as_py()!r} is not a number"
        rejected.append({"file": relpath, "line": int(rows[i]), "reason": why, "text": ""})
    good = ~(bad_qid | bad_label)
    cols = {c: table.column(c).to_pylist() for c in example_cols}
    ctx_cols = {c: table.column(c).to_pylist() for c in opts.context_columns}
    chunks = []
    for qid, idx in _group_rows(qids[good]):
        idx = np.flatnonzero(good)[idx]
        chunks.append(DocChunk(
            qid=qid, file_index=file_index, line_numbers=rows[idx], labels=labels[idx],
            columns={c: [v[i] for i in idx] for c, v in cols.items()},
            context={c: v[int(idx[0])] for c, v in ctx_cols.items()}))
    schema = {c: _arrow_kind(table.schema.field(c).type, c) for c in (*example_cols,
                                                                     *opts.context_columns)}
    counts = {"files": 1, "lines": table.num_rows, "documents_read": int(good.sum()),
              "lines_rejected": len(rejected)}
    return FileResult(chunks, rejected, counts, {"schema": schema})


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
    bad |= ~np.isfinite(values)
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
