"""Files of one JSON line per key, sorted by key: the writer both per-key families share.

``per_key/<name>.jsonl`` (:mod:`~beam_prep.analyzers.per_key`) and
``per_key/<name>.buckets.jsonl`` (:mod:`~beam_prep.analyzers.per_key_buckets`) are both
sorted by the keys' UTF-8 bytes, one line per key, with the same escaping of the key.

Example:
    >>> import pyarrow as pa
    >>> text_bytes(pa.array(["1\\n", "2\\n"]))
    b'1\\n2\\n'
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.io import filesystem as fs

#: Keys' lines written per chunk.
WRITE_ROWS = 1 << 16
_EDITOR_BREAKS = "\x85\u2028\u2029"


def json_key(key: str) -> str:
    """A key as a JSON string (UTF-8 as is; U+0085/U+2028/U+2029 escaped for editors).

    Example:
        >>> json_key('a"\\nb'), json_key("plain")
        ('"a\\\\"\\\\nb"', '"plain"')
    """
    if key.isascii() and key.isprintable() and '"' not in key and "\\" not in key:
        return f'"{key}"'  # nothing to escape (the usual case)
    text = json.dumps(key, ensure_ascii=False)
    for c in _EDITOR_BREAKS:  # line breaks JSON leaves as they are, escaped for editors
        text = text.replace(c, f"\\u{ord(c):04x}")
    return text


def text_bytes(lines: pa.Array | pa.ChunkedArray) -> bytes:
    """The concatenated UTF-8 bytes of string values (no Python object per value)."""
    if isinstance(lines, pa.ChunkedArray):
        return b"".join(text_bytes(c) for c in lines.chunks)
    lines = lines.cast(pa.large_string())
    if len(lines) == 0:
        return b""
    offsets = np.frombuffer(lines.buffers()[1], np.int64, len(lines) + 1, lines.offset * 8)
    data = lines.buffers()[2]
    if data is None:
        return b""
    return data[int(offsets[0]):int(offsets[-1])].to_pybytes()


def write_lines(parts: list[tuple[pa.Array, pa.Array]], path: str) -> dict[str, Any]:
    """Sorts every ``(keys, lines)`` part by key (UTF-8 bytes) and writes the lines.

    Returns:
        ``{"path": ..., "sha256": ..., "bytes": ..., "keys": ...}`` (path as given).
    """
    keys = pa.concat_arrays([k.cast(pa.large_string()) for k, _ in parts] or
                            [pa.array([], pa.large_string())])
    lines = pa.concat_arrays([v for _, v in parts] or [pa.array([], pa.large_string())])
    order = pc.sort_indices(keys)
    return write_chunks((text_bytes(lines.take(order.slice(start, WRITE_ROWS)))
                          for start in range(0, len(order), WRITE_ROWS)), path, len(keys))


def write_chunks(chunks: Iterable[bytes], path: str, keys: int) -> dict[str, Any]:
    """Writes byte chunks to ``path`` (any Beam filesystem), hashing them on the way.

    Returns:
        ``{"sha256": ..., "bytes": ..., "keys": keys}``.
    """
    with fs.HashingWriter.create(path) as out:
        for body in chunks:
            out.write(body)
    return {"sha256": out.hexdigest(), "bytes": out.size, "keys": keys}
