"""Reading an artifact file checked against the manifest: size and sha256, hashed as read.

Every reader of a feature file (vocabulary, counts, per-key, target encoding, MI sidecar) goes
through :meth:`beam_prep.io.contract.artifacts.Artifacts.open_file`, which wraps the stream in
:class:`CheckedStream`: a tampered or truncated file is refused with one line naming it when
its end is read, without a second pass over the file (``beam-prep diff``, the report, the
transform job and ``Artifacts(verify=True)`` all read each file once).
"""

from __future__ import annotations

import hashlib
from typing import Any

from beam_prep.errors import ArtifactError

MANIFEST = "manifest.json"


class CheckedStream:
    """A binary stream checked against its manifest entry while it is read.

    Args:
        stream: The open binary stream.
        path: The file's path (for messages).
        meta: Its manifest entry: ``bytes`` and ``sha256``.
        key: The entry's manifest key, e.g. ``features.country.files.vocabulary``.

    Raises:
        ArtifactError: From ``read``: more bytes than ``bytes`` (at once); at the end of the
            file (a read returning nothing, or a read of everything) fewer bytes, or another
            sha256 of the bytes read.

    Example:
        >>> import io
        >>> f = CheckedStream(io.BytesIO(b"a\\n"), "v.txt", {"bytes": 2, "sha256": "0" * 64},
        ...                   "features.c.files.vocabulary")
        >>> f.read()
        Traceback (most recent call last):
        ...
        beam_prep.errors.ArtifactError: v.txt does not match its sha256 in manifest.json \
(features.c.files.vocabulary.sha256): the file was modified after the analysis. Fix: re-run \
`beam-prep analyze` into a fresh directory (or copy the whole directory again).
    """

    def __init__(self, stream: Any, path: str, meta: dict[str, Any], key: str) -> None:
        self._stream, self._path, self._key = stream, path, key
        self._expected, self._sha256 = int(meta["bytes"]), meta.get("sha256")
        self._seen, self._hash, self._done = 0, hashlib.sha256(), False

    def read(self, n: int = -1) -> bytes:
        everything = n is None or n < 0
        data = self._stream.read(self._expected + 1 if everything else n)
        self._seen += len(data)
        if self._seen > self._expected:
            raise ArtifactError(
                f"{self._path} holds more than the {self._expected:,} bytes {MANIFEST} records "
                f"({self._key}.bytes): the directory was modified after the analysis. Fix: "
                "re-run `beam-prep analyze` into a fresh directory.")
        self._hash.update(data)
        if everything or (not data and n != 0):
            self._finish()
        return data

    def _finish(self) -> None:
        if self._done:
            return
        self._done = True
        if self._seen < self._expected:
            raise ArtifactError(
                f"{self._path} ended after {self._seen:,} of the {self._expected:,} bytes "
                f"{MANIFEST} records ({self._key}.bytes): the file is truncated. Fix: re-run "
                "`beam-prep analyze` into a fresh directory (or copy the whole directory again).")
        if self._sha256 is not None and self._hash.hexdigest() != self._sha256:
            raise ArtifactError(
                f"{self._path} does not match its sha256 in {MANIFEST} ({self._key}.sha256): "
                "the file was modified after the analysis. Fix: re-run `beam-prep analyze` "
                "into a fresh directory (or copy the whole directory again).")

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> CheckedStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
