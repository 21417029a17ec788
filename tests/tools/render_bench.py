"""Measure rendering speed: 2,000 manifests across 200 files (issue: under 2 s on a 2-core machine).

    .venv/bin/python -m tests.tools.render_bench [--files 200] [--docs-per-file 10] [--repeat 3]

Speed is measured here (``make bench`` runs it), not asserted by a timed test.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from tests.conftest import COLLECTIONS_ROOT  # noqa: F401 - puts the collection on sys.path

DEPLOYMENT = """\
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{f}-{d}
  namespace: team-{ns}
  labels:
    app.kubernetes.io/name: app-{f}-{d}
    app.kubernetes.io/part-of: bench
  annotations:
    description: "generated for the render benchmark"
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: app-{f}-{d}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-{f}-{d}
    spec:
      containers:
        - name: main
          image: registry.example.com/app:{f}.{d}
          args: ["--port=8080", "--verbose"]
          ports:
            - containerPort: 8080
              protocol: TCP
          env:
            - name: MODE
              value: production
            - name: SHARD
              value: "{d}"
          resources:
            requests: {{cpu: 100m, memory: 128Mi}}
            limits: {{cpu: "1", memory: 256Mi}}
          readinessProbe:
            httpGet: {{path: /healthz, port: 8080}}
            periodSeconds: 10
"""


def write_repo(root, files, docs_per_file):
    """Write ``files`` YAML files of ``docs_per_file`` Deployments each under ``root``."""
    root = Path(root)
    for f in range(files):
        directory = root / f"team-{f % 20:02d}" / f"svc-{f:03d}"
        directory.mkdir(parents=True)
        text = "".join(DEPLOYMENT.format(f=f, d=d, ns=f % 20) for d in range(docs_per_file))
        (directory / "deployments.yaml").write_text(text)
    return root


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--docs-per-file", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import render

    with tempfile.TemporaryDirectory(prefix="stacksync-render-bench-") as tmp:
        repo = write_repo(tmp, args.files, args.docs_per_file)
        count = len(render(str(repo)))  # also warms the page cache
        walls, cpus = [], []
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            render(str(repo))
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    print(
        f"render: {count} manifests in {args.files} files: best of {args.repeat}: wall {min(walls):.3f} s, "
        f"CPU {min(cpus):.3f} s (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    main()
