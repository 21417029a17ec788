"""The tools under comparison: how each one syncs the repository into the cluster once.

Every tool gets the same rendered repository and the same kind of fresh simulator; ``command``
returns one argv whose whole process tree is measured.
"""

import json
import os
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
        self.inventory = None  # several clusters (--clusters): an inventory with a host per cluster
        self.forks = None
        self.stacks = 1  # --stacks: the repository holds that many stack directories (manifests.split_stacks)
        self.scenario = None  # the scenario being run, and the file of its writes (limit tool), set by the lane
        self.writes = None
        self.check = False  # the scenario runs in check mode

    def fleet(self, kubeconfigs, forks):
        """Write the inventory of a fleet: a host per cluster, its kubeconfig as a host variable, run on the
        controller with the Python running ansible-playbook (as docs/scale-out.md recommends)."""
        lines = ["all:", "  vars:", "    ansible_connection: local",
                 "    ansible_python_interpreter: '{{ ansible_playbook_python }}'", "  children:", "    clusters:",
                 "      hosts:"]
        for i, kubeconfig in enumerate(kubeconfigs):
            lines += [f"        cluster-{i:02d}:", f"          bench_kubeconfig: {json.dumps(str(kubeconfig))}",
                      f"          stacksync_kubeconfig: {json.dumps(str(kubeconfig))}"]
        self.inventory = self.workdir / "fleet.yml"
        self.inventory.write_text("\n".join(lines) + "\n")
        self.forks = forks

    def playbook(self, name, *args, **extra_vars):
        """``ansible-playbook`` of ``name`` (a file under playbooks/ or a collection playbook)."""
        path = PLAYBOOKS / name
        extra = dict(bench_kubeconfig=self.kubeconfig, bench_repo=str(self.repo), **extra_vars)
        if self.inventory:  # each host's own kubeconfig (an extra variable would override it)
            extra = dict((k, v) for k, v in extra.items() if k not in ("bench_kubeconfig", "stacksync_kubeconfig"))
            extra["bench_hosts"] = "clusters"
            args = ("-i", str(self.inventory), "--forks", str(self.forks), *args)
        if self.check:
            args = (*args, "--check")
        return [str(self.ansible_bin / "ansible-playbook"), str(path) if path.exists() else name, *args,
                "-e", json.dumps(extra)]


class Tool:
    name = ""
    label = ""
    # per-object loop over a subset: results are extrapolated to the whole repository
    sampled = False
    # can sync a fleet of clusters (--clusters) from one inventory
    fleet = True

    def setup(self, ctx):
        """Commands to run once before the scenarios, not measured."""
        return []

    def command(self, ctx):
        raise NotImplementedError

    def environment(self, ctx):
        """Environment variables this tool sets (on top of the lane's)."""
        return {}

    def finish(self, rec, ctx):
        """Adjust the run's record (``report.record``) once it is made."""


#: how a stacksync row sets the Python interpreter the module runs with (issue 18): the suffix of its tool name
INTERPRETERS = {
    "": "the implicit localhost (Ansible sets ansible_python_interpreter to its own Python)",
    "hostvar": "host variable ansible_python_interpreter: '{{ ansible_playbook_python }}' in the inventory",
    "env": "ANSIBLE_PYTHON_INTERPRETER=<the venv's python> in the environment",
    "cfg": "interpreter_python = <the venv's python> in ansible.cfg",
    "discovery": "nothing set: interpreter discovery (auto) finds the venv's python3.X first on PATH (venv, /usr/bin, /bin)",
    "module": "stacksync_in_process=false: a module process (as for a remote host, become, async, delegate_to)",
}
FORMS = {"stacksync": ("stacksync.yml", "src"), "stacksync-query": ("stacksync-query.yml",
                                                                     "resources: query('stacksync.k8s.manifests')")}


