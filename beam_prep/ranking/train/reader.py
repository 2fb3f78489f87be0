"""tf.data reader for ELWC TFRecords: ``(features, labels)`` batches for listwise ranking.

Output of :func:`make_dataset` (``B`` = batch size, ``L`` = ``list_size`` or, when it is None,
the longest list of the batch):

=====================  ======================  =============================================
key                    shape                   content
=====================  ======================  =============================================
context feature        ``[B]`` / ``[B, k]``    scalar / fixed-length; var-length → ragged
                                               ``[B, None]``
example feature        ``[B, L]`` / ``[B, L,   padding examples hold the feature default;
                       k]``                    var-length → ragged ``[B, L, None]``
``"__mask__"``         ``[B, L]``              True for real examples (``MASK_KEY``); dtype
                                               ``mask_dtype`` (bool, or int32 for
                                               MirroredStrategy which rejects bool inputs)
labels                 ``[B, L]`` float32      label of each example, ``-1`` for padding
=====================  ======================  =============================================

Lists longer than ``L`` are truncated (after the optional per-list shuffle, so with
``shuffle_examples`` the kept examples are a random subset). ``drop_remainder=True`` plus an
integer ``list_size`` gives fully static shapes (TPU). With ``list_size=None`` no document is
dropped: ``L`` is the longest list of the batch, rounded up to a multiple of ``pad_multiple``
(fewer distinct shapes, so fewer retraces / XLA compilations).

:class:`ElwcParser` is :func:`parse_elwc_batch` with its settings bound: the launcher's
default parser, which training feeds a ``[2]`` seed per batch (a seeded random subset of every
list longer than ``list_size``, as TF Ranking shuffles before truncating), and which validation
and serving use with ``list_size=None`` (full lists).

How it works: records are batched first, then split with ``tf.io.decode_proto`` into the
serialized context and the serialized examples of each list; lists are padded with empty
serialized Examples (which parse to the defaults) and everything is parsed with one
``tf.io.parse_example`` call per batch.

Example:
    >>> ds = make_dataset("elwc/train-*.tfrecord", list_size=32, batch_size=8)  # doctest: +SKIP
    >>> features, labels = next(iter(ds))  # doctest: +SKIP
    >>> mask = features[MASK_KEY]  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import functools
import posixpath
from typing import Any

import tensorflow as tf

from beam_prep.errors import InputError, SpecError
from beam_prep.ranking.feature_spec import FILENAME, ElwcFeatureSpec, FeatureInfo
from beam_prep.ranking.train.mask import MASK_KEY

__all__ = ["MASK_KEY", "make_dataset", "parse_elwc_batch", "resolve_feature_spec"]
_ELWC = "tensorflow.serving.ExampleListWithContext"
_TF_DTYPES = {"float": tf.float32, "int64": tf.int64, "string": tf.string}


@functools.lru_cache(maxsize=1)
def _descriptor_source() -> bytes:
    """``bytes://`` FileDescriptorSet of tensorflow_serving/apis/input.proto and its imports."""
    from google.protobuf import descriptor_pb2
    from tensorflow_serving.apis import input_pb2

    fds = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(fd: Any) -> None:
        if fd.name in seen:
            return
        for dep in fd.dependencies:
            add(dep)
        seen.add(fd.name)
        fd.CopyToProto(fds.file.add())

    add(input_pb2.DESCRIPTOR)
    return b"bytes://" + fds.SerializeToString()


def resolve_feature_spec(feature_spec: Any, file_pattern: str | None = None) -> ElwcFeatureSpec:
    """Accepts an :class:`ElwcFeatureSpec`, a dict, a path to ``feature_spec.json`` (or its
    directory) or None (then ``feature_spec.json`` beside the first file of ``file_pattern``)."""
    if isinstance(feature_spec, ElwcFeatureSpec):
        return feature_spec
    if isinstance(feature_spec, dict):
        return ElwcFeatureSpec.from_dict(feature_spec)
    if feature_spec is None:
        files = sorted(tf.io.gfile.glob(file_pattern)) if file_pattern else []
        if not files:
            raise SpecError(f"no file matches {file_pattern!r}, so there is no "
                            f"{FILENAME} beside it; pass feature_spec=... explicitly.")
        feature_spec = posixpath.join(posixpath.dirname(files[0]), FILENAME)
    path = str(feature_spec)
    if tf.io.gfile.isdir(path):
        path = posixpath.join(path, FILENAME)
    if not tf.io.gfile.exists(path):
        raise SpecError(f"feature spec {path!r} does not exist. Pass the feature_spec.json "
                        "written by make-elwc, or an ElwcFeatureSpec / dict.")
    with tf.io.gfile.GFile(path, "r") as f:
        return ElwcFeatureSpec.from_json(f.read())


