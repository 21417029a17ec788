"""Differential test: the manifests lookup reads every file of tests/fixtures/yaml-parity as kubectl does.

Each file goes through ``render()`` (the lookup's reader) and through
``kubectl create --dry-run=client -o json --validate=false -f FILE`` against the ``kube`` cluster (the
simulator, or the real server named by ``STACKSYNC_TEST_KUBECONFIG``: kubectl needs a server for its
REST mapping, nothing is created). The objects must be the same JSON (numbers compared as kubectl
holds them: integers within int64, other numbers float64), or both must fail.

``STRICTER`` lists the files the lookup refuses on purpose although kubectl reads them (each would
silently lose data that a pruning sync would then delete); the test checks that kubectl does read them,
so the list stays honest.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import render as R

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "yaml-parity"
FILES = sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
KUBECTL = shutil.which("kubectl")

#: file -> why the lookup refuses what kubectl reads.
STRICTER = {
    "duplicate-keys.yaml": "a key written twice: kubectl keeps the last value silently",
    "duplicate-top-level.yaml": "a top-level key written twice: kubectl drops the first data block",
    "duplicate-after-stringify.yaml": "keys 1 and '1' are one JSON key: kubectl keeps one of them at random",
    "duplicate-bool-keys.yaml": "keys y and true are both 'true' for kubectl",
    "json-duplicate-keys.json": "a JSON key written twice: kubectl keeps the last value silently",
    "document-end-then-more.yaml": "content after '...': kubectl ignores it (an object the sync would prune)",
}

#: file -> a difference still open (the test fails, strictly, once it is gone).
KNOWN_DIFFERENCES = {
    "non-specific-tag.yaml": "'! 12' (the non-specific tag) is the string '12' for kubectl; libyaml reports it "
                             "to PyYAML as an untagged plain scalar, read as the integer 12",
}

INT64 = (-(2 ** 63), 2 ** 63 - 1)


def _kubectl_int(text):
    value = int(text)
    return value if INT64[0] <= value <= INT64[1] else float(value)


def kubectl_objects(path, kubeconfig, cache_dir, flag="-f"):
    """``(ok, objects or error text)`` of kubectl reading ``path`` (``flag="-k"``: a kustomization)."""
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", str(cache_dir), "create", "--dry-run=client",
         "-o", "json", "--validate=false", flag, str(path)],
        capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        return False, proc.stderr.strip()
    decoder = json.JSONDecoder(parse_int=_kubectl_int)
    text, position, objects = proc.stdout, 0, []
    while text[position:].strip():
        value, position = decoder.raw_decode(text, len(text) - len(text[position:].lstrip()))
        objects.extend(value["items"] if value.get("kind") == "List" and "items" in value else [value])
    return True, objects


def lookup_objects(path):
    """``(ok, objects or RenderError)`` of the lookup's reader on ``path``."""
    try:
        return True, R.render(str(path), source_annotation=False)
    except R.RenderError as exc:
        return False, exc


def canonical(objects):
    return [json.dumps(o, sort_keys=True) for o in objects]


@pytest.fixture(scope="module")
def kubectl_env(request, tmp_path_factory):
    if KUBECTL is None:
        pytest.skip("kubectl is not on PATH: the differential YAML test compares the lookup with kubectl")
    kube = request.getfixturevalue("kube")  # a cluster only once kubectl is known to be there
    return kube.kubeconfig, tmp_path_factory.mktemp("kubectl-cache")


def test_corpus_is_not_empty():
    assert len(FILES) >= 40
    assert set(STRICTER) | set(KNOWN_DIFFERENCES) <= set(FILES)


@pytest.mark.parametrize("name", [
    pytest.param(f, marks=pytest.mark.xfail(reason=KNOWN_DIFFERENCES[f], strict=True)) if f in KNOWN_DIFFERENCES else f
    for f in FILES])
def test_lookup_reads_the_file_as_kubectl_does(name, kubectl_env):
    path = CORPUS / name
    kubectl_ok, theirs = kubectl_objects(path, *kubectl_env)
    ours_ok, ours = lookup_objects(path)
    if name in STRICTER:
        assert kubectl_ok, f"kubectl now refuses {name} too: drop it from STRICTER ({theirs})"
        assert not ours_ok, f"the lookup read {name}, which it should refuse: {STRICTER[name]}"
        assert ours.path == name, str(ours)
        return
    if not kubectl_ok:
        assert not ours_ok, f"kubectl refuses {name} ({theirs}) but the lookup read {ours!r}"
        assert ours.path == name and ours.doc is not None, str(ours)
        return
    assert ours_ok, f"kubectl reads {name} but the lookup fails: {ours}"
    for ours_obj, theirs_obj in zip(ours, theirs):
        if "namespace" not in ours_obj["metadata"]:  # kubectl create fills in the context's namespace
            theirs_obj["metadata"].pop("namespace", None)
    assert canonical(ours) == canonical(theirs)


def test_kustomize_output_reads_as_kubectl_create_k(kubectl_env):
    """A kustomization is rendered with kustomize and its output read by the lookup: the same objects as
    ``kubectl create -k`` (kustomize quotes the strings its YAML 1.2 reading kept as strings)."""
    path = CORPUS / "kustomize"
    kubectl_ok, theirs = kubectl_objects(path, *kubectl_env, flag="-k")
    ours_ok, ours = lookup_objects(path)
    assert kubectl_ok and ours_ok, (theirs, ours)
    for obj in theirs:
        obj["metadata"].pop("namespace", None)
    assert canonical(ours) == canonical(theirs)
    assert ours[0]["data"]["plain"] == "yes" and ours[0]["data"]["oct"] == 15
