"""Where the tools sync to: a simulator, a fresh real control plane, or an existing cluster.

Every backend gives a lane a context manager with ``kubeconfig``, ``reset()`` (start counting)
and ``counts()`` (``{"verbs": {verb: n}, "resources": {"verb resource": n}}`` since the reset, in
the simulator's shape).

* ``simulator`` (default): :class:`tests.bench.simserver.SimProcess`, one per tool; the simulator
  logs every request itself.
* ``real`` (``--real``): one fresh kube-apiserver + kube-controller-manager per tool, started with
  ``../shared/kube/up DIR`` and stopped with ``down DIR``, so every tool starts from an empty
  cluster as with the simulator.
* ``kubeconfig`` (``--kubeconfig PATH``): an existing cluster shared by all tools. The tools run one
  after another (all scenarios of one tool, then the next), and the benchmark's objects are
  deleted before each tool and after the last one (:func:`cleanup`).

On a real server the requests are counted from the apiserver's Prometheus metrics:
``apiserver_request_total`` is read (``kubectl get --raw /metrics``) before and after each run and
the difference is reported. Its ``verb`` label already tells server-side apply (``APPLY``) from
other PATCHes, LIST from GET and WATCH from LIST. Its ``system_client`` label is set from the
user agent for the control plane's own components (``kube-apiserver``, ``kube-controller-manager``,
...); those requests (the Deployment controller's status updates, the root-CA publisher's
ConfigMaps in new namespaces, informer re-watches, the garbage collector's discovery) are kept
apart (``system``) and not counted. What remains is every request of a non-system client: on a
private cluster (``--real``) that is the tool alone.

Not every request is in that metric (v1.36, checked one path at a time): aggregated discovery
(``/api``, ``/apis`` asked for ``apidiscovery.k8s.io/v2``) and ``/openapi/v3...`` are counted; the
legacy discovery documents (``/api``, ``/apis`` as plain JSON, ``/api/v1``, ``/apis/<group>/<version>``),
``/version``, ``/openapi/v2`` and ``/metrics`` are not. So the harness's scrapes are not counted,
but neither is kubernetes.core's legacy discovery nor kubectl's ``/version``: those tools' real
counts are a few discovery requests lower than on the simulator, which counts every request.
"""

import collections
import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

from . import manifests
from .simserver import SimProcess

