"""content_identity: local files from os.stat, gs:// objects from their generation (GCS emulator).

Oracles: ``os.stat`` for local files; for GCS the object's generation and size read back here
with google-cloud-storage itself (``Blob.reload``), not through the module under test.
"""

from __future__ import annotations

import os
import time

import pytest
from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import InputError
from beam_prep.io.inputs.content_id import content_identities, content_identity
from tests.io.commit.test_output_gcs import gcs  # noqa: F401  (module-scoped emulator fixture)

_PAST_NS = 1_600_000_000_123_456_789  # 2020-09-13, a fixed mtime to restore after a rewrite


def _write(path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def test_local_identity_is_size_mtime_ctime(tmp_path):
    p = tmp_path / "day1.csv"
    _write(p, b"a,b\n1,2\n")
    os.utime(p, ns=(_PAST_NS, _PAST_NS))
    st = os.stat(p)
    assert content_identity(str(p)) == (
        f"local:size=8:mtime_ns={_PAST_NS}:ctime_ns={st.st_ctime_ns}")
    assert content_identity(str(p)) == content_identity(str(p))


def test_local_rewrite_in_place_with_restored_mtime_changes_identity(tmp_path):
    """Same size, same mtime (as after ``cp -p`` / ``rsync -t``): ctime still tells them apart."""
    p = tmp_path / "day1.csv"
    _write(p, b"a,b\n1,2\n")
    os.utime(p, ns=(_PAST_NS, _PAST_NS))
    before = content_identity(str(p))
    time.sleep(0.05)  # more than one kernel clock tick, so the new ctime differs
    _write(p, b"a,b\n3,4\n")
    os.utime(p, ns=(_PAST_NS, _PAST_NS))
    after = content_identity(str(p))
    assert os.stat(p).st_size == 8 and os.stat(p).st_mtime_ns == _PAST_NS
    assert before != after


def test_local_missing_file_names_the_path(tmp_path):
    missing = str(tmp_path / "nope.parquet")
    with pytest.raises(InputError, match=r"path=.*nope\.parquet"):
        content_identity(missing)


def test_identities_keep_the_order_and_keys_given(tmp_path):
    paths = []
    for name, data in (("b.csv", b"xx"), ("a.csv", b"yyy")):
        _write(tmp_path / name, data)
        paths.append(str(tmp_path / name))
    ids = content_identities(paths)
    assert list(ids) == paths
    assert ids[paths[0]].startswith("local:size=2:") and ids[paths[1]].startswith("local:size=3:")


def _gcs_write(path: str, data: bytes) -> None:
    with FileSystems.create(path) as f:
        f.write(data)


def _oracle(path: str) -> str:
    from google.cloud import storage

    bucket, _, name = path[len("gs://"):].partition("/")
    blob = storage.Client().bucket(bucket).blob(name)
    blob.reload()
    return f"gs:size={blob.size}:generation={blob.generation}"


def test_gcs_identity_is_the_generation_and_changes_on_identical_rewrite(gcs):  # noqa: F811
    path = f"{gcs}/content_id/day1.parquet"
    _gcs_write(path, b"0123456789")
    first = content_identity(path)
    assert first == _oracle(path)
    _gcs_write(path, b"0123456789")  # same bytes, same size: a new generation all the same
    second = content_identity(path)
    assert second == _oracle(path)
    assert second != first


def test_gcs_batch_lists_each_folder_and_skips_other_objects(gcs):  # noqa: F811
    wanted = [f"{gcs}/cid_batch/d/day{i}.bin" for i in (2, 1, 3)] + [f"{gcs}/cid_batch/e/x.bin"]
    others = [f"{gcs}/cid_batch/d/sub/day1.bin", f"{gcs}/cid_batch/d/unrelated.bin"]
    for i, p in enumerate(wanted + others):
        _gcs_write(p, b"z" * (i + 1))
    ids = content_identities(wanted)
    assert list(ids) == wanted
    assert ids == {p: _oracle(p) for p in wanted}
    assert [ids[p].split(":")[1] for p in wanted] == ["size=1", "size=2", "size=3", "size=4"]


def test_gcs_missing_object_names_the_path(gcs):  # noqa: F811
    _gcs_write(f"{gcs}/cid_missing/day1.bin", b"x")
    with pytest.raises(InputError, match=r"cid_missing/day2\.bin"):
        content_identities([f"{gcs}/cid_missing/day1.bin", f"{gcs}/cid_missing/day2.bin"])
