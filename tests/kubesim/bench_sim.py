"""Simulator throughput: server CPU and requests/s for concurrent SSA writes, label-selected LISTs and GETs.

    .venv/bin/python -m tests.kubesim.bench_sim [--n 1000] [--threads 16] [--latency-ms 5] [--profile DIR] [--repo PATH]

Starts the simulator in a subprocess (TLS, ``latency_ms`` like ``make bench``), then from this process
applies ``n`` varied objects (ConfigMaps, Secrets, Services, Deployments, Roles and a custom resource in
10 namespaces; ``application/apply-patch+yaml`` with ``fieldManager`` and ``force=true``) over urllib3
keep-alive connections from ``threads`` threads, re-applies them changed, re-applies them unchanged,
then runs label-selected LISTs and GETs. Prints, per phase, requests/s and the server process's CPU
seconds (``/proc/<pid>/stat``) per request.

``--profile DIR`` runs cProfile on every server thread and writes one ``<phase>.prof`` per phase
(and prints the top functions); ``--repo PATH`` serves the simulator code of another checkout (for
before/after comparisons, e.g. a ``git worktree``).
"""

import argparse
import concurrent.futures
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APPLY = "application/apply-patch+yaml"
KINDS = ("configmaps", "secrets", "services", "deployments", "roles", "widgets")
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.bench.example.com"},
    "spec": {"group": "bench.example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "size": {"type": "integer"}, "color": {"type": "string"},
                     "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                               "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                     "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}}}]},
}


# ---------------------------------------------------------------------------------------------- server
def serve(args):
    """Server side (subprocess): the simulator of ``--repo``, optionally profiled per phase; stdin commands."""
    from tests.kubesim.simulator import Simulator

    sim = Simulator(tls=True, kubeconfig_path=args.kubeconfig, latency_ms=args.latency_ms, max_log=1000000)
    profilers = []  # (phase, profiler)
    state = {"phase": "setup"}
    lock = threading.Lock()
    if args.profile:
        import cProfile

        local = threading.local()

        def profiled(inner):
            def run(*a):
                phase = state["phase"]
                prof = getattr(local, "profs", {}).get(phase)
                if prof is None:
                    prof = cProfile.Profile()
                    local.__dict__.setdefault("profs", {})[phase] = prof
                    with lock:
                        profilers.append((phase, prof))
                prof.enable()
                try:
                    return inner(*a)
                finally:
                    prof.disable()
            return run
        if args.profile_http:
            # the whole HTTP exchange (including the wait for the next request on a keep-alive connection)
            from tests.kubesim.server import Handler

            Handler.handle_one_request = profiled(Handler.handle_one_request)
        else:
            sim.handle = profiled(sim.handle)
    sim.start()
    print("ready", sim.url, flush=True)
    try:
        for line in sys.stdin:
            cmd, _, arg = line.strip().partition(" ")
            if cmd == "phase":
                state["phase"] = arg
                print("ok", flush=True)
            elif cmd == "count":
                with sim._log_lock:
                    print(len(sim.requests), flush=True)
            elif cmd == "quit":
                break
    finally:
        sim.stop()
        if args.profile:
            import pstats

            os.makedirs(args.profile, exist_ok=True)
            by_phase = {}
            for phase, prof in profilers:
                by_phase.setdefault(phase, []).append(prof)
            for phase, profs in by_phase.items():
                stats = pstats.Stats(profs[0])
                for p in profs[1:]:
                    stats.add(p)
                stats.dump_stats(os.path.join(args.profile, f"{phase}.prof"))


