"""The artifact directory: fixed layout, manifest format, and the typed reader.

Layout (all paths relative to the artifact directory)::

    manifest.json                    written last; a directory without it is incomplete
    vocab/<feature>.txt              Keras-readable vocabulary: one real token per line, UTF-8
    vocab/<feature>.counts.jsonl     sidecar, one JSON array per line, same order as the .txt:
                                     [token, count] or, for text features, [token, count, df]
    rejected/rejected.jsonl          rows that could not be read, one JSON object each
                                     (only when some row was rejected)

Vocabulary order (the one ``tft.vocabulary`` writes): count descending, ties broken by
the token's UTF-8 bytes in *descending* order; integers are ranked as decimal strings.
Line ``i`` (0-based) of ``vocab/<feature>.txt`` gets index ``i + num_oov_indices``
(+1 if a mask token is set, in ``int`` mode) in StringLookup/IntegerLookup, and in
TextVectorization ``i + 2`` in ``int`` mode (0 = padding, 1 = ``[UNK]``), ``i + 1``
otherwise (0 = ``[UNK]``).

Every file path in the manifest is relative to the artifact directory and must stay
inside it: an absolute path, a ``..`` component or (on local disk) a symlink resolving
outside the directory is refused (:func:`check_relpath`). The fingerprint and the sha256
checksums detect accidental corruption and mismatched files; they are not a signature
(anyone who can write the directory can recompute them).

Example:
    >>> art = Artifacts("artifacts/")          # doctest: +SKIP
    >>> art.vocabulary("country")[:3]          # doctest: +SKIP
    ['US', 'DE', 'FR']
    >>> art.stats("price")["mean"]             # doctest: +SKIP
    12.5
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

import numpy as np

from beam_prep.errors import ArtifactError, SpecError
from beam_prep.io import filesystem as fs
from beam_prep.io import line_bound
from beam_prep.io.contract import counts_sidecar
from beam_prep.io.contract.checked_stream import CheckedStream
from beam_prep.io.contract.manifest_check import (
    MAX_MANIFEST_BYTES,
    check_relpath_text,
    parse_manifest,
    validate_manifest,
)
from beam_prep.spec import Feature, Spec
from beam_prep.spec.weights import is_weighted

MANIFEST = "manifest.json"
VOCAB_DIR = "vocab"
REJECTED_DIR = "rejected"
REJECTED_FILE = "rejected/rejected.jsonl"
FORMAT_NAME = "beam_prep.artifacts"
FORMAT_VERSION = 1
_BLOCK = 1 << 22

# Characters that `str.splitlines()` treats as line boundaries. A token containing any of
# them cannot round-trip through a line-based vocabulary file (nor a `.keras` save).
LINE_BREAK_CHARS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def vocabulary_relpath(name: str) -> str:
    """Relative path of a feature's vocabulary file."""
    return f"{VOCAB_DIR}/{name}.txt"


def counts_relpath(name: str) -> str:
    """Relative path of a feature's counts sidecar."""
    return f"{VOCAB_DIR}/{name}.counts.jsonl"


def canonical_json(obj: Any) -> bytes:
    """Deterministic JSON encoding (sorted keys, 2-space indent, UTF-8, trailing newline)."""
    return (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
            + "\n").encode("utf-8")


