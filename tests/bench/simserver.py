"""The simulator in its own process, with its request counters readable over a pipe.

``python -m tests.bench.simserver --kubeconfig PATH --latency-ms N`` starts a
``tests.kubesim.Simulator`` (the same class ``python -m tests.kubesim`` serves), prints
``ready <url>`` and then answers one line per command on stdin: ``reset`` (clear the request log),
``counts`` (JSON: requests by verb and by verb + resource) and ``quit``. :class:`SimProcess` is the parent's side.
"""

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"


def _verb(entry):
    """The request's verb; server-side apply (PATCH with the apply content type) counts as ``apply``."""
    verb = entry.get("verb") or "discovery"
    if verb == "patch" and (entry.get("content_type") or "").startswith(APPLY_CONTENT_TYPE):
        return "apply"
    return verb


def request_counts(entries):
    """``{"verbs": {verb: n}, "resources": {"verb resource": n}}`` of logged requests."""
    verbs = collections.Counter()
    resources = collections.Counter()
    for entry in entries:
        verb = _verb(entry)
        verbs[verb] += 1
        resources[f"{verb} {entry.get('resource') or entry.get('path')}"] += 1
    return {"verbs": dict(sorted(verbs.items())), "resources": dict(sorted(resources.items()))}


def serve(args):
    from tests.kubesim.simulator import Simulator

    # TLS: kubectl (client-go) does not send a bearer token over plain HTTP
    sim = Simulator(tls=True, kubeconfig_path=args.kubeconfig, latency_ms=args.latency_ms, max_log=1000000).start()
    print("ready", sim.url, flush=True)
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "reset":
                sim.reset_counters()
                print("ok", flush=True)
            elif command == "counts":
                with sim._log_lock:
                    entries = list(sim.requests)
                print(json.dumps(request_counts(entries)), flush=True)
            elif command == "quit":
                break
    finally:
        sim.stop()


class SimProcess:
    """A simulator subprocess (``with SimProcess(...) as sim``): ``reset()``, ``counts()``."""

    def __init__(self, kubeconfig, latency_ms, log):
        self.kubeconfig = Path(kubeconfig)
        self.latency_ms = latency_ms
        self.log = log
        self.proc = None

    def __enter__(self):
        argv = [sys.executable, "-m", "tests.bench.simserver", "--kubeconfig", str(self.kubeconfig),
                "--latency-ms", str(self.latency_ms)]
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        if not self.proc.stdout.readline().startswith("ready "):
            self.__exit__()
            raise RuntimeError(f"the simulator did not start; see {self.log}")
        return self

    def _ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def reset(self):
        self._ask("reset")

    def counts(self):
        return json.loads(self._ask("counts"))

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            try:
                self._ask("quit")
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    serve(parser.parse_args(argv))


if __name__ == "__main__":
    main()