REPO = Path(__file__).resolve().parents[2]
DEFAULT_KUBE_UP = REPO.parent / "shared" / "kube" / "up"
METRIC = "apiserver_request_total"
SAMPLE = re.compile(r"^" + METRIC + r"\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
VERBS = {"APPLY": "apply", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete",
         "DELETECOLLECTION": "deletecollection", "GET": "get", "LIST": "list", "WATCH": "watch", "WATCHLIST": "watch"}
# non-resource paths that are the harness's, not the tools' (not counted by v1.36 anyway)
HARNESS_PATHS = {"/metrics"}
UNCOUNTED = "legacy discovery (/api, /apis as plain JSON, /api/v1, /apis/<group>/<version>), /version, /openapi/v2"
# stacksync's records (ConfigMap, Secret, Lease in kube-system) of the stacks the benchmark uses
RECORD_LABEL = "stacksync.io/record-of"
BENCH_STACKS = ("bench", "bench-role", "bench-profile")
#: ... and of the stacks of ``--stacks`` (``bench-000`` ...)
BENCH_STACK = re.compile(r"^bench-[0-9]{3}$")


class SimulatorBackend:
    name = "simulator"
    sequential = False  # lanes may interleave: each tool has its own server

    def __init__(self, latency_ms):
        self.latency_ms = latency_ms

    def cluster(self, base, _env):
        return SimProcess(base / "kubeconfig", self.latency_ms, base / "simulator.log")

    def describe(self):
        return dict(backend=self.name, latency_ms=self.latency_ms)


class Fleet:
    """Several clusters used as one (``--clusters K``): entered, reset and counted together; requests summed."""

    def __init__(self, clusters):
        self.clusters = clusters

    def __enter__(self):
        entered = []
        try:
            for c in self.clusters:
                entered.append(c.__enter__())
        except BaseException:
            for c in entered:
                c.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for c in self.clusters:
            c.__exit__(*exc)

    @property
    def kubeconfig(self):
        return self.clusters[0].kubeconfig

    @property
    def kubeconfigs(self):
        return [c.kubeconfig for c in self.clusters]

    def reset(self):
        for c in self.clusters:
            c.reset()

    def counts(self):
        verbs, resources, system = collections.Counter(), collections.Counter(), collections.Counter()
        out = {}
        for c in self.clusters:
            counts = c.counts()
            verbs.update(counts["verbs"])
            resources.update(counts["resources"])
            system.update(counts.get("system") or {})
            for key in ("server_cpu_seconds", "system_total"):  # real control planes: summed over the fleet
                if key in counts:
                    out[key] = round(out.get(key, 0) + counts[key], 2)
        out.update(verbs=dict(sorted(verbs.items())), resources=dict(sorted(resources.items())))
        if "system_total" in out:
            out["system"] = dict(sorted(system.items()))
        return out

    def version(self):
        return self.clusters[0].version()


def _kubectl(kubeconfig, env, *args, timeout=600, check=True):
    argv = ["kubectl", "--kubeconfig", str(kubeconfig), *args]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed: {proc.stderr.strip()[-2000:]}")
    return proc


def parse_metrics(text):
    """``{frozenset(labels.items()): value}`` of the ``apiserver_request_total`` samples in ``text``."""
    samples = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            labels = frozenset((k, v.replace('\\"', '"').replace("\\\\", "\\")) for k, v in LABEL.findall(m.group("labels")))
            samples[labels] = samples.get(labels, 0.0) + float(m.group("value"))
    return samples


def _key(labels):
    """``(verb, "verb resource")`` of a sample, in the simulator's terms (``apply``, ``discovery /apis``)."""
    resource = labels.get("resource", "")
    subresource = labels.get("subresource", "")
    if not resource:  # a non-resource URL; the metric keeps only its first segments ("api", "openapi/v3/")
        path = "/" + subresource.strip("/") + ("/*" if subresource.endswith("/") and subresource.strip("/") else "")
        return "discovery", f"discovery {path}"
    verb = VERBS.get(labels.get("verb", ""), labels.get("verb", "").lower())
    group = labels.get("group", "")
    name = f"{group}/{resource}" if group else resource
    if subresource:
        name += "/" + subresource
    return verb, f"{verb} {name}"


def metric_counts(before, after):
    """Requests between two scrapes, by verb and by verb + resource; system clients apart.

    ``{"verbs": {...}, "resources": {...}, "system": {"client verb resource": n}, "system_total": n}``
    """
    verbs = collections.Counter()
    resources = collections.Counter()
    system = collections.Counter()
    for labels, value in after.items():
        n = round(value - before.get(labels, 0.0))
        if n <= 0:
            continue
        labels = dict(labels)
        if not labels.get("resource") and "/" + labels.get("subresource", "").strip("/") in HARNESS_PATHS:
            continue
        verb, key = _key(labels)
        client = labels.get("system_client", "")
        if client:
            system[f"{client} {key}"] += n
            continue
        verbs[verb] += n
        resources[key] += n
    return {"verbs": dict(sorted(verbs.items())), "resources": dict(sorted(resources.items())),
            "system": dict(sorted(system.items())), "system_total": sum(system.values())}


class RealCluster:
    """Counts a real kube-apiserver's requests from its metrics (``reset()`` / ``counts()``)."""

    def __init__(self, kubeconfig, env, log):
        self.kubeconfig = Path(kubeconfig)
        self.env = env
        self.log = Path(log)
        self._before = None

    def scrape(self):
        text = _kubectl(self.kubeconfig, self.env, "get", "--raw", "/metrics", timeout=120).stdout
        samples = parse_metrics(text)
        if not samples:
            raise RuntimeError(f"no {METRIC} in the metrics of the server in {self.kubeconfig}")
        return samples

    def reset(self):
        self._before = self.scrape()

    def counts(self):
        time.sleep(0.2)  # a request is counted once its handler returned, just after the client got the answer
        counts = metric_counts(self._before, self.scrape())
        if not any("system_client" in dict(labels) for labels in self._before):
            counts["note"] = "this server's metrics have no system_client label: the controllers' requests are counted too"
        return counts

    def version(self):
        proc = _kubectl(self.kubeconfig, self.env, "version", "-o", "json", check=False, timeout=60)
        try:
            return json.loads(proc.stdout)["serverVersion"]["gitVersion"]
        except (ValueError, KeyError):
            return None


def process_cpu_seconds(pids):
    """Summed user + system CPU seconds of the live processes among ``pids`` (``/proc/PID/stat``)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    return total / os.sysconf("SC_CLK_TCK")


class FreshCluster(RealCluster):
    """``up DIR`` on enter, ``down DIR`` on exit: a private, empty control plane.

    Its processes are known (``DIR/pids``: etcd, kube-apiserver, kube-controller-manager), so each
    run also reports the control plane's CPU seconds in the run's window: on a machine whose cores
    the tool shares with the server, what the server needed to do the tool's work.
    """

    def __init__(self, up, base, env):
        self.up = Path(up)
        self.dir = base / "cluster"
        super().__init__(self.dir / "kubeconfig", env, base / "cluster-up.log")
        self._cpu_before = None

    def _pids(self):
        try:
            return [int(p) for p in (self.dir / "pids").read_text().split()]
        except (OSError, ValueError):
            return []

    def reset(self):
        super().reset()
        self._cpu_before = process_cpu_seconds(self._pids())

    def counts(self):
        counts = super().counts()  # its scrape's own cost (one /metrics request) is in the window too
        if self._cpu_before is not None:
            counts["server_cpu_seconds"] = round(process_cpu_seconds(self._pids()) - self._cpu_before, 2)
        return counts

    #: ``up`` picks each free port on its own, so one can be taken before its server binds it (kube-apiserver:
    #: "bind: address already in use", and ``up`` gives up after a minute): a start that failed is tried again, on
    #: the ports a new ``up`` picks, after ``down --wipe``
    ATTEMPTS = 3

    def __enter__(self):
        for attempt in range(1, self.ATTEMPTS + 1):
            with open(self.log, "w" if attempt == 1 else "a") as out:
                out.write(f"== {self.up} {self.dir} (attempt {attempt} of {self.ATTEMPTS})\n")
                out.flush()
                proc = subprocess.run([str(self.up), str(self.dir)], stdout=out, stderr=subprocess.STDOUT, timeout=600)
            if proc.returncode == 0:
                return self
            subprocess.run([str(self.up.parent / "down"), str(self.dir), "--wipe"], capture_output=True, timeout=120)
        raise RuntimeError(f"{self.up} {self.dir} failed {self.ATTEMPTS} times; see {self.log}")

    def __exit__(self, *exc):
        subprocess.run([str(self.up.parent / "down"), str(self.dir)], capture_output=True, timeout=120)


class ExistingCluster(RealCluster):
    """A cluster given by the user: the benchmark's objects are deleted on enter and on exit."""

    def __enter__(self):
        preflight(self.kubeconfig, self.env)
        cleanup(self.kubeconfig, self.env, self.log)
        return self

    def __exit__(self, *exc):
        cleanup(self.kubeconfig, self.env, self.log)


def cleanup(kubeconfig, env, log):
    """Delete what the benchmark creates, and wait until it is gone (namespaces terminated).

    Only objects that are recognisably the benchmark's: carrying its part-of label (the namespaces,
    the Widget CRD, the cluster RBAC), the ApplySet CRD of its own API group (its parent object
    goes with it), and stacksync's records of the benchmark's stacks.
    """
    selector = f"{manifests.PART_OF_LABEL}={manifests.PART_OF}"
    steps = [
        ("delete", "namespaces,customresourcedefinitions,clusterroles,clusterrolebindings", "-l", selector),
        ("delete", "customresourcedefinitions", "applysets." + manifests.CRD_GROUP),
        ("delete", "-n", "kube-system", "configmaps,secrets,leases.coordination.k8s.io",
         "-l", f"{RECORD_LABEL} in ({','.join(BENCH_STACKS)})"),
    ]
    many = stack_records(json.loads(_kubectl(kubeconfig, env, "get", "-n", "kube-system", "configmaps,secrets,leases.coordination.k8s.io",
                                             "-l", RECORD_LABEL, "-o", "json").stdout)["items"])
    if many:
        steps.append(("delete", "-n", "kube-system", *many))
    with open(log, "a") as out:
        for step in steps:
            proc = _kubectl(kubeconfig, env, *step, "--ignore-not-found", "--wait", "--timeout", "600s", timeout=900)
            out.write(f"$ kubectl {shlex.join(step)}\n{proc.stdout}{proc.stderr}")


def stack_records(items):
    """``["configmap/NAME", ...]``: the records, keys and Leases among ``items`` of the ``--stacks`` stacks."""
    kinds = {"ConfigMap": "configmap", "Secret": "secret", "Lease": "lease.coordination.k8s.io"}
    return sorted(f"{kinds[i['kind']]}/{i['metadata']['name']}" for i in items if i.get("kind") in kinds
                  and BENCH_STACK.match((i["metadata"].get("labels") or {}).get(RECORD_LABEL, "")))


def preflight(kubeconfig, env):
    """Refuse to touch a cluster whose namespaces or CRD of the benchmark's names are someone else's."""
    names = {f"namespace/{ns}" for ns in manifests.namespaces_for(10 ** 6)} | {f"customresourcedefinition/{manifests.CRD_NAME}"}
    proc = _kubectl(kubeconfig, env, "get", "namespaces,customresourcedefinitions", "-o", "json")
    for item in json.loads(proc.stdout)["items"]:
        ref = f"{item['kind'].lower()}/{item['metadata']['name']}"
        if ref in names and (item["metadata"].get("labels") or {}).get(manifests.PART_OF_LABEL) != manifests.PART_OF:
            raise SystemExit(f"{ref} exists on the cluster of {kubeconfig} and is not the benchmark's "
                             f"(no {manifests.PART_OF_LABEL}={manifests.PART_OF} label): not touching it")


class RealBackend:
    """``--real``: one fresh control plane per tool from ``up`` (``../shared/kube/up``)."""

    name = "real"
    sequential = False  # each tool has its own cluster: lanes interleave as with the simulator

    def __init__(self, up):
        self.up = Path(up)
        if not (self.up.is_file() and (self.up.parent / "down").is_file()):
            raise SystemExit(f"--real needs {self.up} and its `down` next to it (see ../shared/kube/README.md); "
                             "use --kube-up PATH or --kubeconfig PATH")
        self.server_version = None

    def cluster(self, base, env):
        return FreshCluster(self.up, base, env)

    def describe(self):
        return dict(backend=self.name, kube_up=str(self.up), server_version=self.server_version, not_counted=UNCOUNTED)


class KubeconfigBackend:
    """``--kubeconfig PATH``: one existing cluster, tools one after another, cleaned up in between."""

    name = "kubeconfig"
    sequential = True

    def __init__(self, kubeconfig):
        self.kubeconfig = Path(kubeconfig).resolve()
        if not self.kubeconfig.is_file():
            raise SystemExit(f"--kubeconfig {kubeconfig}: no such file")
        self.server_version = None

    def cluster(self, base, env):
        return ExistingCluster(self.kubeconfig, env, base / "cleanup.log")

    def describe(self):
        return dict(backend=self.name, kubeconfig=str(self.kubeconfig), server_version=self.server_version,
                    not_counted=UNCOUNTED)
