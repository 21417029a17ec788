"""``python -m tests.bench.throughput``: the server's write throughput measured alone (issue 18's physical limit).

A first sync cannot be faster than the server writes its objects. This sends the benchmark's
objects as server-side apply PATCHes -- the bodies the engine sends (the manifest with the stack
label and the checksum and owner annotations of the same length), to the same paths, with N
requests in flight -- and nothing else: no discovery, no lists, no record, no Lease. Each level
gets a fresh cluster (a simulator, or with ``--real`` a fresh kube-apiserver + controller-manager),
so every PATCH creates an object, as in a first sync. The prerequisites (namespaces, the CRD, until
it is Established) are sent first and timed apart; the rate is that of the remaining objects.

Clients (``--clients``):

* ``raw``: the client's transport alone (``KubeClient.exchange``: urllib3's connections, the collection's
  HTTP/1.1, module_utils/k8s/wire.py) with the bodies encoded beforehand, N connections, N threads: the
  least a Python client can do per request;
* ``kubeclient``: the collection's :class:`KubeClient` (``client.apply``: JSON encoding, auth
  headers, accounting, retries) from the same threads;
* ``engine``: ``StackManager.sync`` of the same manifests (a whole first sync, in this process,
  with ``concurrency`` N), as in the profile of ``python -m tests.bench``.

The lower bound of the engine's apply step is then ``objects / raw rate``; the difference between
the clients is per-request CPU of ours. Prints a Markdown table and writes JSON.
"""

import argparse
import copy
import hashlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import cluster, manifests

STACK = "bench-throughput"
FIELD_MANAGER = "stacksync"
CLIENTS = ("raw", "kubeclient", "engine")
PREREQUISITES = ("Namespace", "CustomResourceDefinition")
CLUSTER_SCOPED = ("Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding")


def object_path(obj):
    """The API path of a benchmark object (every benchmark kind's plural is its lower-case name + ``s``)."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    base = "/api/" + api_version if "/" not in api_version else "/apis/" + api_version
    meta = obj["metadata"]
    plural = kind.lower() + "s"
    if kind in CLUSTER_SCOPED:
        return f"{base}/{plural}/{meta['name']}"
    return f"{base}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"


def stamped(obj):
    """``obj`` with stacksync's stamps, as the engine sends it (same keys, values of the same length)."""
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    digest = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
    meta.setdefault("labels", {})["stacksync.io/stack"] = STACK
    meta.setdefault("annotations", {}).update({"stacksync.io/checksum": "sha256:" + digest,
                                               "stacksync.io/owner": digest[:16]})
    return obj


def workload(n):
    """``(prerequisites, objects)``: the benchmark's N manifests, stamped, split as the engine's stages are."""
    objs = [e.manifest() for e in manifests.generate(n)]
    first = [stamped(o) for o in objs if o["kind"] in PREREQUISITES]
    rest = [stamped(o) for o in objs if o["kind"] not in PREREQUISITES]
    return first, rest


class Raw:
    """PATCH on the client's transport only (``KubeClient.exchange``: one attempt, no encoding, no accounting):
    bodies encoded beforehand, the kubeconfig's TLS and headers."""

    def __init__(self, client, inflight):
        self.client = client  # for its transport and headers only
        self.inflight = inflight
        self.headers = client.header_pairs("application/json", "application/apply-patch+yaml")
        self.query = f"?fieldManager={FIELD_MANAGER}&force=true"

    def prepare(self, objs):
        return [(object_path(o) + self.query, json.dumps(o, separators=(",", ":")).encode()) for o in objs]

    def send(self, request):
        target, body = request
        status, _headers, data = self.client.exchange("PATCH", target, body, self.headers)
        if status >= 300:
            raise RuntimeError(f"PATCH {target}: {status} {data[:300]!r}")
        return status


class ViaKubeClient:
    """PATCH through the collection's client (``KubeClient.apply``): what the engine's requests cost on our side."""

    def __init__(self, client, inflight):
        self.client = client
        self.inflight = inflight

    def prepare(self, objs):
        return [(object_path(o), o) for o in objs]

    def send(self, request):
        path, obj = request
        status, _obj = self.client.apply(path, obj, FIELD_MANAGER, force=True, with_status=True)
        return status


def send_all(sender, requests):
    """Send ``requests`` with ``sender.inflight`` in flight; ``(seconds, {status: n})``."""
    statuses = {}
    lock = threading.Lock()

    def one(request):
        status = sender.send(request)
        with lock:
            statuses[status] = statuses.get(status, 0) + 1

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=sender.inflight) as pool:
        list(pool.map(one, requests))
    return time.monotonic() - start, statuses


def wait_established(client, timeout=60.0):
    deadline = time.monotonic() + timeout
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + manifests.CRD_NAME
    while time.monotonic() < deadline:
        crd = client.get(path)
        if any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or []):
            # and served: the custom resources' collection answers
            try:
                client.get(f"/apis/{manifests.CRD_GROUP}/v1/widgets", {"limit": "1"})
                return time.monotonic()
            except Exception:  # not served yet
                pass
        time.sleep(0.05)
    raise RuntimeError(f"the Widget CRD was not Established in {timeout}s")


