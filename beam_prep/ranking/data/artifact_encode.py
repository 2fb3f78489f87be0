"""``make-elwc --artifacts``: features written as the artifacts' generated layers output them.

A feature of the ELWC output is *covered* when the artifact directory has a plain feature
(not derived, not a cross) of the same name: the features the trainer would give
that feature's layers (``beam_prep.ranking.train.artifact_layers``), less those with
``per_key`` (their layer also reads the key column; written unchanged). A covered feature is
written as its main output (the ``OUTPUT_SPECS`` key equal to its name):

================================  ===========================  ============================
output of the layers              written as                   ``feature_spec.json`` entry
================================  ===========================  ============================
ids (lookups, hashing, buckets)   ``int64_list``               ``int64``, shape ``[]``
float values (z-score, min-max)   ``float_list``               ``float``, shape ``[]``
width ``w`` > 1 (one_hot, text    ``w`` values                 shape ``[w]``, default 0
with output_sequence_length)
ragged (list without max_values)  the row's values             shape ``[null]``
================================  ===========================  ============================

The values come from :class:`beam_prep.transform.layers.BatchEncoder` (the transform job's
numpy/Arrow twin of the generated layers, tested equal to Keras), applied to the value the
ELWC reader would have returned for the raw feature: a missing cell is the raw feature's
``default`` (``""``, ``0``, ``--missing_value``), a list drops its missing elements. The
encoded ``default`` of a scalar is the encoding of the raw default, so padding examples parse
to what the layers make of a padding example's raw value (0 when a lookup without OOV slots
has no id for it: the Keras layer would fail on such padding). ``feature_spec.json`` records the
raw feature and the artifacts' fingerprint (``encoded``).

Rows a lookup with ``num_oov_indices: 0`` cannot encode (the Keras layer would fail on them)
are rejected while parsing, reason ``out_of_vocabulary``, like any bad line.

Example:
    >>> enc = load_encoder("artifacts/")                                # doctest: +SKIP
    >>> spec = enc.encode_spec(raw_spec)                                # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.errors import InputError, SpecError
from beam_prep.io import filesystem as fs
from beam_prep.io.contract.artifacts import MANIFEST
from beam_prep.ranking.data.value_rules import OUT_OF_VOCABULARY, Problem
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, EncodedFeature, Encoding, FeatureInfo
from beam_prep.transform.layers import BatchEncoder, Encoded, OutOfVocabulary
from beam_prep.transform.per_key_buckets import to_float32

#: ELWC dtype each layer input dtype is written as (``FeaturePlan.dtype``).
_ELWC_DTYPE = {"string": "string", "int64": "int64", "float32": "float"}
_ARROW = {"string": pa.string(), "int64": pa.int64(), "float": pa.float64()}


def load_encoder(path: str) -> ArtifactEncoder:
    """The :class:`ArtifactEncoder` of ``path``, built once per process and manifest (workers;
    a directory re-analysed in place gets a new encoder: the cache key has its fingerprint)."""
    try:
        manifest = json.loads(fs.read_text(fs.join(path, MANIFEST)))
        fingerprint = str(manifest.get("fingerprint")) if isinstance(manifest, dict) else ""
    except (OSError, ValueError):
        fingerprint = ""  # ArtifactEncoder reports what is wrong with the directory
    return _encoder(path, fingerprint)


@functools.lru_cache(maxsize=4)
def _encoder(path: str, fingerprint: str) -> ArtifactEncoder:
    return ArtifactEncoder(path)


class ArtifactEncoder:
    """Encodes ELWC feature values with the layers of an artifact directory.

    Args:
        path: Artifact directory (``beam-prep analyze``).
        verify: Check the vocabulary checksums against the manifest.

    Raises:
        SpecError: The artifacts use a layer the encoder does not support.
    """

    def __init__(self, path: str, *, verify: bool = False) -> None:
        try:
            self.batch = BatchEncoder(path, verify=verify)
        except NotImplementedError as e:
            raise SpecError(f"--artifacts {path!r}: {e}, so make-elwc cannot write it "
                            "encoded. Fix: run make-elwc without --artifacts (the trainer "
                            "then applies the layers) or upgrade beam-prep.") from None
        self.path = path
        self.fingerprint: str = self.batch.plan.fingerprint
        self.plans = {fp.name: fp for fp in self.batch.plan.features
                      if fp.derived is None and not fp.crossed and fp.keyed is None}
        self.outputs = {fp.name: o for fp in self.plans.values() for o in fp.outputs
                        if o.key == fp.name}

    def covered(self, infos: Iterable[FeatureInfo]) -> list[FeatureInfo]:
        """The features among ``infos`` that the artifacts encode (checked compatible).

        Raises:
            InputError: A covered feature's ELWC dtype or shape is not what its layers take.
        """
        out = []
        for info in infos:
            fp = self.plans.get(info.name)
            if fp is None or info.name not in self.outputs:
                continue
            want = _ELWC_DTYPE[fp.dtype]
            if info.dtype != want or info.is_var_len != bool(fp.list_input) or \
                    (not info.is_var_len and info.shape != ()):
                got = f"{info.dtype}{' list' if info.is_var_len else ''}"
                need = f"{want}{' list' if fp.list_input else ''}"
                raise InputError(
                    f"feature {info.name!r} is {got} in the ELWC input but its layers in "
                    f"--artifacts take {need} (kind {fp.kind!r}). Fix: make the column "
                    f"{need}, rename it, or analyze it with a matching spec.")
            out.append(info)
        return out

    def encoded_info(self, info: FeatureInfo) -> FeatureInfo:
        """The ``feature_spec.json`` entry of a covered feature's encoded values."""
        output = self.outputs[info.name]
        dtype = "float" if output.dtype == "float32" else "int64"
        if output.width is None or output.ragged:
            return FeatureInfo(info.name, dtype, (None,), None)
        if output.width == 1:
            try:
                value = self.encode(info, [None]).values.reshape(-1)[0]
            except OutOfVocabulary:  # num_oov_indices 0: the raw default has no id either
                value = 0
            return FeatureInfo(info.name, dtype, (), float(value) if dtype == "float"
                               else int(value))
        return FeatureInfo(info.name, dtype, (int(output.width),), 0.0 if dtype == "float" else 0)

    def encode_spec(self, spec: ElwcFeatureSpec, *, skip: Iterable[str | None] = ()
                    ) -> ElwcFeatureSpec:
        """The spec of the encoded output (covered features replaced, ``encoded`` set).

        Args:
            spec: the raw spec.
            skip: features written raw whatever the artifacts (the query id feature).
        """
        skipped = set(skip)
        covered = self.covered(f for f in (*spec.context, *spec.example)
                               if f.name not in skipped)
        names = {f.name: self.encoded_info(f) for f in covered}
        encoding = Encoding(self.fingerprint, tuple(
            EncodedFeature(f.name, self.outputs[f.name].key, f) for f in covered))
        return ElwcFeatureSpec(context=tuple(names.get(f.name, f) for f in spec.context),
                               example=tuple(names.get(f.name, f) for f in spec.example),
                               label=spec.label, encoded=encoding)

    def encode(self, info: FeatureInfo, values: Sequence[Any]) -> Encoded:
        """The encoded output for per-document cells (``None`` = missing) of a raw feature.

        Raises:
            OutOfVocabulary: A lookup without OOV slots met a value outside its vocabulary.
        """
        fp = self.plans[info.name]
        typ = _ARROW[info.dtype]
        if info.is_var_len:
            rows = [[_cell(x, info.dtype) for x in v if x is not None]
                    if isinstance(v, (list, tuple)) else ([] if v is None else
                                                         [_cell(v, info.dtype)])
                    for v in values]
            arr: pa.Array = pa.array(rows, pa.large_list(typ))
        elif isinstance(values, np.ndarray):
            arr = pa.array(values.astype(np.float64) if info.dtype == "float" else values, typ)
        else:
            arr = _scalars(values, info)
        batch = pa.RecordBatch.from_arrays([arr], names=[fp.column or fp.name])
        return self.batch.encode_feature(fp, batch, (info.name,))[info.name]

    def oov_rows(self, infos: Iterable[FeatureInfo], columns: dict[str, list[Any]]
                 ) -> dict[int, Problem]:
        """Row -> problem for rows a lookup with ``num_oov_indices: 0`` cannot encode."""
        out: dict[int, Problem] = {}
        for info in infos:
            fp = self.plans.get(info.name)
            if fp is None or info.name not in self.outputs or not _strict_lookup(fp):
                continue
            try:
                self.covered([info])
            except InputError:
                continue  # refused with its fix when the spec is written
            rows = np.arange(len(columns[info.name]))
            while len(rows):
                try:
                    self.encode(info, [columns[info.name][i] for i in rows.tolist()])
                    break
                except OutOfVocabulary as e:
                    for r in rows[e.rows].tolist():
                        out.setdefault(int(r), Problem(
                            OUT_OF_VOCABULARY, f"out_of_vocabulary: feature {info.name!r} "
                            "holds a value outside its vocabulary and num_oov_indices=0"))
                    rows = np.delete(rows, e.rows)
        return out


