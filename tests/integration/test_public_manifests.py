"""Public manifest trees no one here wrote (issue 17), synced through playbook ``stacksync.k8s.sync``.

Each directory named in ``STACKSYNC_PUBLIC_MANIFESTS`` (separated by ``os.pathsep``: plain manifests or
kustomizations, e.g. a checkout of kube-prometheus' ``manifests/`` or microservices-demo's
``release/``) becomes a git repository and one stack:

- the first sync applies everything;
- the second writes nothing (server-normalised values, defaulted fields and CRD defaults read as in sync);
- ``--check --diff`` then reports no change;
- removing one file prunes exactly its objects, and the sync after that writes nothing;
- ``state: absent`` deletes the rest.

Skipped when the variable is unset: ``make test`` has no internet and ships no public trees. Run it on a
real server with ``STACKSYNC_TEST_KUBECONFIG`` (see ``make test-real``).
"""

import os
import re
import shutil
import uuid
from pathlib import Path

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import render

try:
    from .test_sync_helpers import GitRepo, run_playbook, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import GitRepo, run_playbook, write_inventory

TREES = [p for p in os.environ.get("STACKSYNC_PUBLIC_MANIFESTS", "").split(os.pathsep) if p]
#: kinds whose removal takes more than its own objects with it (or that other objects need)
KEEP_KINDS = {"CustomResourceDefinition", "Namespace", "APIService"}

pytestmark = pytest.mark.skipif(not TREES, reason="STACKSYNC_PUBLIC_MANIFESTS names no directory")


def removable_file(tree):
    """A plain manifest file (not part of a kustomization, not the only file) whose objects no other object
    needs to exist, and how many objects it holds; ``(None, 0)`` if there is none."""
    per_file = {}
    manifests = render(str(tree))
    for m in manifests:
        source = m["metadata"]["annotations"]["stacksync.io/source"].rsplit("#", 1)[0]
        per_file.setdefault(source, []).append(m["kind"])
    candidates = sorted((len(kinds), f) for f, kinds in per_file.items()
                        if not f.endswith("/") and not KEEP_KINDS & set(kinds) and len(kinds) < len(manifests))
    kustomized = {str(p.parent.relative_to(tree)) for p in Path(tree).rglob("kustomization.y*ml")}
    for count, f in candidates:
        if str(Path(f).parent) not in kustomized and not any(f.startswith(k + "/") for k in kustomized if k != "."):
            return f, count
    return None, 0


def applying(run, stack):
    """The object count of the stack's "applying [N of] M objects" line (M, the manifests rendered)."""
    m = re.search(rf"^stacksync \[public\] stack {re.escape(stack)}: applying (?:\d+ of )?(\d+) objects?", run.stdout,
                  re.M)
    assert m, run.tail()
    return int(m.group(1))


@pytest.mark.parametrize("tree", TREES, ids=[Path(t).name for t in TREES])
def test_a_public_tree_syncs_then_writes_nothing_then_prunes_what_git_removed(tmp_path, kube, tree):
    repo = GitRepo(tmp_path / "repo")
    shutil.copytree(tree, repo.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
    repo.commit("public tree")
    slug = re.sub(r"[^a-z0-9]+", "-", Path(tree).name.lower()).strip("-")[:30]
    stack = f"public-{slug}-{uuid.uuid4().hex[:6]}"
    inventory = write_inventory(tmp_path / "hosts.yml", {"public": {"stacksync_kubeconfig": kube.kubeconfig}})
    source = {"repo": repo.url, "stack": stack}

    def sync(*args, state="present"):
        return run_playbook(inventory, {"stacksync_sources": [dict(source, state=state)],
                                        "stacksync_cache_dir": str(tmp_path / "cache")}, *args)

    try:
        first = sync()
        assert first.rc == 0, first.tail()
        objects = applying(first, stack)
        second = sync()
        row = second.summary_rows()["public"][stack]
        assert second.rc == 0 and (row["created"], row["configured"], row["unchanged"]) == ("0", "0", str(objects)), (
            row, second.tail())
        check = sync("--check", "--diff")
        assert check.rc == 0 and check.recap["public"]["changed"] == 0, check.tail()

        removed, count = removable_file(repo.path)
        if removed:
            repo.remove(removed)
            repo.commit("remove " + removed)
            third = sync()
            row = third.summary_rows()["public"][stack]
            assert third.rc == 0 and row["unchanged"] == str(objects - count), third.tail()
            assert (row["created"], row["configured"], row["pruned"]) == ("0", "0", str(count)), (row, third.tail())
            fourth = sync()
            row = fourth.summary_rows()["public"][stack]
            assert (row["created"], row["configured"], row["pruned"]) == ("0", "0", "0"), (row, fourth.tail())
    finally:
        sync(state="absent")