def feature_parse_spec(features: tuple[FeatureInfo, ...]) -> dict[str, Any]:
    """``tf.io.parse_example`` features: var-length -> ragged, fixed shapes with defaults."""
    out: dict[str, Any] = {}
    for f in features:
        dtype = _TF_DTYPES[f.dtype]
        if f.is_var_len:
            out[f.name] = tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)
        else:
            default = f.default if f.default is not None else \
                {"float": 0.0, "int64": 0, "string": ""}[f.dtype]
            shape = list(f.shape)
            value = default if not shape else [default] * int(shape[0])
            out[f.name] = tf.io.FixedLenFeature(shape, dtype, default_value=value)
    return out


def parse_elwc_batch(
    serialized: tf.Tensor,
    spec: ElwcFeatureSpec,
    *,
    list_size: int | None,
    shuffle_seed: tf.Tensor | None = None,
    mask_dtype: tf.DType = tf.bool,
    pad_multiple: int = 1,
) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
    """Parses a ``[B]`` string tensor of serialized ELWC into ``(features, labels)``.

    Args:
        serialized: serialized ``ExampleListWithContext``, shape ``[B]``.
        spec: feature spec.
        list_size: pad/truncate lists to this size; None = longest list in the batch (no
            document dropped).
        shuffle_seed: optional ``[2]`` int seed; shuffles the examples of every list first
            (so a list longer than ``list_size`` keeps a random subset).
        mask_dtype: dtype of ``features["__mask__"]``.
        pad_multiple: with ``list_size=None``, the padded length is rounded up to a multiple
            of this.
    """
    if list_size is not None and list_size < 1:
        raise SpecError(f"`list_size` must be a positive integer or None. Received: {list_size}")
    if pad_multiple < 1:
        raise SpecError(f"`pad_multiple` must be a positive integer. Received: {pad_multiple}")
    static_b = serialized.shape[0]
    sizes, (examples, context) = tf.io.decode_proto(
        serialized, _ELWC, ["examples", "context"], [tf.string, tf.string],
        descriptor_source=_descriptor_source())
    batch = tf.shape(serialized)[0]
    n = tf.cast(sizes[:, 0], tf.int32)
    context = tf.concat([context, tf.fill([batch, 1], "")], axis=1)[:, 0]
    if shuffle_seed is not None:
        keys = tf.random.stateless_uniform(tf.shape(examples), seed=shuffle_seed)
        valid = tf.sequence_mask(n, tf.shape(examples)[1])
        keys = tf.where(valid, keys, 2.0)
        examples = tf.gather(examples, tf.argsort(keys, axis=1, stable=True), batch_dims=1)
    if list_size is not None:
        length = tf.constant(list_size)
    else:
        longest = tf.reduce_max(tf.concat([n, [0]], 0))
        length = (longest + pad_multiple - 1) // pad_multiple * pad_multiple
    examples = examples[:, :length]
    pad = tf.maximum(length - tf.shape(examples)[1], 0)
    examples = tf.pad(examples, [[0, 0], [0, pad]], constant_values="")
    examples.set_shape([static_b, list_size])
    n = tf.minimum(n, length)
    mask = tf.sequence_mask(n, length)
    mask.set_shape([static_b, list_size])

    label_dtype = _TF_DTYPES[spec.label.dtype]
    label_default = int(spec.label.padding) if spec.label.dtype == "int64" else spec.label.padding
    ex_spec = feature_parse_spec(spec.example)
    ex_spec[spec.label.name] = tf.io.FixedLenFeature([], label_dtype, default_value=label_default)
    parsed = tf.io.parse_example(tf.reshape(examples, [-1]), ex_spec)
    features: dict[str, tf.Tensor] = {}
    for name, value in parsed.items():
        if isinstance(value, tf.RaggedTensor):
            value = tf.RaggedTensor.from_uniform_row_length(value, tf.cast(length, tf.int64))
        else:
            value = tf.reshape(value, tf.concat([[batch, length], tf.shape(value)[1:]], 0))
            value.set_shape([static_b, list_size, *parsed[name].shape[1:]])
        features[name] = value
    labels = tf.cast(features.pop(spec.label.name), tf.float32)
    labels = tf.where(mask, labels, tf.constant(spec.label.padding, tf.float32))
    if spec.context:
        features.update(tf.io.parse_example(context, feature_parse_spec(spec.context)))
    features[MASK_KEY] = tf.cast(mask, mask_dtype)
    return features, labels


