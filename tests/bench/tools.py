"""The tools under comparison: how each one syncs the repository into the cluster once.

Every tool gets the same rendered repository and the same kind of fresh simulator; ``command``
returns one argv whose whole process tree is measured.
"""

import json
import shlex
from pathlib import Path

from . import manifests

PLAYBOOKS = Path(__file__).resolve().parent / "playbooks"
KUBECTL_MANAGER = "bench-kubectl"


class Context:
    """What a tool needs to run: where things are, and what the stack contains."""

    def __init__(self, kubeconfig, repo, workdir, ansible_bin, kinds, loop_stride, concurrency=None):
        self.kubeconfig = str(kubeconfig)
        # Peers prune only where the scenario needs it (removed): kubernetes.core has no prune of
        # its own, and leaving it out elsewhere can only make the peers look faster.
        self.peer_prune = False
        self.repo = Path(repo)
        self.workdir = Path(workdir)
        self.ansible_bin = Path(ansible_bin)
        self.kinds = kinds
        self.loop_stride = loop_stride
        self.concurrency = concurrency

    def playbook(self, name, *args, **extra_vars):
        """``ansible-playbook`` of ``name`` (a file under playbooks/ or a collection playbook)."""
        path = PLAYBOOKS / name
        extra = dict(bench_kubeconfig=self.kubeconfig, bench_repo=str(self.repo), **extra_vars)
        return [str(self.ansible_bin / "ansible-playbook"), str(path) if path.exists() else name, *args,
                "-e", json.dumps(extra)]


class Tool:
    name = ""
    label = ""
    # per-object loop over a subset: results are extrapolated to the whole repository
    sampled = False

    def setup(self, ctx):
        """Commands to run once before the scenarios, not measured."""
        return []

    def command(self, ctx):
        raise NotImplementedError


class Stacksync(Tool):
    name = "stacksync"
    label = "stacksync.k8s.stack (one module run)"

    def command(self, ctx):
        extra = {"bench_concurrency": ctx.concurrency} if ctx.concurrency else {}
        return ctx.playbook("stacksync.yml", **extra)


class StacksyncRole(Tool):
    name = "stacksync-role"
    label = "stacksync.k8s.sync playbook (git + apply phase + prune phase)"

    def command(self, ctx):
        return ctx.playbook("stacksync.k8s.sync", "-i", "localhost,", ansible_connection="local",
                            ansible_python_interpreter="{{ ansible_playbook_python }}",
                            stacksync_repo=f"file://{ctx.repo}", stacksync_stack="bench-role",
                            stacksync_kubeconfig=ctx.kubeconfig, stacksync_cache_dir=str(ctx.workdir / "checkouts"),
                            stacksync_summary=False, **({"stacksync_concurrency": ctx.concurrency} if ctx.concurrency else {}))


def _kind_refs(kinds):
    return [{"apiVersion": manifests.API_VERSIONS[k], "kind": k} for k in kinds]


class K8sList(Tool):
    name = "k8s-list"
    label = "kubernetes.core.k8s, whole list in one task"

    def command(self, ctx):
        return ctx.playbook("k8s.yml", bench_mode="list", bench_stride=1, bench_kinds=_kind_refs(ctx.kinds),
                            bench_prune=ctx.peer_prune)


class K8sLoop(Tool):
    name = "k8s-loop"
    label = "kubernetes.core.k8s, one task per object"
    sampled = True

    def command(self, ctx):
        return ctx.playbook("k8s.yml", bench_mode="loop", bench_stride=ctx.loop_stride, bench_kinds=_kind_refs(ctx.kinds),
                            bench_prune=ctx.peer_prune)


class Kubectl(Tool):
    """``kubectl apply --server-side`` with an ApplySet for pruning.

    ``--prune -l`` refuses to work with ``--server-side`` ("--prune is in alpha and doesn't currently
    work on objects created by server-side apply"), so pruning uses ApplySets (KUBECTL_APPLYSET=true),
    which need ``--prune`` on every run. The objects span namespaces, so the parent is a
    cluster-scoped custom resource created once in :meth:`setup`.
    """

    name = "kubectl"
    label = "kubectl apply --server-side --applyset --prune"
    parent = "bench-kubectl"

    def _base(self, ctx):
        return ["kubectl", "--kubeconfig", ctx.kubeconfig, "--cache-dir", str(ctx.workdir / "kube-cache")]

    def setup(self, ctx):
        crd, parent = manifests.applyset_parent(self.parent, "kubectl/v1.32")
        path = ctx.workdir / "applyset-parent.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [crd]}))
        parent_path = ctx.workdir / "applyset-parent-object.json"
        parent_path.write_text(json.dumps(parent))
        apply = [*self._base(ctx), "apply", "--server-side", "--validate=false", "--field-manager", "kubectl-applyset"]
        return [[*apply, "-f", str(path)],
                [*self._base(ctx), "wait", "--for", "condition=established", "crd/" + crd["metadata"]["name"]],
                [*apply, "-f", str(parent_path)]]

    def command(self, ctx):
        base = self._base(ctx)
        apply = [*base, "apply", "--server-side", "--force-conflicts", "--field-manager", KUBECTL_MANAGER]
        crd = ctx.repo / "00-cluster" / "crd-widgets.yaml"
        steps = [
            [*apply, "-f", str(crd)],
            [*base, "wait", "--for", "condition=established", "--timeout", "60s", "crd/" + manifests.CRD_NAME],
            [*apply, "-R", "-f", str(ctx.repo), "--prune", f"--applyset=applysets.{manifests.CRD_GROUP}/{self.parent}"],
        ]
        return ["bash", "-ec", "export KUBECTL_APPLYSET=true; " + " && ".join(shlex.join(step) for step in steps)]


TOOLS = {tool.name: tool for tool in (Stacksync(), StacksyncRole(), K8sList(), K8sLoop(), Kubectl())}
