"""The generated Keras layers, re-done in numpy and Arrow over whole batches.

Each :class:`~beam_prep.codegen.plan.LayerPlan` class of the layer plan has one function
here giving exactly what the Keras 3 layer returns (TensorFlow 2.21; checked against the
generated layers in ``tests/transform/test_equality.py``):

=================  =========================================================================
layer              how
=================  =========================================================================
StringLookup,      ``pc.index_in`` on the vocabulary; mask token -> 0; OOV -> the OOV slot:
IntegerLookup      one slot, or ``Fingerprint64 % n`` (strings) / ``floormod(x, n)``
                   (integers) when ``num_oov_indices = n > 1``
CategoryEncoding   one_hot / multi_hot / count of a scalar index: the same one-hot float32 row
Hashing            ``Fingerprint64`` (no salt) or SipHash-2-4 keyed ``[salt, salt]``
                   ``% num_bins``; integers hashed as their decimal string; with
                   ``mask_value`` (list features) bins ``1..num_bins - 1``
HashedCrossing     ``FingerprintCat64`` from ``0xDECAFCAFFE`` over the two values' hashes
                   (Fingerprint64 of strings, the integer itself) ``% num_bins``
TextVectorization  tokens of :func:`beam_prep.analyzers.text.tokenize`; int mode: ``""`` ->
                   0, OOV -> 1, tokens from 2, a list per row (padding dropped) or exactly
                   ``output_sequence_length`` ids; other modes: OOV -> 0, ``bincount``;
                   tf_idf: count × idf (``ln(1 + N / (1 + df))`` float64 -> float32,
                   ``[UNK]`` = mean of the others)
Normalization      ``(x - mean) / max(sqrt(variance), 1e-7)`` in float32
Activation         sigmoid, computed in float64 and rounded to float32
SignedLog1p,       :mod:`beam_prep.transform.scaling`: the float32 operations of
RobustScaling,     ``beam_prep.codegen.numeric_layers`` (``scaling: log1p``, ``robust``,
PiecewiseLinear    ``piecewise_linear``), in the same order
Discretization     ``searchsorted(float32 boundaries, x, 'right')`` (NaN -> last bucket)
PerKeyScaling      the key's position in the per-key file's keys (unknown -> row 0; a hashed
                   index built once, :mod:`beam_prep.transform.key_index`),
                   then ``(x - shift) / scale`` in float32 or the sigmoid above
PerKeyBucketize    the same lookup into the keys' boundary rows; the count of ``not x < b``
                   (float32), unknown -> the global row (transform.per_key_buckets)
PerKeyCount        the same lookup into the keys' counts (unknown -> 0)
MissingIndicator   float32 1.0 where the value before FillMissing is missing, else 0.0
ListEncoding       pad / ragged / multi_hot / count of a list's indices (0 = padding)
Embedding          a target encoding's float32 table row of the lookup index; ``out_of_fold``:
                   the row's fold's out-of-fold value (:mod:`beam_prep.transform.target`)
Reshape            nothing (text and piecewise outputs are already ``(batch, width)``)
=================  =========================================================================

Example:
    >>> enc = BatchEncoder("artifacts/")                         # doctest: +SKIP
    >>> out = enc.encode(batch)                                  # doctest: +SKIP
    >>> out["country"].values[:3, 0]                             # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_prep.analyzers.spec_columns import column_owners
from beam_prep.analyzers.text import tokenize
from beam_prep.codegen.per_key_plan import per_key_state
from beam_prep.codegen.plan import (
    EMPTY_VOCABULARY_TOKEN,
    FeaturePlan,
    LayerPlan,
    ModulePlan,
    OutputPlan,
    TfIdfState,
    VocabularyFile,
    plan_from_artifacts,
)
from beam_prep.codegen.plan_types import TARGET_SUFFIX
from beam_prep.errors import InputError
from beam_prep.io import filesystem as fs
from beam_prep.io.contract.artifacts import Artifacts
from beam_prep.io.contract.counts_sidecar import read_document_frequencies
from beam_prep.transform import hashing, scaling
from beam_prep.transform.key_index import KeyIndex
from beam_prep.transform.per_key_buckets import PerKeyBuckets, flush32, to_float32
from beam_prep.transform.rows import bincount_rows, cross_hash, one_hot, pad_rows
from beam_prep.transform.target import OutOfFold, target_tables
from beam_prep.transform.values import (
    Ragged,
    feature_value,
    fill_missing,
    missing_mask,
    read_columns,
)


@dataclasses.dataclass(frozen=True)
class Encoded:
    """One encoded output for a batch.

    Attributes:
        dtype: ``int64`` or ``float32``.
        values: ``(n, width)`` for a fixed-width output; the flat values of a ragged one.
        row_splits: int64 ``n + 1`` row starts of a ragged output; None when fixed-width.
    """

    dtype: str
    values: np.ndarray
    row_splits: np.ndarray | None = None


class OutOfVocabulary(InputError):
    """A lookup with ``num_oov_indices=0`` met a value outside its vocabulary."""

    def __init__(self, feature: str, rows: np.ndarray) -> None:
        super().__init__(f"Feature {feature!r} has num_oov_indices=0 and these rows hold a value "
                         "outside its vocabulary (the Keras layer fails on them)")
        self.feature = feature
        self.rows = rows


def _vocabulary(path: str, arg: Any, integer: bool) -> pa.Array:
    if isinstance(arg, pa.Array):
        return arg
    if isinstance(arg, VocabularyFile):
        data = fs.read_bytes(path.rstrip("/") + "/" + arg.relpath)
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if integer:
            return pa.array([int(x) for x in lines], pa.int64())
        return pa.array(lines, pa.binary()).cast(pa.string())
    return pa.array(list(arg), pa.int64() if integer else pa.string())


def _index_in(values: Any, vocabulary: pa.Array) -> np.ndarray:
    """Position of each value in ``vocabulary``, -1 when absent."""
    if isinstance(values, np.ndarray):
        values = pa.array(values, pa.int64())
    found = pc.index_in(values, value_set=vocabulary)
    return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), np.int64)


def per_distinct(values: Any, fn: Any) -> np.ndarray:
    """``fn`` over a string array; a dictionary array's distinct values are mapped once and
    its null indices as ``""`` (what a missing cell is at the layer input)."""
    if not isinstance(values, pa.Array) or not pa.types.is_dictionary(values.type):
        return fn(values)
    dictionary = values.dictionary
    if pa.types.is_large_string(dictionary.type):
        dictionary = dictionary.cast(pa.string())
    mapped = fn(pa.concat_arrays([dictionary, pa.array([""], dictionary.type)]))
    indices = pc.fill_null(values.indices, len(values.dictionary))
    return mapped[np.asarray(indices.to_numpy(zero_copy_only=False), np.int64)]


class _Lookup:
    def __init__(self, path: str, args: dict[str, Any], integer: bool, feature: str) -> None:
        self.vocabulary = _vocabulary(path, args["vocabulary"], integer)
        self.num_oov = int(args["num_oov_indices"])
        self.mask = args.get("mask_token")
        self.integer = integer
        self.feature = feature

    def __call__(self, values: Any) -> np.ndarray:
        if self.integer:
            return self._map(values)
        return per_distinct(values, self._map)

    def _map(self, values: Any) -> np.ndarray:
        found = _index_in(values, self.vocabulary)
        oov_start = 1 if self.mask is not None else 0
        out = found + (oov_start + self.num_oov)
        oov = found < 0
        if oov.any():
            if self.num_oov == 0:
                raise OutOfVocabulary(self.feature, np.nonzero(oov)[0])
            if self.num_oov == 1:
                out[oov] = oov_start
            elif self.integer:
                out[oov] = np.mod(values[oov], self.num_oov) + oov_start
            else:
                picked = values.filter(pa.array(oov))
                h = hashing.fingerprint64(picked) % np.uint64(self.num_oov)
                out[oov] = h.astype(np.int64) + oov_start
        if self.mask is not None:
            if self.integer:
                out[values == self.mask] = 0
            else:
                eq = pc.equal(values, self.mask).to_numpy(zero_copy_only=False)
                out[np.asarray(eq, bool)] = 0
        return out


def _hash(values: Any, num_bins: int, salt: Any, mask_value: Any = None) -> np.ndarray:
    """keras.layers.Hashing on a string array (maybe dictionary) or an int64 ndarray."""
    if isinstance(values, pa.Array) and pa.types.is_dictionary(values.type):
        return per_distinct(values, lambda v: _hash(v, num_bins, salt, mask_value))
    mask = None
    bins = num_bins
    if mask_value is not None and bins > 1:
        bins -= 1
        mask = (values == mask_value) if isinstance(values, np.ndarray) else np.asarray(
            pc.equal(values, mask_value).to_numpy(zero_copy_only=False), bool)
    strings = pa.array(values, pa.int64()).cast(pa.string()) if isinstance(
        values, np.ndarray) else values
    if salt is None:
        h = hashing.fingerprint64(strings)
    else:
        key = (salt, salt) if isinstance(salt, int) else tuple(salt)
        h = hashing.siphash(strings, key)
    out = (h % np.uint64(bins)).astype(np.int64)
    if mask is not None:
        out = np.where(mask, 0, out + 1)
    return out


def _normalize(x: np.ndarray, mean: float, variance: float) -> np.ndarray:
    scale = np.maximum(np.sqrt(np.float32(variance)), np.float32(1e-7))
    return ((x - np.float32(mean)) / scale).astype(np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)


class _Text:
    def __init__(self, path: str, args: dict[str, Any], feature: Any,
                 tf_idf: tuple[pa.Array, np.ndarray] | None) -> None:
        self.feature = feature
        self.mode = args["output_mode"]
        self.length = args.get("output_sequence_length")
        if tf_idf is not None:
            self.vocabulary, self.idf = tf_idf
        else:
            self.vocabulary = _vocabulary(path, args["vocabulary"], False)
            self.idf = None

    def __call__(self, texts: pa.Array) -> Encoded:
        if pa.types.is_dictionary(texts.type):
            texts = pc.fill_null(texts.dictionary_decode(), "")
        tokens = tokenize(texts, self.feature)
        splits = np.asarray(tokens.offsets.to_numpy(zero_copy_only=False), np.int64)
        splits = splits - splits[0]
        flat = tokens.values if len(tokens.values) else pa.array([], pa.string())
        found = _index_in(flat, self.vocabulary)
        if self.mode == "int":
            ids = np.where(found < 0, 1, found + 2)
            if len(flat):
                ids[np.asarray(pc.equal(flat, "").to_numpy(zero_copy_only=False), bool)] = 0
            if self.length is not None:
                return Encoded("int64", pad_rows(splits, ids, self.length))
            return Encoded("int64", ids, splits)
        ids = np.where(found < 0, 0, found + 1)
        width = len(self.vocabulary) + 1
        counts = bincount_rows(splits, ids, width, self.mode == "multi_hot")
        if self.mode == "tf_idf":
            return Encoded("float32", (counts * self.idf[None, :]).astype(np.float32))
        # Keras returns int64 for multi_hot/count text output (OutputPlan dtype).
        return Encoded("int64", counts.astype(np.int64))


def tf_idf_state(path: str, relpaths: tuple[str, str], document_count: int
                 ) -> tuple[pa.Array, np.ndarray]:
    """``([UNK] + tokens, idf weights)`` as the generated layer computes them at build time."""
    text = fs.read_bytes(path.rstrip("/") + "/" + relpaths[0])
    tokens = text.split(b"\n")[:-1] if text else []
    df = np.array(read_document_frequencies(path.rstrip("/") + "/" + relpaths[1]), np.int64)
    if not tokens:
        tokens, df = [EMPTY_VOCABULARY_TOKEN.encode()], np.zeros(1, np.int64)
    idf = np.log(1 + document_count / (1 + df)).astype(np.float32)
    weights = np.concatenate([[np.mean(idf, dtype=np.float32)], idf]).astype(np.float32)
    return pa.array(tokens, pa.binary()).cast(pa.string()), weights


class BatchEncoder:
    """Encodes Arrow batches exactly as the generated layers of an artifact directory do.

    Args:
        path: Artifact directory.
        verify: Check the vocabulary checksums against the manifest.
        out_of_fold: Target encodings from the other folds' statistics only (each row's
            fold from its ``fold_column``), instead of what the layers compute.

    Attributes:
        plan: The layer plan (the same the code generator renders).
        columns: Data column -> Arrow type to read.
        owners: Data column -> the feature that reads it (the first in the spec; a
            ``per_key`` or ``fold_column`` column names the feature it belongs to), for
            messages.
        outputs: ``(key, dtype)`` of every output, in plan order.
    """

    def __init__(self, path: str, *, verify: bool = True, out_of_fold: bool = False) -> None:
        self.path = path
        art = Artifacts(path, verify=verify)
        self._art = art
        self.plan: ModulePlan = plan_from_artifacts(art)
        self.columns = read_columns(self.plan.features)
        self._targets = {fp.name: target_tables(art, fp.name, fp.target,
                                                art.stats(fp.name)["target_encoding"])
                         for fp in self.plan.features if fp.target is not None}
        self._oof: dict[str, OutOfFold] = {}
        for fp in self.plan.features if out_of_fold else ():
            if fp.target is not None:
                te = art.spec.feature(fp.name).target_encoding
                self._oof[fp.name + TARGET_SUFFIX] = OutOfFold(self._targets[fp.name][2],
                                                                te.fold_column, te.folds)
                self.columns.setdefault(te.fold_column, "string")
        owners = column_owners(art.spec)
        self.owners = {c: owners.get(c, c) for c in self.columns}
        self._spec = {f.name: f for f in art.spec.features}
        self.outputs = tuple((o.key, "float32" if o.dtype == "float32" else "int64")
                             for o in self.plan.outputs())
        self._chains = {fp.name: [self._build(fp, o) for o in fp.outputs]
                        for fp in self.plan.features}

    def _build(self, fp: FeaturePlan, output: OutputPlan) -> list[Any]:
        tf_idf = None
        if fp.tf_idf is not None:
            tf_idf = tf_idf_state(self.path, (fp.tf_idf.vocabulary, fp.tf_idf.counts),
                                  fp.tf_idf.document_count)
        return [(lp.cls, self._layer(lp, fp, tf_idf)) for lp in output.layers]

    def _layer(self, lp: LayerPlan, fp: FeaturePlan, tf_idf: Any) -> Any:
        build = ENCODERS.get(lp.cls)
        if build is None:
            raise NotImplementedError(f"No transform encoder for layer class {lp.cls!r}")
        return build(self, lp, fp, dict(lp.args), tf_idf)

    def encode(self, batch: pa.RecordBatch) -> dict[str, Encoded]:
        """Every output of the plan for ``batch`` (columns of :attr:`columns`).

        Raises:
            OutOfVocabulary: A lookup without OOV slots met an unknown value.
        """
        out: dict[str, Encoded] = {}
        for fp in self.plan.features:
            out.update(self.encode_feature(fp, batch))
        return out

    def encode_feature(self, fp: FeaturePlan, batch: pa.RecordBatch,
                       keys: tuple[str, ...] | None = None) -> dict[str, Encoded]:
        """The outputs ``keys`` (default: all) of one plan feature for ``batch``.

        Raises:
            OutOfVocabulary: A lookup without OOV slots met an unknown value.
        """
        raw = feature_value(fp, batch, fill=False)
        value = fill_missing(fp, raw)
        out: dict[str, Encoded] = {}
        for output, chain in zip(fp.outputs, self._chains[fp.name]):
            if keys is not None and output.key not in keys:
                continue
            if output.key in self._oof:  # the lookup, then the row's out-of-fold value
                out[output.key] = Encoded("float32", self._oof[output.key](
                    chain[0][1](value), batch))
                continue
            x = raw if output.before_fill else value
            for cls, layer in chain:
                # A list's lookup / Hashing maps its values; ListEncoding takes the rows.
                if isinstance(x, Ragged) and cls != "ListEncoding":
                    x = Ragged(x.row_splits, layer(x.values))
                else:
                    x = layer(x)
            out[output.key] = _as_encoded(x, output)
        return out


#: A Keras layer class -> the builder of its numpy twin, called once per layer of the plan as
#: ``build(encoder, layer, feature, args, tf_idf)``; the twin maps a batch's values as the
#: layer does. Every class the code generator can emit has one (tests/transform).
ENCODERS: dict[str, Callable[[BatchEncoder, LayerPlan, FeaturePlan, dict[str, Any], Any], Any]] = {}


def _encodes(*classes: str) -> Callable[[Any], Any]:
    def register(build: Any) -> Any:
        for cls in classes:
            ENCODERS[cls] = build
        return build
    return register


@_encodes("StringLookup", "IntegerLookup")
def _lookup_layer(enc: BatchEncoder, lp: LayerPlan, fp: FeaturePlan, args: dict[str, Any],
                  tf_idf: Any) -> Any:
    if fp.target is not None and lp.name.endswith("_target_lookup"):
        args["vocabulary"] = enc._targets[fp.name][0]
    return _Lookup(enc.path, args, lp.cls == "IntegerLookup", fp.name)


@_encodes("Embedding")  # a target encoding's table (codegen.target_plan)
def _target_table(enc: BatchEncoder, lp: LayerPlan, fp: FeaturePlan, args: dict[str, Any],
                  tf_idf: Any) -> Any:
    return lambda v, t=enc._targets[fp.name][1]: t[np.asarray(v, np.int64)]


@_encodes("TextVectorization")
def _text_layer(enc: BatchEncoder, lp: LayerPlan, fp: FeaturePlan, args: dict[str, Any],
                tf_idf: Any) -> Any:
    assert not any(isinstance(v, TfIdfState) for v in args.values()) or tf_idf
    return _Text(enc.path, args, enc._spec[fp.name], tf_idf)


def _stateless(cls: str, make: Callable[[dict[str, Any]], Any]) -> None:
    """Registers a layer whose twin depends only on its arguments."""
    ENCODERS[cls] = lambda enc, lp, fp, args, tf_idf: make(args)


_stateless("CategoryEncoding", lambda a: lambda v: Encoded("float32", one_hot(v, a["num_tokens"])))
_stateless("Hashing", lambda a: lambda v: _hash(v, a["num_bins"], a.get("salt"),
                                                a.get("mask_value")))
_stateless("HashedCrossing", lambda a: lambda v: cross_hash(v, a["num_bins"]))
_stateless("Normalization", lambda a: lambda v: _normalize(v, a["mean"], a["variance"]))
_stateless("Activation", lambda a: _sigmoid)
_stateless("Discretization", lambda a: functools.partial(
    _discretize, to_float32(a["bin_boundaries"])))
_stateless("SignedLog1p", lambda a: scaling.signed_log1p)
_stateless("RobustScaling", lambda a: lambda v: scaling.robust(v, a["median"], a["iqr"]))
_stateless("PiecewiseLinear", lambda a: lambda v: Encoded(
    "float32", scaling.piecewise_linear(v, a["edges"])))
_stateless("Reshape", lambda a: lambda v: v)
_stateless("ListEncoding", lambda a: lambda v: _list_encoding(v, a))
_stateless("MissingIndicator", lambda a: missing_mask)


def _discretize(bounds: np.ndarray, v: Any) -> np.ndarray:
    return np.searchsorted(bounds, v, side="right").astype(np.int64)


@_encodes("PerKeyScaling")
def _per_key_scaling(enc: BatchEncoder, lp: LayerPlan, fp: FeaturePlan, args: dict[str, Any],
                     tf_idf: Any) -> Any:
    return _PerKey(per_key_state(enc._art, fp.name, fp.keyed))


@_encodes("PerKeyBucketize")  # transform.per_key_buckets
def _per_key_buckets(enc: BatchEncoder, lp: LayerPlan, fp: FeaturePlan, args: dict[str, Any],
                     tf_idf: Any) -> Any:
    return PerKeyBuckets(per_key_state(enc._art, fp.name, fp.keyed))


@_encodes("PerKeyCount")
def _per_key_count(enc: BatchEncoder, lp: LayerPlan, fp: FeaturePlan, args: dict[str, Any],
                   tf_idf: Any) -> Any:
    state = per_key_state(enc._art, fp.name, fp.keyed)
    index = KeyIndex(state["keys"])
    counts = np.concatenate([[0], state["counts"]]).astype(np.int64)
    return lambda v: counts[index(v[1]) + 1]


class _PerKey:
    """``PerKeyScaling`` on ``(float32 values, string keys)``."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.index = KeyIndex(state["keys"])  # built once: millions of keys
        self.shifts = flush32(state["shifts"])
        self.scales = flush32(state["scales"])
        self.sigmoid = np.asarray(state["sigmoid"], bool)
        # scaling none (per-key buckets alone): every row is (x - 0) / 1, x itself
        self.identity = not (self.sigmoid.any() or self.shifts.any()
                             or (self.scales != 1).any())

    def __call__(self, value_and_key: tuple[np.ndarray, pa.Array]) -> np.ndarray:
        x, keys = value_and_key
        if self.identity:  # no key lookup: the same float32 bits as the layer's (TF flushes
            return flush32(x)  # subnormals in (x - 0) / 1)
        row = self.index(keys) + 1  # unknown (-1) -> row 0
        with np.errstate(divide="ignore", invalid="ignore"):  # as TF: subnormals flushed
            scaled = flush32(flush32(flush32(x) - self.shifts[row]) / self.scales[row])
        return np.where(self.sigmoid[row], _sigmoid(x), scaled).astype(np.float32)


def _list_encoding(v: Ragged, args: dict[str, Any]) -> Encoded:
    mode = args["mode"]
    if mode == "pad":
        return Encoded("int64", pad_rows(v.row_splits, v.values, args["max_values"]))
    if mode == "ragged":
        return Encoded("int64", v.values, v.row_splits)
    return Encoded("float32", bincount_rows(v.row_splits, v.values, args["num_tokens"],
                                             mode == "multi_hot", first=1))


def _as_encoded(x: Any, output: OutputPlan) -> Encoded:
    if isinstance(x, Encoded):
        return x
    if output.dtype == "float32":
        return Encoded("float32", to_float32(x).reshape(-1, 1))
    return Encoded("int64", np.asarray(x, np.int64).reshape(-1, 1))