@dataclasses.dataclass(frozen=True)
class ElwcParser:
    """:func:`parse_elwc_batch` with its settings bound: ``parser(serialized, shuffle_seed)``.

    Attributes:
        spec: The feature spec.
        list_size: Pad/truncate lists to this size; None = the batch's longest list.
        mask_dtype: dtype of ``features["__mask__"]``.
        pad_multiple: With ``list_size=None``, round the padded length up to a multiple.

    Example:
        >>> full = ElwcParser(spec, list_size=32).full_lists(pad_multiple=32)  # doctest: +SKIP
        >>> features, labels = full(serialized)                                 # doctest: +SKIP
    """

    spec: ElwcFeatureSpec
    list_size: int | None
    mask_dtype: tf.DType = tf.bool
    pad_multiple: int = 1

    def __call__(self, serialized: tf.Tensor, shuffle_seed: tf.Tensor | None = None
                 ) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        """Parses ``serialized`` ``[B]``; ``shuffle_seed`` ``[2]`` shuffles each list first."""
        return parse_elwc_batch(serialized, self.spec, list_size=self.list_size,
                                shuffle_seed=shuffle_seed, mask_dtype=self.mask_dtype,
                                pad_multiple=self.pad_multiple)

    def full_lists(self, pad_multiple: int = 1) -> ElwcParser:
        """The same parser keeping every document (``list_size=None``)."""
        return dataclasses.replace(self, list_size=None, pad_multiple=pad_multiple)


def make_dataset(
    file_pattern: str | list[str],
    *,
    feature_spec: Any = None,
    list_size: int | None,
    batch_size: int,
    shuffle_examples: bool = False,
    seed: int | None = None,
    drop_remainder: bool = False,
    compression: str | None = None,
    shuffle_files: bool = False,
    shuffle_buffer_size: int = 0,
    num_parallel_reads: int = tf.data.AUTOTUNE,
    prefetch: int = tf.data.AUTOTUNE,
    mask_dtype: tf.DType = tf.bool,
) -> tf.data.Dataset:
    """ELWC files → batches of ``(features, labels)`` (see the module docstring for shapes).

    Args:
        file_pattern: glob (or list of globs) of ELWC TFRecord files.
        feature_spec: :class:`ElwcFeatureSpec`, dict, path, or None for the
            ``feature_spec.json`` beside the files.
        list_size: examples per list (pad/truncate); None = longest list of each batch.
        batch_size: lists per batch.
        shuffle_examples: shuffle the examples inside each list (seeded by ``seed``).
        seed: seed for file order, list shuffling and example shuffling.
        drop_remainder: drop the last partial batch (static batch dimension).
        compression: ``"GZIP"``, ``""`` or None (GZIP when the file names end in ``.gz``).
        shuffle_files: shuffle the file order (seeded).
        shuffle_buffer_size: if > 0, shuffle lists with a buffer of this many lists.
        num_parallel_reads: files read concurrently (interleaved, deterministic order).
        prefetch: batches to prefetch.
        mask_dtype: dtype of ``features["__mask__"]`` (``tf.bool`` or ``tf.int32``).
    """
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    files = sorted({f for p in patterns for f in tf.io.gfile.glob(p)})
    if not files:
        raise SpecError(f"no ELWC file matches {patterns}. Check `file_pattern`.")
    if batch_size < 1:
        raise SpecError(f"`batch_size` must be a positive integer. Received: {batch_size}")
    spec = resolve_feature_spec(feature_spec, files[0])
    if compression is None:
        compression = "GZIP" if files[0].endswith(".gz") else ""
    ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle_files:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    cycle = min(len(files), 8) if num_parallel_reads == tf.data.AUTOTUNE else num_parallel_reads
    ds = ds.interleave(lambda f: tf.data.TFRecordDataset(f, compression_type=compression),
                       cycle_length=max(cycle, 1), num_parallel_calls=tf.data.AUTOTUNE,
                       deterministic=True)
    if shuffle_buffer_size > 0:
        ds = ds.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    if shuffle_examples:
        seeds = tf.data.Dataset.random(seed=seed).batch(2)
        ds = tf.data.Dataset.zip((ds, seeds)).map(
            lambda s, k: parse_elwc_batch(s, spec, list_size=list_size, shuffle_seed=k,
                                          mask_dtype=mask_dtype),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    else:
        ds = ds.map(lambda s: parse_elwc_batch(s, spec, list_size=list_size,
                                               mask_dtype=mask_dtype),
                    num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(prefetch)


def has_records(files: list[str]) -> bool:
    """True when the TFRecord ``files`` hold at least one record (stops at the first one).

    Raises:
        InputError: A file is not a TFRecord file (corrupt framing).
    """
    try:
        for _ in tf.data.TFRecordDataset(files).take(1):
            return True
    except tf.errors.DataLossError as e:
        raise InputError(f"Cannot read ELWC TFRecord files {files[:3]!r}: "
                         f"{e.message.splitlines()[0]}. Check that they are uncompressed "
                         "TFRecord files written by `beam-prep make-elwc`.") from e
    return False


def count_records(files: list[str]) -> int:
    """Number of records in TFRecord ``files`` (reads the framing, parses nothing)."""
    ds = tf.data.TFRecordDataset(files)
    return int(ds.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
