"""The C hashes and framing of beam_prep.transform against TensorFlow itself."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pa = pytest.importorskip("pyarrow")

from beam_prep.transform import hashing  # noqa: E402

RNG = np.random.default_rng(7)
# Every length class of Fingerprint64 (0, 1-3, 4-7, 8-16, 17-32, 33-64, > 64, several blocks).
STRINGS = [bytes(RNG.integers(0, 256, n, dtype=np.uint8))
           for n in list(range(0, 140)) + [255, 256, 257, 1000]]


def _as_array(values: list[bytes]) -> pa.Array:
    return pa.array(values, pa.binary())


def test_fingerprint64_equals_tf_fingerprint():
    ref = np.frombuffer(tf.fingerprint(tf.constant(STRINGS)).numpy().tobytes(), np.uint64)
    np.testing.assert_array_equal(hashing.fingerprint64(_as_array(STRINGS)), ref)


def test_fingerprint64_of_sliced_dictionary_and_null_arrays():
    arr = pa.array(["x", None, "hello world, a longer string of 40 bytes!", "x"])
    want = tf.strings.to_hash_bucket_fast(["x", "", "hello world, a longer string of 40 bytes!",
                                           "x"], 1000).numpy()
    got = (hashing.fingerprint64(arr) % np.uint64(1000)).astype(np.int64)
    np.testing.assert_array_equal(got, want)
    sliced = arr.slice(2, 2)
    np.testing.assert_array_equal(hashing.fingerprint64(sliced) % np.uint64(1000), want[2:])
    encoded = arr.dictionary_encode()
    np.testing.assert_array_equal(hashing.fingerprint64(encoded) % np.uint64(1000), want)
    large = arr.cast(pa.large_string())
    np.testing.assert_array_equal(hashing.fingerprint64(large) % np.uint64(1000), want)


@pytest.mark.parametrize("key", [(7, 7), (133, 137), (2**63 - 1, 0)])
def test_siphash_equals_to_hash_bucket_strong(key):
    bins = 2**31 - 1
    want = tf.strings.to_hash_bucket_strong(STRINGS, bins, key=list(key)).numpy()
    got = (hashing.siphash(_as_array(STRINGS), key) % np.uint64(bins)).astype(np.int64)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["string", "int64"])
def test_fingerprint_cat_chain_equals_sparse_cross_hashed(dtype):
    if dtype == "string":
        a = ["US", "DE", "", "a much longer country name than usual"]
        b = ["tv", "", "web", "phone"]
        parts = [hashing.fingerprint64(pa.array(a)), hashing.fingerprint64(pa.array(b))]
    else:
        a = [1, -5, 0, 2**40]
        b = [7, 7, -(2**63), 3]
        parts = [np.array(a, np.int64).view(np.uint64), np.array(b, np.int64).view(np.uint64)]
    bins = 1009
    want = tf.sparse.to_dense(tf.sparse.cross_hashed(
        [tf.constant([[x] for x in a]), tf.constant([[x] for x in b])], bins)).numpy()[:, 0]
    h = np.full(len(a), hashing.CROSS_HASH_KEY, np.uint64)
    for part in parts:
        h = hashing.fingerprint_cat64(h, part)
    np.testing.assert_array_equal((h % np.uint64(bins)).astype(np.int64), want)


def test_frame_records_reads_back_with_tf_data(tmp_path):
    offsets = np.zeros(len(STRINGS) + 1, np.int64)
    np.cumsum([len(s) for s in STRINGS], out=offsets[1:])
    path = tmp_path / "x.tfrecord"
    path.write_bytes(hashing.frame_records(b"".join(STRINGS), offsets))
    got = [r.numpy() for r in tf.data.TFRecordDataset(str(path))]
    assert got == STRINGS


def test_the_transform_job_loads_neither_tensorflow_nor_keras():
    import subprocess
    import sys

    code = ("import sys, beam_prep.pipelines.transform, beam_prep.transform.job; "
            "print(sorted(m for m in ('tensorflow', 'keras', 'tensorflow_transform') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