class Stacksync(Tool):
    """One ``stacksync.k8s.stack`` task (``src``, or ``resources`` from the lookup), the interpreter set one way."""

    def __init__(self, form="stacksync", interpreter=""):
        self.name = form + ("@" + interpreter if interpreter else "")
        self.playbook_file, what = FORMS[form]
        self.interpreter = interpreter
        self.label = f"stacksync.k8s.stack with {what}; interpreter: {INTERPRETERS[interpreter]}"

    def command(self, ctx):
        extra = {"bench_concurrency": ctx.concurrency} if ctx.concurrency else {}
        args = []
        if self.interpreter == "hostvar":
            inventory = ctx.workdir / "hosts.yml"
            inventory.write_text("all:\n  hosts:\n    localhost:\n"
                                 "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
            args = ["-i", str(inventory)]
        elif self.interpreter and not ctx.inventory:
            args = ["-i", "localhost,"]  # an explicit localhost: no interpreter set for it
        if self.interpreter == "module":
            extra["stacksync_in_process"] = False
        return ctx.playbook(self.playbook_file, *args, **extra)

    def environment(self, ctx):
        python = str(ctx.ansible_bin / "python")
        if self.interpreter == "env":
            return {"ANSIBLE_PYTHON_INTERPRETER": python}
        if self.interpreter == "cfg":
            cfg = ctx.workdir / "ansible.cfg"
            cfg.write_text(f"[defaults]\ninterpreter_python = {python}\n")
            return {"ANSIBLE_CONFIG": str(cfg)}
        if self.interpreter == "discovery":  # as in an execution environment: the venv first, no other python3.1X
            return {"PATH": os.pathsep.join((str(ctx.ansible_bin), "/usr/bin", "/bin"))}
        if self.interpreter == "module":  # the interpreter of a remote host: set explicitly, not discovered
            return {"ANSIBLE_PYTHON_INTERPRETER": python}
        return {}


class StacksyncRole(Tool):
    name = "stacksync-role"
    label = "stacksync.k8s.sync playbook (git + apply phase + prune phase)"

    def command(self, ctx):
        local = {} if ctx.inventory else dict(ansible_connection="local",
                                                ansible_python_interpreter="{{ ansible_playbook_python }}")
        return ctx.playbook("stacksync.k8s.sync", *(() if ctx.inventory else ("-i", "localhost,")), **local,
                            stacksync_repo=f"file://{ctx.repo}", stacksync_stack="bench-role",
                            stacksync_kubeconfig=ctx.kubeconfig, stacksync_cache_dir=str(ctx.workdir / "checkouts"),
                            stacksync_summary=False, **({"stacksync_concurrency": ctx.concurrency} if ctx.concurrency else {}))


class StacksyncStacks(Tool):
    """The ``stacksync.k8s.sync`` playbook with one source per stack directory of the repository (``--stacks``):
    one ``stacksync.k8s.sources`` task, each source its own stack, record and Lease, one checkout for all."""

    name = "stacksync-stacks"
    label = "stacksync.k8s.sync playbook, one source per stack directory (--stacks)"

    def command(self, ctx):
        url = f"file://{ctx.repo}"
        sources = [{"repo": url, "path": manifests.stack_dir(i), "stack": f"bench-{i:03d}"} for i in range(ctx.stacks)]
        local = {} if ctx.inventory else dict(ansible_connection="local",
                                                ansible_python_interpreter="{{ ansible_playbook_python }}")
        return ctx.playbook("stacksync.k8s.sync", *(() if ctx.inventory else ("-i", "localhost,")), **local,
                            stacksync_sources=sources, stacksync_kubeconfig=ctx.kubeconfig,
                            stacksync_cache_dir=str(ctx.workdir / "checkouts"), stacksync_summary=False,
                            **({"stacksync_concurrency": ctx.concurrency} if ctx.concurrency else {}))


class Limit(Tool):
    """The physical limit (issue 32, :mod:`.limit`): Ansible's start-up plus the scenario's writes as bare
    server-side apply PATCHes (16 in flight) and DELETEs; its wall seconds are those two, summed."""

    name = "limit"
    label = "limit: ansible-playbook start-up + the scenario's writes as bare PATCH/DELETE, 16 in flight"
    fleet = False

    def command(self, ctx):
        return [str(ctx.ansible_bin / "python"), "-m", "tests.bench.limit", "--kubeconfig", ctx.kubeconfig,
                "--writes", str(ctx.writes), "--out", str(self._out(ctx)),
                "--ansible-playbook", str(ctx.ansible_bin / "ansible-playbook")]

    @staticmethod
    def _out(ctx):
        return ctx.workdir / f"limit-{ctx.scenario}.json"

    def environment(self, ctx):
        return {"PYTHONPATH": str(PLAYBOOKS.parents[2])}  # python -m tests.bench.limit, from the lane's directory

    def finish(self, rec, ctx):
        if rec["ok"]:
            out = json.loads(self._out(ctx).read_text())
            rec.update(seconds=out["seconds"], command_seconds=rec["seconds"], startup_s=out["startup_s"],
                       startup_cpu_s=out["startup_cpu_s"], writes_s=out["writes_s"])


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
    fleet = False

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
    fleet = False

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
        apply = [*base, "apply", "--server-side", "--force-conflicts", "--field-manager", KUBECTL_MANAGER,
                 *(["--dry-run=server"] if ctx.check else [])]
        crd = ctx.repo / "00-cluster" / "crd-widgets.yaml"
        steps = [
            [*apply, "-f", str(crd)],
            [*base, "wait", "--for", "condition=established", "--timeout", "60s", "crd/" + manifests.CRD_NAME],
            [*apply, "-R", "-f", str(ctx.repo), "--prune", f"--applyset=applysets.{manifests.CRD_GROUP}/{self.parent}"],
        ]
        return ["bash", "-ec", "export KUBECTL_APPLYSET=true; " + " && ".join(shlex.join(step) for step in steps)]


STACKSYNC_TASKS = [Stacksync(form, how) for form in FORMS for how in INTERPRETERS]
TOOLS = {tool.name: tool for tool in (*STACKSYNC_TASKS, StacksyncRole(), StacksyncStacks(), K8sList(), K8sLoop(), Kubectl(),
                                      Limit())}
