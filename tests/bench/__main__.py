"""``python -m tests.bench --objects N[,N2] [--tools a,b] [--latency-ms 5 | --real | --kubeconfig PATH]``: run the benchmark of issue 7.

For every tool: a fresh cluster (by default a simulator subprocess, same build, same latency;
with ``--real`` a kube-apiserver + kube-controller-manager from ``../shared/kube/up``), a fresh git
repository of N generated objects, and the four scenarios in order (first sync, no-op, 10% changed,
10% removed). With ``--kubeconfig`` all tools use that existing cluster one after another, the
benchmark's objects deleted in between. Several sizes (``--objects 1000,10000``) run one after
another, each ``--repeat`` times (fresh clusters each round); the report gives medians, the ratios to
the ``limit`` tool and memory's growth per object between the sizes. Prints Markdown tables and
writes JSON (``tests/bench/results.json`` by default).
"""

import argparse
import contextlib
import functools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import cluster, manifests, measure, profile, report, scenarios, tools
from .repo import Repo

DEFAULT_TOOLS = ["stacksync", "stacksync-role", "k8s-list", "k8s-loop", "kubectl"]


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--objects", default="1000", help="objects in the generated repository (default 1000); several "
                        "sizes comma-separated (1000,10000) run one after another")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every size, tool and scenario, each on fresh "
                        "clusters; the report gives the median of the rounds (default 1)")
    parser.add_argument("--stacks", type=int, default=1, help="split the repository into this many stack directories "
                        "(stack-NNN/), for the stacksync-stacks tool: one sources task with a source per stack")
    parser.add_argument("--tools", default=",".join(DEFAULT_TOOLS), help="comma-separated, of: " + ", ".join(tools.TOOLS))
    parser.add_argument("--scenarios", default=",".join(scenarios.DEFAULT), help="comma-separated, in order, of: "
                        + ", ".join(scenarios.SCENARIOS) + " (check: a no-op in check mode; default: "
                        + ",".join(scenarios.DEFAULT) + ")")
    parser.add_argument("--latency-ms", type=float, default=5.0, help="simulated per-request latency (default 5)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--real", action="store_true",
                       help="a fresh real kube-apiserver + controller-manager per tool (started with --kube-up, "
                       "stopped after), requests counted from its /metrics")
    where.add_argument("--kubeconfig", type=Path, help="an existing cluster for all tools, one tool after another; "
                       "the benchmark's objects (bench-NN namespaces, its CRDs and cluster RBAC, its stacksync records "
                       "in kube-system) are deleted before each tool and at the end")
    parser.add_argument("--kube-up", type=Path, default=cluster.DEFAULT_KUBE_UP,
                        help="script that starts a control plane in a directory, with `down` next to it "
                        "(default ../shared/kube/up)")
    parser.add_argument("--loop-sample", type=int, default=50,
                        help="k8s-loop applies about this many objects and extrapolates to all (0: all objects)")
    parser.add_argument("--clusters", type=int, default=1,
                        help="a fleet: this many clusters (simulators), each synced with the same --objects from one "
                        "inventory with a host per cluster (tools that can: stacksync*, k8s-list)")
    parser.add_argument("--forks", type=int, help="Ansible forks with --clusters (default: one per cluster)")
    parser.add_argument("--real-clusters", type=int, default=0,
                        help="with --clusters K (simulators): this many of the K clusters are fresh real control planes "
                        "(--kube-up) instead (a mixed fleet: as many real servers as fit in memory)")
    parser.add_argument("--concurrency", type=int, help="stacksync's concurrency option (default: the module's default)")
    parser.add_argument("--settle", type=float, help="seconds to wait after a tool's cluster is up, before its first "
                        "scenario (default 20 with --real: a fresh control plane is still busy starting up; 0 otherwise)")
    parser.add_argument("--lanes", choices=("interleaved", "one-at-a-time"),
                        help="interleaved: every tool's cluster up together, scenario by scenario every tool in turn (a "
                        "change in the machine's load hits all tools alike); one-at-a-time: a tool's cluster is started, "
                        "settled, run through every scenario and stopped before the next tool's starts, so no tool runs "
                        "while another's controller-manager is still busy with the objects it synced (default: "
                        "one-at-a-time with --real, interleaved on the simulator, whose clusters have no controllers)")
    parser.add_argument("--ansible-venv", type=Path, help="venv whose ansible-playbook runs the playbooks "
                        "(default: the running Python's venv)")
    parser.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "results.json")
    parser.add_argument("--no-profile", dest="profile", action="store_false",
                        help="skip the profile of stacksync (start-up, rendering, engine phases)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, repositories)")
    args = parser.parse_args(argv)
    if args.ansible_venv:
        args.ansible_venv = args.ansible_venv.absolute()  # the tools run in their own work directories
    try:
        args.sizes = [int(n) for n in args.objects.split(",") if n]
    except ValueError:
        parser.error("--objects: numbers, comma-separated")
    if not args.sizes or min(args.sizes) < 1 or args.repeat < 1:
        parser.error("--objects and --repeat must be at least 1")
    args.objects = args.sizes[-1]
    if args.stacks > 1 and min(args.sizes) < args.stacks:
        parser.error("--stacks: fewer objects than stacks")
    args.tools = [t for t in args.tools.split(",") if t]
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = [t for t in args.tools if t not in tools.TOOLS] + [s for s in args.scenarios if s not in scenarios.SCENARIOS]
    if unknown:
        parser.error("unknown tool or scenario: " + ", ".join(unknown))
    if args.clusters > 1:
        if args.kubeconfig:
            parser.error("--clusters runs fresh clusters (simulators, or with --real control planes), not --kubeconfig")
        single = [t for t in args.tools if not tools.TOOLS[t].fleet]
        if single:
            parser.error("--clusters: these tools sync one cluster only: " + ", ".join(single))
        args.forks = args.forks or args.clusters
    if args.real_clusters and not (args.clusters > 1 and 0 < args.real_clusters <= args.clusters and not args.real):
        parser.error("--real-clusters R needs --clusters K with R <= K, without --real (all real)")
    if args.settle is None:
        args.settle = 20.0 if args.real or args.real_clusters else 0.0
    if args.lanes is None:
        args.lanes = "one-at-a-time" if args.real else "interleaved"
    args.real_backend = cluster.RealBackend(args.kube_up) if args.real or args.real_clusters else None
    if args.real:
        args.backend = args.real_backend
    elif args.kubeconfig:
        args.backend = cluster.KubeconfigBackend(args.kubeconfig)
    else:
        args.backend = cluster.SimulatorBackend(args.latency_ms)
    return args


