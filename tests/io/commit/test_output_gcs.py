"""The output policy on a real GCS JSON API (gcp-storage-emulator, in memory, on 127.0.0.1).

On an object store a "folder" is only a key prefix: ``FileSystems.exists("gs://b/out")`` is
False even when ``gs://b/out/manifest.json`` exists. These tests run both jobs from gs:// inputs
to gs:// outputs and check the listing of the prefix: no ``_tmp/`` spill file, staging folder or
lock left, a finished output refused without ``--overwrite``, no stale shard after it, the lock.
Expected vocabularies and record counts are computed here from the input text.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import socket
import struct

import pytest
from apache_beam.io.filesystems import FileSystems

from beam_prep.errors import ArtifactError
from beam_prep.io import filesystem as fs
from beam_prep.io.commit import output
from beam_prep.io.commit.output import OutputPolicy, OutputRun

emulator = pytest.importorskip("gcp_storage_emulator.server")

BUCKET = "beam-prep-test"
POLICY = OutputPolicy(job="demo", signatures=(("manifest.json",),),
                      owned=("manifest.json", "vocab/**"), last="manifest.json")


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
    """Starts the emulator on a free port and points Beam's gcsio (google-cloud-storage) at it.

    google-cloud-storage honours STORAGE_EMULATOR_HOST. Beam, however, builds its client with
    ``apache_beam.internal.gcp.auth``, which calls ``google.auth.default()`` under
    ``retry.with_exponential_backoff(num_retries=4, initial_delay_secs=2)``: without any
    credentials every process waits ~20-30 s (and probes the GCE metadata server) before it
    falls back to an anonymous client. ``--no_auth`` does not help (gcsio ignores it). The fix
    used here: GOOGLE_APPLICATION_CREDENTIALS names a throwaway ``authorized_user`` file that
    carries an access ``token`` with an ``expiry`` far in the future, so ``google.auth.default()``
    succeeds at once, offline, and the credentials are never refreshed; the emulator ignores the
    bearer token. GOOGLE_CLOUD_PROJECT silences the "no project" warning.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
    server = emulator.create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    cred = tmp_path_factory.mktemp("gcs") / "fake_credentials.json"
    cred.write_text(json.dumps({"type": "authorized_user", "client_id": "test",
                                "client_secret": "test", "refresh_token": "test",
                                "token": "test", "expiry": "2999-01-01T00:00:00Z"}))
    env = {"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}",
           "GOOGLE_APPLICATION_CREDENTIALS": str(cred), "GOOGLE_CLOUD_PROJECT": "test"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield f"gs://{BUCKET}"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


def _records(data: bytes) -> int:
    """Number of TFRecord frames (u64 length, u32 crc, data, u32 crc), parsed here."""
    n = pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + 4 + length + 4
        n += 1
    assert pos == len(data)
    return n


def test_folder_operations_list_the_prefix(gcs):
    root = f"{gcs}/ops"
    for rel in ("a.txt", "sub/b.txt", "sub/deeper/c.txt"):
        fs.write_bytes(f"{root}/{rel}", b"x")
    fs.write_bytes(f"{gcs}/opsy/not_below.txt", b"x")  # same string prefix, other folder
    assert not FileSystems.exists(root)  # why a folder must be listed, not asked for
    assert output.list_files(root) == ["a.txt", "sub/b.txt", "sub/deeper/c.txt"]
    assert not output.is_empty(root) and output.is_empty(f"{gcs}/nothing")
    output.delete_tree(f"{root}/sub")
    assert output.list_files(root) == ["a.txt"]
    output.delete_tree(root)
    assert output.is_empty(root) and output.list_files(f"{gcs}/opsy") == ["not_below.txt"]


def test_lock_and_replace_on_the_object_store(gcs):
    root = f"{gcs}/locked"
    fs.write_bytes(f"{root}/manifest.json", b"old")
    fs.write_bytes(f"{root}/vocab/gone.txt", b"old")
    fs.write_bytes(f"{root}/README", b"user")
    with OutputRun(root, POLICY, overwrite=True, run_id="first") as run:
        assert output.read_lock(root).run_id == "first"
        with pytest.raises(ArtifactError, match="locked by run first"):
            with OutputRun(root, POLICY, overwrite=True):
                pass
        assert output.read_lock(root).run_id == "first"  # the refused run left it alone
        fs.write_bytes(f"{run.staging}/vocab/new.txt", b"new")
        fs.write_bytes(f"{run.staging}/manifest.json", b"new")
        assert run.commit()
    assert output.list_files(root) == ["README", "manifest.json", "vocab/new.txt"]
    assert fs.read_bytes(f"{root}/manifest.json") == b"new"
    # A lock left by a dead run on another machine: refused, then broken with force_unlock.
    stale = {"run_id": "ghost", "host": "elsewhere", "pid": 1, "started": "2020-01-01"}
    fs.write_bytes(f"{root}/_LOCK", json.dumps(stale).encode())
    with pytest.raises(ArtifactError, match="locked by run ghost .host elsewhere"):
        with OutputRun(root, POLICY, overwrite=True):
            pass
    with OutputRun(root, POLICY, overwrite=True, force_unlock=True, run_id="second"):
        assert output.read_lock(root).run_id == "second"
    assert output.read_lock(root) is None


@pytest.mark.slow  # two pipeline runs: ~35 s on the shared 2-core machine
def test_analyze_gs_to_gs(gcs, tmp_path):
    from beam_prep.pipelines import analyze

    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: c, kind: string}\n")
    out = f"{gcs}/artifacts"
    for text in ("c\nx\ny\nx\nz\nx\ny\n", "c\nq\nq\nr\n"):
        fs.write_bytes(f"{gcs}/in/data.csv", text.encode())
        counts = collections.Counter(text.split()[1:])
        expected = sorted(counts, key=lambda t: (-counts[t], [-b for b in t.encode()]))
        args = ["--spec", str(spec), "--input", f"{gcs}/in/*.csv", "--output", out,
                "--spill_rows", "1"]  # every vocabulary table goes through _tmp/ files
        if text.startswith("c\nq"):
            with pytest.raises(ArtifactError, match="holds a finished analyze output"):
                analyze.run(args)
            args.append("--overwrite")
        analyze.run(args)
        assert output.list_files(out) == ["manifest.json", "vocab/c.counts.jsonl",
                                          "vocab/c.txt"]
        assert fs.read_text(f"{out}/vocab/c.txt").split("\n")[:-1] == expected