class Server:
    """The simulator subprocess and its CPU clock."""

    def __init__(self, repo, latency_ms, profile, profile_http=False):
        self.dir = tempfile.mkdtemp(prefix="bench-sim-")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        opts = ["--serve", "--repo", repo, "--kubeconfig", self.kubeconfig, "--latency-ms", str(latency_ms)]
        if profile:
            opts += ["--profile", profile] + (["--profile-http"] if profile_http else [])
        # this file loaded by path (``repo`` may be a checkout without it), ``repo`` first on sys.path
        code = ("import importlib.util, sys; sys.path.insert(0, sys.argv[1]); "
                "spec = importlib.util.spec_from_file_location('bench_sim_server', sys.argv[2]); "
                "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); sys.exit(mod.main(sys.argv[3:]))")
        argv = [sys.executable, "-c", code, repo, os.path.abspath(__file__), *opts]
        self.proc = subprocess.Popen(argv, cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("ready "):
            raise RuntimeError("the simulator did not start")
        self.url = line.split()[1]
        self.hz = os.sysconf("SC_CLK_TCK")

    def ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def cpu(self):
        """(user, system) CPU seconds of the server process so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) / self.hz, int(fields[12]) / self.hz

    def close(self):
        with contextlib.suppress(BrokenPipeError, OSError):
            self.ask("quit")
        self.proc.wait(timeout=120)


# ---------------------------------------------------------------------------------------------- client
def _client(server, threads):
    import urllib3
    import yaml

    with open(server.kubeconfig) as f:
        cfg = yaml.safe_load(f)
    token = cfg["users"][0]["user"]["token"]
    import base64

    ca = os.path.join(server.dir, "ca.crt")
    with open(ca, "wb") as f:
        f.write(base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"]))
    pool = urllib3.PoolManager(maxsize=threads, block=True, cert_reqs="CERT_REQUIRED", ca_certs=ca, retries=False,
                               timeout=urllib3.Timeout(total=60))
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": "bench-sim/1.0"}

    def request(method, path, body=None, content_type="application/json"):
        hdrs = dict(headers)
        data = None
        if body is not None:
            hdrs["Content-Type"] = content_type
            data = json.dumps(body)
        resp = pool.request(method, server.url + path, body=data, headers=hdrs)
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: {resp.status} {resp.data[:300]!r}")
        return json.loads(resp.data)
    return request


def _path(kind, ns, name=None):
    base = {"configmaps": "/api/v1", "secrets": "/api/v1", "services": "/api/v1", "deployments": "/apis/apps/v1",
            "roles": "/apis/rbac.authorization.k8s.io/v1", "widgets": "/apis/bench.example.com/v1"}[kind]
    return f"{base}/namespaces/{ns}/{kind}" + (f"/{name}" if name else "")


def manifest(i, rev=0):
    """The i-th object (revision ``rev``): kind, namespace, body."""
    kind = KINDS[i % len(KINDS)]
    ns = f"bench-{i % 10}"
    name = f"{kind[:-1]}-{i:04d}"
    labels = {"app": f"app-{i % 7}", "tier": ("web", "db", "cache")[i % 3], "bench": "yes", "rev": str(rev)}
    meta = {"name": name, "namespace": ns, "labels": labels, "annotations": {"bench/owner": "team-a", "bench/index": str(i)}}
    if kind == "configmaps":
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                "data": {f"key{k}": f"value-{i}-{k}-{rev}" * 4 for k in range(8)}}
    elif kind == "secrets":
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
                "stringData": {"user": f"user{i}", "password": f"pw-{i}-{rev}"}, "data": {"token": "dG9rZW4="}}
    elif kind == "services":
        body = {"apiVersion": "v1", "kind": "Service", "metadata": meta,
                "spec": {"selector": {"app": labels["app"]}, "ports": [{"name": "http", "port": 80, "targetPort": 8080 + rev},
                                                                       {"name": "metrics", "port": 9090, "protocol": "TCP"}]}}
    elif kind == "deployments":
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name, "tier": labels["tier"]}},
                                      "spec": {"containers": [{"name": "web", "image": f"nginx:1.{25 + rev}",
                                                               "ports": [{"containerPort": 80}],
                                                               "env": [{"name": "A", "value": str(i)}, {"name": "B", "value": "b"}],
                                                               "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]}}}}
    elif kind == "roles":
        body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta,
                "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list", "watch"]},
                          {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"] + (["patch"] if rev else [])}]}
    else:
        body = {"apiVersion": "bench.example.com/v1", "kind": "Widget", "metadata": meta,
                "spec": {"size": i + rev, "color": "blue", "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}],
                         "extra": {"nested": {"x": i, "y": [1, 2, 3]}}}}
    return kind, ns, name, body


def _phase(server, pool, name, calls, results):
    server.ask(f"phase {name}")
    (user0, sys0), t0, client0 = server.cpu(), time.monotonic(), time.process_time()
    list(pool.map(lambda c: c(), calls))
    wall, (user1, sys1), client = time.monotonic() - t0, server.cpu(), time.process_time() - client0
    user, system = user1 - user0, sys1 - sys0
    cpu, n = user + system, len(calls)
    results[name] = {"requests": n, "wall_s": round(wall, 3), "req_per_s": round(n / wall, 1), "server_cpu_s": round(cpu, 3),
                     "server_user_s": round(user, 3), "server_sys_s": round(system, 3), "server_cpu_ms_per_req": round(cpu * 1000 / n, 3),
                     "client_cpu_ms_per_req": round(client * 1000 / n, 3)}
    print(f"{name:>14}: {n:5d} requests {wall:7.2f} s {n / wall:8.1f} req/s   server CPU {cpu:6.2f} s (user {user:5.2f} + sys "
          f"{system:5.2f}) = {cpu * 1000 / n:6.2f} ms/request   (client {client * 1000 / n:5.2f} ms/request)", flush=True)


def run(args):
    """Client side: the phases against a fresh simulator subprocess."""
    if args.profile:
        args.profile = os.path.abspath(args.profile)
    server = Server(args.repo, args.latency_ms, args.profile, args.profile_http)
    results = {}
    try:
        request = _client(server, args.threads)
        pool = concurrent.futures.ThreadPoolExecutor(args.threads)

        def apply(kind, ns, name, body):
            return lambda: request("PATCH", _path(kind, ns, name) + "?fieldManager=bench&force=true", body, APPLY)

        # setup: namespaces and the CRD (not measured per object)
        request("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.bench.example.com?fieldManager=bench&force=true",
                CRD, APPLY)
        for k in range(10):
            request("PATCH", f"/api/v1/namespaces/bench-{k}?fieldManager=bench&force=true",
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"bench-{k}"}}, APPLY)
        deadline = time.monotonic() + 30
        while True:
            try:
                request("GET", "/apis/bench.example.com/v1/namespaces/bench-0/widgets")
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        objs = [manifest(i) for i in range(args.n)]
        _phase(server, pool, "apply-create", [apply(*o) for o in objs], results)
        _phase(server, pool, "apply-update", [apply(*manifest(i, 1)) for i in range(args.n)], results)
        _phase(server, pool, "apply-noop", [apply(*manifest(i, 1)) for i in range(args.n)], results)
        lists = []
        for j in range(args.lists):
            kind, ns = KINDS[j % len(KINDS)], f"bench-{j % 10}"
            sel = f"app=app-{j % 7},tier in (web,db)" if j % 2 else f"bench=yes,app=app-{j % 7}"
            lists.append(lambda kind=kind, ns=ns, sel=sel: request("GET", _path(kind, ns) + "?labelSelector=" + sel.replace(" ", "%20")))
        _phase(server, pool, "list-selected", lists, results)
        gets = [lambda o=o: request("GET", _path(o[0], o[1], o[2])) for o in (objs * (args.gets // len(objs) + 1))[:args.gets]]
        _phase(server, pool, "get", gets, results)
        pool.shutdown()
    finally:
        server.close()
    if args.profile:
        import pstats

        for phase in results:
            path = os.path.join(args.profile, f"{phase}.prof")
            if os.path.exists(path):
                print(f"\n===== {phase}: top by own time ({path})")
                pstats.Stats(path).sort_stats("tottime").print_stats(args.top)
                print(f"===== {phase}: top by cumulative time")
                pstats.Stats(path).sort_stats("cumulative").print_stats(args.top)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.kubesim.bench_sim", description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000, help="objects to apply")
    p.add_argument("--threads", type=int, default=16, help="requests in flight")
    p.add_argument("--latency-ms", type=float, default=5.0, help="simulator latency per request")
    p.add_argument("--lists", type=int, default=300, help="label-selected LIST requests")
    p.add_argument("--gets", type=int, default=1000, help="GET requests")
    p.add_argument("--repo", default=REPO, help="checkout whose tests/kubesim is served")
    p.add_argument("--profile", help="directory for per-phase server profiles (cProfile on every server thread)")
    p.add_argument("--profile-http", action="store_true", help="profile whole HTTP exchanges (request parsing, TLS) rather than the "
                   "simulator's request handling")
    p.add_argument("--top", type=int, default=25, help="functions shown per profile")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        return serve(args)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