def ansible_bin(args):
    return (args.ansible_venv / "bin") if args.ansible_venv else Path(sys.executable).parent


def check_peers(args, bin_dir):
    """Fail early (with the fix) when a peer's requirements are missing."""
    peers = any(t.startswith("k8s-") for t in args.tools)
    if peers and not list(bin_dir.parent.glob("lib/python3*/site-packages/ansible_collections/kubernetes/core")):
        sys.exit(f"kubernetes.core is not installed next to {bin_dir}: install the `ansible` package (tests/requirements.txt pins it)")
    if ("kubectl" in args.tools or args.backend.name != "simulator") and shutil.which("kubectl") is None:
        sys.exit("kubectl is not on PATH (the kubectl tool and real clusters need it)")


def collections_root():
    from tests.conftest import COLLECTIONS_ROOT

    return COLLECTIONS_ROOT


def environment(bin_dir, home, kubeconfig):
    env = dict(os.environ)
    env.update(
        HOME=str(home), KUBECONFIG=str(kubeconfig), PATH=f"{bin_dir}:{env.get('PATH', '')}",
        ANSIBLE_COLLECTIONS_PATH=str(collections_root()), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="true",
        ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_RETRY_FILES_ENABLED="false", ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks",
    )
    return env


def loop_stride(args, objects):
    return max(1, round(objects / args.loop_sample)) if args.loop_sample > 0 else 1


