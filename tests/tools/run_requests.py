"""The API requests of one sync through the playbook, counted from the simulator's request log (issue 31's figure).

    .venv/bin/python -m tests.tools.run_requests [--objects 4 | --kinds] [--derived-name] [-v]

``ansible-playbook stacksync.k8s.sync`` (role stacksync.k8s.sync: the sources action, an in-process stack run)
syncs a local git repository of a Namespace and ``--objects - 1`` ConfigMaps (``--kinds``: a Namespace, a ConfigMap,
a ServiceAccount and a Service) into a fresh in-process simulator, then again with nothing changed (the no-op).
For each run: the requests, the writes, and the *repeated reads*: GETs whose method, path and query the same run
sent before (read again, e.g. the second observation under the Lease).
``-v`` lists every request.
"""

import argparse
import collections
import json
import subprocess
import tempfile
from pathlib import Path

from tests.conftest import COLLECTIONS_ROOT  # noqa: F401 - the collection for ansible-playbook
from tests.integration.test_sync_helpers import ANSIBLE_PLAYBOOK, GitRepo, clean_env, configmap, namespace

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def sync(inventory, variables):
    vars_file = Path(inventory).with_name("vars.json")
    vars_file.write_text(json.dumps(variables))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "stacksync.k8s.sync", "-i", str(inventory), "-e", "@" + str(vars_file)],
                          capture_output=True, text=True, env=clean_env(), timeout=600, check=False)
    if proc.returncode != 0:
        raise SystemExit("the sync failed:\n" + proc.stdout[-4000:] + proc.stderr[-2000:])


def figures(log):
    """``(requests, writes, repeated reads, [(method, path, query, repeated)])`` of one run's request log."""
    seen, repeated, rows = collections.Counter(), 0, []
    for r in log:
        key = (r["method"], r["path"], json.dumps(r["query"], sort_keys=True))
        again = r["method"] == "GET" and seen[key] > 0
        repeated += again
        seen[key] += 1
        rows.append((r["method"], r["path"], r["query"], again))
    return len(log), sum(1 for r in log if r["method"] in WRITES), repeated, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=4)
    parser.add_argument("--derived-name", action="store_true",
                        help="no stacksync_stack: the stack is named after the repository and path, and the sources "
                             "action first reads the record of its name before 0.2.0 (plugin_utils/rename.py)")
    parser.add_argument("--kinds", action="store_true", help="a Namespace, a ConfigMap, a ServiceAccount and a Service "
                                                               "(one kind each; --objects is ignored)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    from tests.kubesim import Simulator

    with tempfile.TemporaryDirectory() as tmp, Simulator(tls=True) as sim:
        tmp = Path(tmp)
        repo = GitRepo(tmp / "repo")
        repo.write("apps/namespace.yaml", namespace("figures"))
        if args.kinds:
            args.objects = 4
            repo.write("apps/cm.yaml", configmap("cm", "figures", {"k": "v"}))
            repo.write("apps/sa.yaml", {"apiVersion": "v1", "kind": "ServiceAccount",
                                        "metadata": {"name": "robot", "namespace": "figures"}})
            repo.write("apps/svc.yaml", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "figures"},
                                         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
        for i in range(0 if args.kinds else args.objects - 1):
            repo.write(f"apps/cm-{i}.yaml", configmap(f"cm-{i}", "figures", {"k": str(i)}))
        repo.commit("the stack")
        inventory = tmp / "inventory.yml"
        inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                             "      ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
        variables = {"stacksync_repo": repo.url, "stacksync_path": "apps", "stacksync_stack": "figures",
                     "stacksync_kubeconfig": sim.kubeconfig_path, "stacksync_cache_dir": str(tmp / "cache"),
                     "stacksync_discovery_cache_dir": str(tmp / "discovery")}
        if args.derived_name:
            del variables["stacksync_stack"]
        for label in ("first sync", "no-op"):
            sim.reset_counters()
            sync(inventory, variables)
            total, writes, repeated, rows = figures(list(sim.requests))
            print(f"{label} of {args.objects} objects through the playbook: {total} requests, {writes} writes, "
                  f"{repeated} of them reads repeated")
            if args.verbose:
                for method, path, query, again in rows:
                    text = "?" + "&".join(f"{k}={v}" for k, v in sorted(query.items())) if query else ""
                    print(f"    {method:<6} {path}{text}{'   (again)' if again else ''}")


if __name__ == "__main__":
    main()
