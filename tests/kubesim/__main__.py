"""``python -m tests.kubesim --port PORT --kubeconfig PATH``: serve in the foreground until killed."""

import argparse
import signal
import sys
import threading

from .simulator import Simulator


def main(argv=None):
    """Parse options, start a simulator, write the kubeconfig, block until SIGINT/SIGTERM."""
    p = argparse.ArgumentParser(prog="python -m tests.kubesim", description="Kubernetes API simulator")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 picks a free one)")
    p.add_argument("--kubeconfig", required=True, help="where to write the admin kubeconfig once listening")
    p.add_argument("--tls", action="store_true", help="serve HTTPS with a generated CA (the kubeconfig embeds it)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="latency added to every resource request")
    p.add_argument("--crd-establish-delay", type=float, default=0.1, help="seconds until a new CRD is Established")
    p.add_argument("--pods-not-ready", action="store_true", help="leave controller-created Pods Pending (like a cluster without nodes)")
    p.add_argument("--token", help="admin bearer token (random by default)")
    p.add_argument("--limited-kubeconfig", help="also write a kubeconfig for the RBAC-limited user 'limited'")
    p.add_argument("--seed", type=int, default=0, help="seed for fault injection")
    args = p.parse_args(argv)
    sim = Simulator(port=args.port, tls=args.tls, kubeconfig_path=args.kubeconfig, latency_ms=args.latency_ms,
                    crd_establish_delay=args.crd_establish_delay, pods_ready=not args.pods_not_ready, token=args.token, seed=args.seed)
    sim.start()
    if args.limited_kubeconfig:
        sim.write_kubeconfig(args.limited_kubeconfig, "limited", sim.limited_token)
    print(f"kubesim listening on {sim.url} (kubeconfig {sim.kubeconfig_path})", flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