class Lane:
    """One tool's run through the scenarios: its own cluster (see cluster.py), repository and state."""

    def __init__(self, tool, args, workdir, bin_dir, objects, round_=0):
        self.tool = tool
        self.round = round_
        self.size = objects
        self.base = workdir / tool.name
        (self.base / "home").mkdir(parents=True)
        self.state = scenarios.State(objects, args.stacks)
        self.repo = Repo(self.base / "repo")
        self.env = environment(bin_dir, self.base / "home", self.base / "kubeconfig")
        if args.clusters > 1:
            bases = [self.base / f"cluster-{i:02d}" for i in range(args.clusters)]
            for base in bases:
                base.mkdir()
            self.cluster = cluster.Fleet([(args.real_backend if i < args.real_clusters else args.backend).cluster(base, self.env)
                                          for i, base in enumerate(bases)])
        else:
            self.cluster = args.backend.cluster(self.base, self.env)
        kubeconfig = self.cluster.kubeconfig  # the simulator's is base/kubeconfig; a real cluster's is elsewhere
        self.env["KUBECONFIG"] = str(kubeconfig)
        self.ctx = tools.Context(kubeconfig, self.repo.path, self.base, bin_dir, manifests.kinds(self.state.entries),
                                 loop_stride(args, objects), args.concurrency)
        self.ctx.stacks = args.stacks
        if args.clusters > 1:
            self.ctx.fleet(self.cluster.kubeconfigs, args.forks)
        self.env.update(tool.environment(self.ctx))
        self.failed = False

    def setup(self):
        for i, argv in enumerate(self.tool.setup(self.ctx)):
            run = measure.run(argv, self.env, self.base / f"setup-{i}.log", cwd=self.base)
            if not run.ok:
                raise SystemExit(f"{self.tool.name}: setup failed:\n{run.tail()}")

    def run(self, scenario):
        """Edit and commit the repository for ``scenario``, then sync it with the tool; returns the record."""
        before = scenarios.snapshot(self.state.entries) if scenario != "first" else {}
        note = scenarios.SCENARIOS[scenario](self.state)
        commit = self.repo.write(self.state.entries, f"{scenario}: {note}")
        self.ctx.peer_prune = scenario == "removed"
        self.ctx.scenario = scenario
        self.ctx.check = scenario in scenarios.CHECK_MODE
        if self.tool.name == "limit":  # what the scenario writes, for the bare PATCHes and DELETEs
            apply, delete = scenarios.writes(before, self.state.entries)
            self.ctx.writes = self.base / f"writes-{scenario}.json"
            self.ctx.writes.write_text(json.dumps({"apply": [e.manifest() for e in apply],
                                                   "delete": [e.manifest() for e in delete]}))
        self.cluster.reset()
        run = measure.run(self.tool.command(self.ctx), self.env, self.base / f"{scenario}.log", cwd=self.base)
        rec = report.record(self.tool, scenario, note, self.state, run, self.cluster.counts(), self.ctx, commit)
        self.tool.finish(rec, self.ctx)
        rec.update(round=self.round, size=self.size, stacks=self.state.stacks)
        if self.ctx.inventory:
            rec.update(clusters=len(self.cluster.clusters), forks=self.ctx.forks)
        print(report.progress_line(rec), flush=True)
        if not run.ok:
            self.failed = True
            print(run.tail(), file=sys.stderr)
        return rec


def _server_version(args, lane):
    if getattr(args.backend, "server_version", "") is None:
        args.backend.server_version = lane.cluster.version()


def run_all(args, workdir, bin_dir, objects, round_=0):
    """Scenario by scenario, every tool in turn (so a change in the machine's load hits all tools alike),
    each tool on its own cluster; tool after tool instead on a shared existing cluster (``--kubeconfig``)
    and with ``--lanes one-at-a-time`` (the default with ``--real``)."""
    records = []
    lanes = [Lane(tools.TOOLS[name], args, workdir, bin_dir, objects, round_) for name in args.tools]
    if args.backend.sequential or args.lanes == "one-at-a-time":
        for lane in lanes:
            with lane.cluster:
                _server_version(args, lane)
                lane.setup()
                if args.settle and not args.backend.sequential:  # a fresh control plane finishes starting first
                    time.sleep(args.settle)
                records.extend(lane.run(scenario) for scenario in args.scenarios if not lane.failed)
        return records
    with contextlib.ExitStack() as stack:
        for lane in lanes:
            stack.enter_context(lane.cluster)
            _server_version(args, lane)
            lane.setup()
        if args.settle:  # fresh control planes finish starting (controllers, bootstrap objects) before anything is timed
            time.sleep(args.settle)
        for scenario in args.scenarios:
            records.extend(lane.run(scenario) for lane in lanes if not lane.failed)
    return records


def main(argv=None):
    args = parse_args(argv)
    bin_dir = ansible_bin(args)
    check_peers(args, bin_dir)
    workdir = Path(tempfile.mkdtemp(prefix="stacksync-bench-"))
    started = time.time()
    records = []
    try:
        for round_ in range(args.repeat):
            for objects in args.sizes:
                records.extend(run_all(args, workdir / f"round-{round_}" / f"n-{objects}", bin_dir, objects, round_))
        prof = None
        if args.profile:
            prof = [profile.profile(args, workdir / f"profile-{n}", bin_dir, functools.partial(environment, bin_dir), n)
                    for n in args.sizes]
    finally:
        keep = args.keep or not all(r["ok"] for r in records)
        if keep:
            print(f"work directory kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    results = report.results(args, records, bin_dir, round(time.time() - started, 1))
    results["profile"] = prof
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print(report.markdown(results))
    for one in prof or ():
        print()
        print(profile.markdown(one))
    print(f"\nJSON: {args.output}")
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