def run_level(kind, kubeconfig, inflight, first, rest):
    """One measurement on a fresh cluster: ``kind`` of client, ``inflight`` requests in flight."""
    from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client

    client, _namespace = build_client({"kubeconfig": str(kubeconfig)}, maxsize=inflight)
    out = dict(client=kind, inflight=inflight, objects=len(first) + len(rest))
    try:
        if kind == "engine":
            from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackManager

            resources = copy.deepcopy([unstamped(o) for o in first + rest])
            manager = StackManager(client, STACK, concurrency=inflight)
            start = time.monotonic()
            changes = manager.sync(resources)
            out.update(seconds=round(time.monotonic() - start, 3), requests=dict(client.counts),
                       counts=changes.counts)
            return out
        sender = (Raw if kind == "raw" else ViaKubeClient)(client, inflight)
        pre, bulk = sender.prepare(first), sender.prepare(rest)
        start = time.monotonic()
        send_all(sender, pre)
        ready = wait_established(client)
        seconds, statuses = send_all(sender, bulk)
        out.update(prerequisites_s=round(ready - start, 3), bulk_objects=len(bulk), bulk_s=round(seconds, 3),
                   bulk_per_s=round(len(bulk) / seconds, 1), seconds=round(time.monotonic() - start, 3),
                   statuses=statuses)
        return out
    finally:
        client.close()


def unstamped(obj):
    """The manifest as in git (the engine stamps it itself)."""
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    meta["labels"].pop("stacksync.io/stack", None)
    for key in ("stacksync.io/checksum", "stacksync.io/owner"):
        meta["annotations"].pop(key, None)
    if not meta["annotations"]:
        del meta["annotations"]
    return obj


def cpu_seconds():
    t = os.times()
    return t.user + t.system


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tests.bench.throughput", description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--inflight", default="1,4,8,16,32,64", help="comma-separated levels of requests in flight")
    parser.add_argument("--clients", default="raw,kubeclient,engine", help="comma-separated, of: " + ", ".join(CLIENTS))
    parser.add_argument("--latency-ms", type=float, default=5.0, help="the simulator's per-request latency")
    parser.add_argument("--real", action="store_true", help="a fresh kube-apiserver + controller-manager per level")
    parser.add_argument("--kube-up", type=Path, default=cluster.DEFAULT_KUBE_UP)
    parser.add_argument("--repeat", type=int, default=1, help="rounds over every level and client (medians are reported)")
    parser.add_argument("--settle", type=float, default=None,
                        help="seconds to wait after a cluster is up before measuring (default 10 with --real, else 0): "
                        "a fresh control plane's own start-up work would otherwise be measured with the first requests")
    parser.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "throughput.json")
    args = parser.parse_args(argv)
    args.inflight = [int(x) for x in args.inflight.split(",") if x]
    args.clients = [c for c in args.clients.split(",") if c]
    unknown = [c for c in args.clients if c not in CLIENTS]
    if unknown:
        parser.error("unknown client: " + ", ".join(unknown))
    args.backend = cluster.RealBackend(args.kube_up) if args.real else cluster.SimulatorBackend(args.latency_ms)
    if args.settle is None:
        args.settle = 10.0 if args.real else 0.0
    return args


def markdown(rows):
    lines = ["| client | in flight | objects | prerequisites s | bulk objects | bulk s | objects/s | whole s | rounds: whole s "
             "| CPU s (this process) | load |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['client']} | {r['inflight']} | {r['objects']} | {r.get('prerequisites_s', '')} | "
                     f"{r.get('bulk_objects', '')} | {r.get('bulk_s', '')} | {r.get('bulk_per_s', '')} | "
                     f"{r['seconds']:.2f} | {r.get('range_s', '')} | {r['cpu_s']:.2f} | {r['load']:.1f} |")
    return "\n".join(lines)


def medians(rows):
    """One row per (client, in flight): the median of each timing over the rounds, and the rounds' range."""
    groups = {}
    for r in rows:
        groups.setdefault((r["client"], r["inflight"]), []).append(r)
    out = []
    for group in groups.values():
        row = dict(group[0])
        for key in ("prerequisites_s", "bulk_s", "bulk_per_s", "seconds", "cpu_s", "load"):
            if key in row:
                row[key] = round(statistics.median(r[key] for r in group), 3)
        row["range_s"] = f"{min(r['seconds'] for r in group):.2f}-{max(r['seconds'] for r in group):.2f}"
        row["rounds"] = len(group)
        out.append(row)
    return out


def main(argv=None):
    args = parse_args(argv)
    from tests.bench.__main__ import collections_root

    root = str(collections_root())
    if root not in sys.path:
        sys.path.insert(0, root)
    first, rest = workload(args.objects)
    env = dict(os.environ)
    rows = []
    with tempfile.TemporaryDirectory(prefix="stacksync-throughput-") as tmp:
        for round_ in range(args.repeat):
            for inflight in args.inflight:
                for kind in args.clients:
                    base = Path(tmp) / f"{kind}-{inflight}-{round_}"
                    base.mkdir()
                    with args.backend.cluster(base, env) as c:
                        time.sleep(args.settle)
                        load = os.getloadavg()[0]
                        cpu = cpu_seconds()
                        row = run_level(kind, c.kubeconfig, inflight, first, rest)
                        row.update(cpu_s=round(cpu_seconds() - cpu, 2), load=round(load, 1), round=round_)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    summary = medians(rows)
    results = dict(backend=args.backend.describe(), objects=args.objects, settle_s=args.settle, rows=rows, medians=summary)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print(markdown(summary))
    print(f"\nJSON: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
