"""``python -m tests.bench.limit``: the physical limit of a scenario, as the benchmark's ``limit`` tool.

The limit of a sync on this machine (issue 32): Ansible's start-up (``ansible-playbook`` of an empty
play, timed as a whole) plus the scenario's writes sent as bare server-side apply PATCHes -- the
bodies the engine sends, 16 in flight, prerequisites (namespaces, the CRD until Established) first,
as in :mod:`.throughput` -- and the DELETEs of the objects the scenario removed. Nothing else: no
rendering, discovery, lists, record or Lease. A no-op's limit is the start-up alone.

Writes ``--out`` (JSON: ``startup_s``, ``writes_s``, ``seconds`` = their sum, what was written); the
benchmark reports ``seconds`` as the tool's wall time, the CPU of the whole command beside it.
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from . import throughput
from .tools import PLAYBOOKS

INFLIGHT = 16


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tests.bench.limit", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True, type=Path)
    parser.add_argument("--writes", required=True, type=Path, help='JSON {"apply": [manifest], "delete": [manifest]}')
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--ansible-playbook", required=True, help="the ansible-playbook whose start-up is timed")
    parser.add_argument("--inflight", type=int, default=INFLIGHT)
    return parser.parse_args(argv)


def split(objs):
    """``(prerequisites, the rest)`` of stamped manifests, as the engine's stages split them."""
    return ([o for o in objs if o["kind"] in throughput.PREREQUISITES],
            [o for o in objs if o["kind"] not in throughput.PREREQUISITES])


def startup(playbook):
    """``(wall seconds, CPU seconds)`` of ``ansible-playbook`` running the empty play."""
    cpu = _children_cpu()
    start = time.monotonic()
    subprocess.run([playbook, str(PLAYBOOKS / "empty.yml")], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start, _children_cpu() - cpu


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Deleter(throughput.Raw):
    """DELETE on the client's transport only (background propagation, as the engine's prune)."""

    def prepare(self, objs):
        return [throughput.object_path(o) for o in objs]

    def send(self, target):
        status, _headers, data = self.client.exchange("DELETE", target, b'{"propagationPolicy":"Background"}',
                                                      self.headers)
        if status >= 300 and status != 404:
            raise RuntimeError(f"DELETE {target}: {status} {data[:300]!r}")
        return status


def write(kubeconfig, apply, delete, inflight):
    """Seconds to send ``apply`` (manifests) and ``delete`` (manifests), ``inflight`` at a time."""
    from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client

    client, _namespace = build_client({"kubeconfig": str(kubeconfig)}, maxsize=inflight)
    try:
        first, rest = split([throughput.stamped(o) for o in apply])
        sender = throughput.Raw(client, inflight)
        pre, bulk = sender.prepare(first), sender.prepare(rest)  # encoded before the clock: the least a client does
        start = time.monotonic()
        throughput.send_all(sender, pre)
        if any(o["kind"] == "CustomResourceDefinition" for o in first):
            throughput.wait_established(client)
        throughput.send_all(sender, bulk)
        if delete:
            deleter = Deleter(client, inflight)
            throughput.send_all(deleter, deleter.prepare(delete))
        return time.monotonic() - start
    finally:
        client.close()


def main(argv=None):
    args = parse_args(argv)
    from tests.bench.__main__ import collections_root

    root = str(collections_root())
    if root not in sys.path:
        sys.path.insert(0, root)
    todo = json.loads(args.writes.read_text())
    started, started_cpu = startup(args.ansible_playbook)
    written = write(args.kubeconfig, todo["apply"], todo["delete"], args.inflight) if todo["apply"] or todo["delete"] else 0.0
    out = dict(startup_s=round(started, 3), startup_cpu_s=round(started_cpu, 3), writes_s=round(written, 3),
               seconds=round(started + written, 3),
               applied=len(todo["apply"]), deleted=len(todo["delete"]), inflight=args.inflight)
    args.out.write_text(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
