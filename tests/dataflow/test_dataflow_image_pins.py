"""templates/dataflow: install.sh installs exactly one wheel, and every base image of the
Dockerfile is pinned by digest (issue 21 item 10)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "templates" / "dataflow"


def _fake_python(tmp_path: Path) -> tuple[Path, Path]:
    """A 'python' that records that it ran (install.sh must refuse before running pip)."""
    log = tmp_path / "python.log"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n")
    fake.chmod(0o755)
    return fake, log


def test_install_refuses_two_wheels(tmp_path):
    dist = tmp_path / "dist"
    dist.mkdir()
    for version in ("0.1.0", "0.2.0"):
        (dist / f"beam_prep-{version}-cp311-cp311-linux_x86_64.whl").write_bytes(b"PK")
    fake, log = _fake_python(tmp_path)
    wheels = sorted(str(p) for p in dist.glob("beam_prep-*.whl"))  # what the glob expands to
    out = subprocess.run(["bash", str(KIT / "install.sh"), str(fake), *wheels],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert not log.exists(), "pip ran although two wheels were given"
    message = out.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert "beam_prep-0.1.0" in message and "beam_prep-0.2.0" in message
    assert "exactly one" in message and "dist/" in message


def test_install_refuses_a_wheel_that_is_not_there(tmp_path):
    fake, log = _fake_python(tmp_path)
    out = subprocess.run(["bash", str(KIT / "install.sh"), str(fake),
                          str(tmp_path / "dist" / "beam_prep-*.whl")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and not log.exists()
    assert "no wheel" in out.stderr and "pip wheel --no-deps" in out.stderr


def test_every_base_image_is_pinned_by_digest():
    text = (KIT / "Dockerfile").read_text()
    args = dict(re.findall(r"^ARG (\w+)(=.*)?$", text, re.M))
    stages: set[str] = set()
    froms = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\w+))?\s*$", text, re.M | re.I)
    assert len(froms) >= 2
    for image, stage in froms:
        if image not in stages:
            digest = re.search(r"@(sha256:[0-9a-f]{64}|\$\{(\w+)\})$", image)
            assert digest, f"FROM {image} is not pinned by digest"
            if digest.group(2):  # a build argument: required, with no default to drift to
                assert args.get(digest.group(2), None) == "", (
                    f"ARG {digest.group(2)} must be declared without a default")
        if stage:
            stages.add(stage)


def test_the_digests_are_documented():
    doc = (REPO / "docs" / "dataflow.md").read_text()
    for arg in re.findall(r"@\$\{(\w+)\}", (KIT / "Dockerfile").read_text()):
        assert f"--build-arg {arg}=" in doc, arg
    assert "imagetools inspect" in doc
