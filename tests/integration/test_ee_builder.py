"""``meta/execution-environment.yml``: ``ansible-builder create`` writes a complete build context (no
container engine needed), and ansible-builder's introspection of the installed collection finds its
Python and system dependencies."""

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

try:
    from .test_sync_helpers import BIN, REPO_ROOT, clean_env
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import BIN, REPO_ROOT, clean_env

from tests.conftest import COLLECTION_DIR

ANSIBLE_BUILDER = BIN / "ansible-builder"


def requirement_lines(path):
    return [line.strip() for line in Path(path).read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_meta_copies_of_the_requirement_files_are_identical():
    # meta/ holds copies because ansible-builder resolves the EE file's paths relative to meta/
    for name in ("requirements.txt", "bindep.txt"):
        assert requirement_lines(COLLECTION_DIR / "meta" / name) == requirement_lines(COLLECTION_DIR / name), name


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("ee-build")
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(REPO_ROOT)],
                   check=True, capture_output=True, text=True, env=clean_env(), timeout=300)
    (path,) = out.glob("stacksync-k8s-*.tar.gz")
    return path


@pytest.mark.skipif(not ANSIBLE_BUILDER.exists(), reason="ansible-builder is not installed (tests/requirements.txt)")
def test_ansible_builder_create_writes_a_complete_context(tmp_path, tarball):
    # The layout the EE file expects: meta/ next to build/<tarball> (a checkout after `ansible-galaxy collection build`).
    (tmp_path / "meta").mkdir()
    for name in ("execution-environment.yml", "requirements.txt", "bindep.txt"):
        shutil.copy(COLLECTION_DIR / "meta" / name, tmp_path / "meta" / name)
    (tmp_path / "build").mkdir()
    shutil.copy(tarball, tmp_path / "build" / tarball.name)

    definition = yaml.safe_load((tmp_path / "meta" / "execution-environment.yml").read_text())
    assert definition["version"] == 3

    context = tmp_path / "context"
    proc = subprocess.run([str(ANSIBLE_BUILDER), "create", "-f", str(tmp_path / "meta" / "execution-environment.yml"),
                           "--context", str(context), "--output-filename", "Containerfile"],
                          capture_output=True, text=True, env=clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (context / "Containerfile").read_text()
    build = context / "_build"

    assert 'ARG EE_BASE_IMAGE="{}"'.format(definition["images"]["base_image"]["name"]) in containerfile
    assert "ansible-core" in containerfile and "ansible-runner" in containerfile
    # the collection's own dependencies, as files in the context, handed to the introspection step
    assert requirement_lines(build / "requirements.txt") == requirement_lines(REPO_ROOT / "requirements.txt")
    assert requirement_lines(build / "bindep.txt") == requirement_lines(REPO_ROOT / "bindep.txt")
    assert not (build / "requirements.txt").is_symlink() and not (build / "bindep.txt").is_symlink()
    assert "--user-pip=requirements.txt" in containerfile and "--user-bindep=bindep.txt" in containerfile
    # the collection itself: the tarball in the context, installed by ansible-galaxy in the galaxy stage
    copied = build / "collections" / tarball.name
    assert copied.exists()
    with tarfile.open(copied) as tf:
        manifest = json.load(tf.extractfile("MANIFEST.json"))
    assert (manifest["collection_info"]["namespace"], manifest["collection_info"]["name"]) == ("stacksync", "k8s")
    galaxy = yaml.safe_load((build / "requirements.yml").read_text())
    assert galaxy["collections"] == [{"name": "/build/collections/stacksync-k8s.tar.gz", "type": "file"}]
    copy_at = containerfile.index("COPY _build/collections/ /build/collections/")
    assert copy_at < containerfile.index("RUN mv /build/collections/stacksync-k8s-*.tar.gz") \
        < containerfile.index("ansible-galaxy collection install")


@pytest.mark.skipif(not ANSIBLE_BUILDER.exists(), reason="ansible-builder is not installed (tests/requirements.txt)")
def test_introspection_of_the_installed_collection_finds_its_dependencies(tmp_path, tarball):
    # What ansible-builder does inside any EE that installs stacksync.k8s (from Galaxy, git or a tarball).
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "--force", "-p", str(tmp_path), str(tarball)],
                   check=True, capture_output=True, text=True, env=clean_env(), timeout=300)
    import ansible_builder

    script = Path(ansible_builder.__file__).parent / "_target_scripts" / "introspect.py"
    proc = subprocess.run([str(BIN / "python"), str(script), "introspect", str(tmp_path)],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = yaml.safe_load(proc.stdout)
    python = " ".join(data["python"])
    system = " ".join(data["system"])
    assert "kubernetes>=" in python and "jmespath>=" in python and "from collection stacksync.k8s" in python
    assert "git [platform:dpkg platform:rpm]" in system
