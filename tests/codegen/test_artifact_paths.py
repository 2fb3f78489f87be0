"""Manifest paths stay inside the artifact directory (library, runtime twin, generated module).

Every crafted manifest below is internally consistent (sha256, size and fingerprint
recomputed), so only the path check can refuse it. Without that check the library reads
``SECRET`` (a file outside the directory) as the ``country`` vocabulary, the layers load it
and ``model.export()`` copies it into the SavedModel assets.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from beam_prep.codegen.render import generate, render_module
from beam_prep.errors import ArtifactError
from beam_prep.io.contract.artifacts import (
    Artifacts,
    canonical_json,
    check_relpath,
    manifest_fingerprint,
)
from tests.codegen.artifact_fixtures import write_artifacts

SPEC = {"features": [{"name": "country", "kind": "string"},
                     {"name": "review", "kind": "text", "output_mode": "tf_idf"}]}
DATA = {"country": ["US", "DE", "US"], "review": ["great fit", "bad", "great"]}
SECRET = b"root\nsecret\n"


@pytest.fixture()
def setup(tmp_path) -> tuple[str, str]:
    """(artifact directory, a secret file next to it, outside the directory)."""
    art = str(tmp_path / "art")
    write_artifacts(art, SPEC, DATA)
    secret = str(tmp_path / "secret.txt")
    with open(secret, "wb") as f:
        f.write(SECRET)
    return art, secret


def _craft(art: str, feature: str, role: str, path: str, data: bytes) -> None:
    """Points a manifest entry at ``path`` with matching sha256, size and fingerprint."""
    manifest_path = os.path.join(art, "manifest.json")
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["features"][feature]["files"][role] = {
        "path": path, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(manifest_path, "wb") as f:
        f.write(canonical_json(manifest))


def _crafted(case: str, art: str, secret: str) -> str:
    """Applies one attack to ``art``; returns the crafted path (as written in the manifest)."""
    if case == "absolute":
        path = secret
    elif case == "dotdot":
        path = "../secret.txt"
    elif case == "dotdot_inside":
        path = "vocab/../../secret.txt"
    else:  # symlink inside the directory resolving to the secret outside
        path = "vocab/evil.txt"
        os.symlink(secret, os.path.join(art, path))
    role = "counts" if case == "dotdot_inside" else "vocabulary"
    feature = "review" if case == "dotdot_inside" else "country"
    _craft(art, feature, role, path, SECRET)
    return path


CASES = {"absolute": "absolute", "dotdot": "'..'", "dotdot_inside": "'..'",
         "symlink": "symlink"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_library_refuses_crafted_paths(case: str, setup) -> None:
    art, secret = setup
    path = _crafted(case, art, secret)
    feature = "review" if case == "dotdot_inside" else "country"
    for verify in (False, True):
        with pytest.raises(ArtifactError) as err:
            Artifacts(art, verify=verify)
        message = str(err.value)
        assert repr(feature) in message and repr(path) in message
        assert CASES[case] in message


@pytest.mark.parametrize("case", sorted(CASES))
def test_generate_and_runtime_twin_refuse_crafted_paths(case: str, setup, tmp_path) -> None:
    import beam_prep

    art, secret = setup
    _crafted(case, art, secret)
    out = str(tmp_path / "pp.py")
    with pytest.raises(ArtifactError, match=CASES[case]):
        generate(art, out)
    assert not os.path.exists(out)
    for verify in (False, True):
        with pytest.raises(ArtifactError, match=CASES[case]):
            beam_prep.layers_from_artifacts(art, verify=verify)


def test_check_relpath_rules(tmp_path) -> None:
    root = str(tmp_path)
    for ok in ("vocab/a.txt", "a..b.txt", "vocab/..hidden"):
        assert check_relpath(root, ok, feature="a", role="vocabulary") == ok
    refused = {"/etc/passwd": "absolute", "\\\\server\\x": "absolute", "C:/x": "absolute",
               "gs://bucket/x": "absolute", "..": "'..'", "a/../../x": "'..'",
               "a\\..\\..\\x": "'..'", "": "non-empty", None: "non-empty"}
    for path, why in refused.items():
        with pytest.raises(ArtifactError, match=why):
            check_relpath(root, path, feature="a", role="vocabulary")
    # On an object store there is no symlink to resolve: only the text rules apply.
    assert check_relpath("gs://b/art", "vocab/a.txt", feature="a", role="vocabulary")


def test_symlinks_inside_the_directory_are_accepted(setup, tmp_path) -> None:
    """A symlink that stays inside (or a symlinked artifact directory) is fine."""
    art, _ = setup
    vocab = os.path.join(art, "vocab", "country.txt")
    os.replace(vocab, os.path.join(art, "vocab", "real.txt"))
    os.symlink("real.txt", vocab)
    link = str(tmp_path / "link_to_art")
    os.symlink(art, link)
    for path in (art, link):
        assert Artifacts(path, verify=True).vocabulary("country") == ["US", "DE"]


# --- the generated module applies the same rules itself -----------------------------------

tf = pytest.importorskip("tensorflow")


@pytest.fixture()
def module_code(setup) -> str:
    art, _ = setup
    return render_module(Artifacts(art))


def _load(code: str, tmp_path, name: str):
    from tests.codegen.conftest import import_module_from

    path = str(tmp_path / f"{name}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(code)
    return import_module_from(path, name)


def test_generated_module_refuses_symlink_outside(setup, module_code, tmp_path) -> None:
    """Same content behind a symlink: the checksums match, only the path check refuses."""
    art, _ = setup
    pp = _load(module_code, tmp_path, "bp_paths_symlink")
    vocab = os.path.join(art, "vocab", "country.txt")
    outside = str(tmp_path / "outside_country.txt")
    shutil.copyfile(vocab, outside)
    os.remove(vocab)
    os.symlink(outside, vocab)
    for verify in (True, False):
        with pytest.raises(pp.ArtifactMismatchError, match="symlink"):
            pp.build_preprocessor(art, verify=verify)


@pytest.mark.parametrize("case", ["absolute", "dotdot"])
def test_generated_module_refuses_crafted_relpaths(case: str, setup, module_code,
                                                   tmp_path) -> None:
    """A module rendered from a crafted manifest (e.g. by an older beam_prep) still refuses."""
    art, secret = setup
    crafted = secret if case == "absolute" else "../secret.txt"
    assert module_code.count("vocab/country.txt") == 2  # _FILES and the StringLookup
    pp = _load(module_code.replace("vocab/country.txt", crafted), tmp_path, f"bp_paths_{case}")
    with pytest.raises(pp.ArtifactMismatchError, match=CASES[case]) as err:
        pp.build_preprocessor(art, verify=False)
    assert repr(crafted) in str(err.value)
    with pytest.raises(pp.ArtifactMismatchError, match=CASES[case]):
        pp.check_artifacts(art)


def test_generated_module_still_works_on_a_clean_copy(setup, module_code, tmp_path) -> None:
    art, _ = setup
    pp = _load(module_code, tmp_path, "bp_paths_clean")
    copy = str(tmp_path / "copy")
    shutil.copytree(art, copy)
    got = pp.build_preprocessor(copy)({"country": tf.constant([["US"], ["DE"], ["FR"]]),
                                       "review": tf.constant([["great"], [""], ["x"]])})
    # country vocabulary: US (2), DE (1); one OOV slot -> US = 1, DE = 2, FR = 0.
    assert got["country"].numpy()[:, 0].tolist() == [1, 2, 0]


def test_manifest_symlinked_outside_is_refused(setup, module_code, tmp_path) -> None:
    """Library and generated module alike refuse a manifest.json that lives elsewhere."""
    art, _ = setup
    pp = _load(module_code, tmp_path, "bp_paths_manifest")
    manifest = os.path.join(art, "manifest.json")
    outside = str(tmp_path / "manifest_elsewhere.json")
    os.replace(manifest, outside)
    os.symlink(outside, manifest)
    with pytest.raises(ArtifactError, match="symlink"):
        Artifacts(art)
    with pytest.raises(pp.ArtifactMismatchError, match="symlink"):
        pp.check_artifacts(art)