def manifest_fingerprint(manifest: dict[str, Any]) -> str:
    """sha256 over the canonical manifest without its ``fingerprint`` field."""
    body = {k: v for k, v in manifest.items() if k != "fingerprint"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def _unsafe_reason(root: str, relpath: Any) -> str | None:
    """Why ``relpath`` could leave ``root`` (None when it stays inside)."""
    why = check_relpath_text(relpath)
    if why is not None:
        return why
    if "://" not in root:
        real_root = os.path.realpath(root)
        real = os.path.realpath(os.path.join(root, relpath))
        if os.path.commonpath([real_root, real]) != real_root:
            return f"it resolves through a symlink to {real!r}, outside the directory"
    return None


def check_relpath(root: str, relpath: Any, *, feature: str, role: str) -> str:
    """Checks that a manifest path stays inside the artifact directory; returns it.

    Refused: a path that is not a non-empty string, an absolute path (``/x``, ``C:x``,
    ``gs://x``), a ``..`` component, and on local disk a path whose real location (after
    symlinks) is outside ``root``. The generated module applies the same rules.

    Args:
        root: The artifact directory.
        relpath: The ``path`` field of a file entry in the manifest.
        feature: The feature the file belongs to (for the message).
        role: ``vocabulary``, ``counts``, ... (for the message).

    Returns:
        ``relpath`` unchanged.

    Raises:
        ArtifactError: The path could leave the artifact directory.

    Example:
        >>> check_relpath("artifacts", "vocab/a.txt", feature="a", role="vocabulary")
        'vocab/a.txt'
    """
    why = _unsafe_reason(root, relpath)
    if why is not None:
        raise ArtifactError(
            f"Feature {feature!r}: the {role} path in {MANIFEST} is refused because {why}. "
            f"Received: path={relpath!r} (artifact directory {root!r}). Fix: every file must "
            "be a relative path inside the artifact directory; re-run `beam-prep analyze` "
            "into a fresh directory instead of editing or linking its files."
        )
    return relpath


def finite_or_none(x: float | None) -> float | None:
    """JSON has no NaN/inf: such values are stored as null."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)


class Artifacts:
    """Typed reader of a complete artifact directory (local or ``gs://``).

    Args:
        path: The artifact directory.
        verify: Recompute every file's sha256 and compare with the manifest.

    Raises:
        ArtifactError: No manifest (the analysis did not finish), or a bad manifest.

    Example:
        >>> art = Artifacts("artifacts/")                 # doctest: +SKIP
        >>> art.vocabulary_path("country")                 # doctest: +SKIP
        'artifacts/vocab/country.txt'
    """

    def __init__(self, path: str, *, verify: bool = False) -> None:
        self.path = path
        fs.check_reachable(path)  # gs:// unreachable: one line within seconds, not minutes
        manifest_path = fs.join(path, MANIFEST)
        if not fs.exists(manifest_path):
            raise ArtifactError(
                f"No {MANIFEST} in {path!r}: this is not a complete artifact directory "
                "(the analysis did not finish, or the path is wrong). Run `beam-prep analyze` "
                "with --output pointing here."
            )
        why = _unsafe_reason(path, MANIFEST)
        if why is not None:
            raise ArtifactError(
                f"{manifest_path} is refused because {why}. Fix: keep {MANIFEST} a file inside "
                "the artifact directory (copy the directory instead of linking its files)."
            )
        fs.check_regular(manifest_path, max_bytes=MAX_MANIFEST_BYTES, what="manifest")
        self.manifest: dict[str, Any] = parse_manifest(fs.read_bytes(manifest_path),
                                                       manifest_path)
        if self.manifest.get("format") != FORMAT_NAME:
            raise ArtifactError(
                f"{manifest_path} is not a beam_prep manifest "
                f"(format={self.manifest.get('format')!r}).")
        if self.manifest.get("format_version") != FORMAT_VERSION:
            raise ArtifactError(
                f"{manifest_path} has format_version={self.manifest.get('format_version')!r}; "
                f"this beam_prep reads version {FORMAT_VERSION}. Re-run the analysis.")
        validate_manifest(self.manifest, manifest_path)
        expected = manifest_fingerprint(self.manifest)
        if self.manifest.get("fingerprint") != expected:
            raise ArtifactError(
                f"{manifest_path} was modified after it was written (fingerprint mismatch)."
            )
        try:
            self.spec = Spec.from_dict(self.manifest["spec"])
        except SpecError as e:
            raise ArtifactError(f"{manifest_path}: its `spec` is invalid: {e}") from None
        validate_manifest(self.manifest, manifest_path, self.spec)
        for name, entry in self.manifest["features"].items():
            for role, meta in entry.get("files", {}).items():
                check_relpath(path, meta.get("path"), feature=name, role=role)
                self._check_on_disk(name, role)
        if verify:
            self.verify()

    @property
    def fingerprint(self) -> str:
        """The manifest's sha256 fingerprint."""
        return self.manifest["fingerprint"]

    @property
    def feature_names(self) -> tuple[str, ...]:
        """Features in spec order."""
        return self.spec.names()

    def feature(self, name: str) -> Feature:
        """The feature's spec entry."""
        return self.spec.feature(name)

    def _entry(self, name: str) -> dict[str, Any]:
        try:
            return self.manifest["features"][name]
        except KeyError:
            raise ArtifactError(
                f"No feature {name!r} in {self.path}. Known: {list(self.feature_names)}"
            ) from None

    def stats(self, name: str) -> dict[str, Any]:
        """The feature's statistics as stored in the manifest."""
        return dict(self._entry(name)["stats"])

    def file_path(self, name: str, role: str) -> str:
        """Absolute path of a feature file; ``role`` is ``vocabulary`` or ``counts``."""
        return fs.join(self.path, self.relpath(name, role))

    def relpath(self, name: str, role: str) -> str:
        """A feature file's path relative to the directory, checked to stay inside it."""
        meta = self._entry(name).get("files", {}).get(role)
        if meta is None:
            raise ArtifactError(f"Feature {name!r} has no {role!r} file in {self.path}.")
        return check_relpath(self.path, meta.get("path"), feature=name, role=role)

    def vocabulary_path(self, name: str) -> str:
        """Path of the Keras-readable vocabulary file."""
        return self.file_path(name, "vocabulary")

    def vocabulary(self, name: str) -> list[str]:
        """Vocabulary tokens in file order (empty list for an empty vocabulary)."""
        return [line.decode("utf-8") for line in self.iter_lines(name, "vocabulary")]

    def _check_on_disk(self, name: str, role: str) -> None:
        """Local files: a regular file of the size the manifest records (one ``stat``, no
        read); nothing is asked of an object store."""
        full = self.file_path(name, role)
        if "://" in full:
            return
        fs.check_regular(full, what=f"{role} file of feature {name!r}")
        st = fs.local_stat(full)
        expected = self._entry(name)["files"][role]["bytes"]
        if st is None:
            raise ArtifactError(
                f"{full} ({name} {role}) is missing: the artifact directory is incomplete. "
                "Fix: re-run `beam-prep analyze` into a fresh directory, or copy the whole "
                "directory.")
        if st.st_size != expected:
            raise ArtifactError(
                f"{full} is {st.st_size:,} bytes but {MANIFEST} records "
                f"features.{name}.files.{role}.bytes={expected:,}: the directory was "
                "modified after the analysis. Fix: re-run `beam-prep analyze` into a fresh "
                "directory.")

    def open_file(self, name: str, role: str) -> Any:
        """Opens a feature file for reading (binary) after checking it against the manifest.

        Local files must be regular files (a FIFO would block ``open``, a device never end)
        of exactly the size the manifest records; both are checked before the file is opened.
        On object stores the size is checked while reading; everywhere the sha256 of the
        bytes read is checked when the end of the file is read
        (:class:`beam_prep.io.contract.checked_stream.CheckedStream`: hashed as read, no
        second pass).

        Raises:
            ArtifactError: The file is missing, not a regular file, or of another size (and,
                from ``read``, of another size or sha256).
        """
        full = self.file_path(name, role)
        meta = self._entry(name)["files"][role]
        self._check_on_disk(name, role)  # again: the file may have changed since __init__
        return CheckedStream(fs.open_read(full), full, meta, f"features.{name}.files.{role}")

    def iter_lines(self, name: str, role: str) -> Any:
        """Yields a feature file's lines (bytes, without ``\\n``), read in bounded blocks.

        A line longer than :data:`beam_prep.io.line_bound.MAX_LINE_BYTES`, or more bytes than
        the manifest records, is an :class:`ArtifactError`; memory stays within one block
        plus one line.
        """
        limit, full, rest = line_bound.MAX_LINE_BYTES, self.file_path(name, role), b""
        with self.open_file(name, role) as f:
            while True:
                block = f.read(_BLOCK)
                lines = (rest + block).split(b"\n")
                rest = lines.pop()
                yield from lines
                line_bound.check_line_length(rest, full, limit)
                if not block:
                    break
        if rest:
            yield rest

    def counts(self, name: str) -> list[tuple[str, int | float]]:
        """(token, count) pairs in vocabulary order (a float count: a sum of instance
        weights, for a feature with ``weights``)."""
        return [(row[0], row[1]) for row in self._sidecar(name)]

    def document_frequencies(self, name: str) -> list[int]:
        """Documents containing each vocabulary token (text features with tf_idf)."""
        return counts_sidecar.document_frequencies(self._sidecar(name), name=name)

    def document_count(self, name: str) -> int:
        """Number of documents (non-missing rows) seen for a text feature."""
        return int(self.stats(name)["document_count"])

    def idf_weights(self, name: str) -> np.ndarray:
        """Keras TextVectorization idf weights: ``ln(1 + N / (1 + df))`` per token."""
        df = np.asarray(self.document_frequencies(name), dtype=np.float64)
        n = float(self.document_count(name))
        return np.log1p(n / (1.0 + df))

    def _sidecar(self, name: str) -> list[list[Any]]:
        with self.open_file(name, "counts") as f:
            return list(counts_sidecar.iter_rows(
                f, name=name, path=self.file_path(name, "counts"),
                weighted=is_weighted(self.spec.feature(name))))

    def verify(self) -> None:
        """Checks every listed file's sha256 and size (and line lengths) against the manifest.

        Raises:
            ArtifactError: A file is missing, not a regular file, of another size or content,
                or holds a line longer than :data:`beam_prep.io.line_bound.MAX_LINE_BYTES`.
        """
        for name, entry in self.manifest["features"].items():
            for role in entry.get("files", {}):
                full = fs.join(self.path, self.relpath(name, role))
                if not fs.exists(full):
                    raise ArtifactError(f"{full} ({name} {role}) is missing.")
                longest = line_bound.LineScan(full)
                with self.open_file(name, role) as f:  # checks size and sha256 at the end
                    while chunk := f.read(_BLOCK):
                        longest.add(chunk)

    def __repr__(self) -> str:
        return f"Artifacts({self.path!r}, features={list(self.feature_names)})"