@pytest.mark.slow  # two pipeline runs: ~30 s on the shared 2-core machine
def test_make_elwc_gs_to_gs_overwrite_leaves_no_stale_shard(gcs):
    from beam_prep.pipelines import make_elwc

    letor = "".join(f"{i % 3} qid:q{i // 4} 1:{i}.25 2:{i % 5}\n" for i in range(12))
    # one bad line, so that rejected shards exist and must not outlive the overwrite
    fs.write_bytes(f"{gcs}/logs/a.txt", (letor + "not a letor line\n").encode())
    out = f"{gcs}/elwc"
    base = ["--input", f"{gcs}/logs/*.txt", "--output", out, "--max_bad_fraction", "0.5"]
    make_elwc.run(base + ["--num_shards", "3"])
    fixed = ["feature_spec.json", "stats.json"]
    shards3 = [f"train-0000{i}-of-00003.tfrecord" for i in range(3)]
    rejected3 = [f"rejected/rejected-0000{i}-of-00003.jsonl" for i in range(3)]
    assert output.list_files(out) == sorted(fixed + shards3 + rejected3)
    assert sum(_records(fs.read_bytes(f"{out}/{s}")) for s in shards3) == 3  # q0, q1, q2
    with pytest.raises(ArtifactError, match="holds a finished make-elwc output"):
        make_elwc.run(base + ["--num_shards", "1"])
    make_elwc.run(base + ["--num_shards", "1", "--overwrite"])
    assert output.list_files(out) == sorted(fixed + ["train-00000-of-00001.tfrecord",
                                                     "rejected/rejected-00000-of-00001.jsonl"])
    assert _records(fs.read_bytes(f"{out}/train-00000-of-00001.tfrecord")) == 3


def test_readers_on_the_object_store(gcs, tmp_path, capsys):
    """diff, report (the default report.html takes and releases the folder's _LOCK) and
    generate read a gs:// artifact directory through the checked reader; a counts file longer
    than its manifest's ``bytes`` is refused while reading (no local stat on gs://)."""
    from beam_prep import cli
    from tests.codegen.artifact_fixtures import write_artifacts

    local = write_artifacts(str(tmp_path / "art"), {"features": [
        {"name": "country", "kind": "string"}]}, {"country": ["US", "DE", "US"]})
    art = f"{gcs}/readers/art"
    for root, _, files in os.walk(local):
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                fs.write_bytes(f"{art}/{os.path.relpath(full, local)}", f.read())
    assert cli.main(["diff", art, art, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["features"][0]["vocab"]["jsd"] == 0.0
    assert cli.main(["report", art]) == 0
    assert output.list_files(art) == ["manifest.json", "report.html", "vocab/country.counts.jsonl",
                                      "vocab/country.txt"]
    assert cli.main(["generate", "--artifacts", art, "--output", str(tmp_path / "pp.py"),
                     "--quiet"]) == 0
    counts = f"{art}/vocab/country.counts.jsonl"
    fs.write_bytes(counts, fs.read_bytes(counts) + b'["ZZ", 1]\n')
    capsys.readouterr()
    assert cli.main(["diff", art, art]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "more than the" in err[0] and "country.counts.jsonl" in err[0]