def _strict_lookup(fp: Any) -> bool:
    return any(lp.cls in ("StringLookup", "IntegerLookup")
               and int(dict(lp.args).get("num_oov_indices", 1)) == 0
               for o in fp.outputs for lp in o.layers)


def _scalars(values: Sequence[Any], info: FeatureInfo) -> pa.Array:
    """Scalar cells as an Arrow column, ``None`` -> the raw default (one Arrow conversion;
    cells Arrow does not take as they are go through :func:`_cell`, per value)."""
    typ = _ARROW[info.dtype]
    try:
        arr = pa.array(values, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.array([_cell(info.default if v is None else v, info.dtype) for v in values],
                        typ)
    return pc.fill_null(arr, pa.scalar(info.default, typ)) if arr.null_count else arr


def _cell(v: Any, dtype: str) -> Any:
    """A cell as the raw ELWC feature holds it (``encode.feature_bytes``' conversions)."""
    if dtype == "string":
        return v.decode("utf-8") if isinstance(v, bytes) else str(v)
    if dtype == "int64":
        return int(v)
    return float(to_float32(v))


def rows_as_lists(encoded: Encoded) -> list[list[Any]]:
    """Each row's values as a Python list (what ``encode.encode_features`` takes)."""
    if encoded.row_splits is None:
        return encoded.values.reshape(len(encoded.values), -1).tolist()
    flat = encoded.values.tolist()
    splits = encoded.row_splits.tolist()
    return [flat[a:b] for a, b in zip(splits[:-1], splits[1:])]
