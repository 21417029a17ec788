"""What the home-made YAML reader (plugins/plugin_utils/kubeyaml.py, read by the manifests lookup) buys over the
libraries it stands in for: PyYAML's ``safe_load_all`` (what kubernetes.core's ``k8s`` module reads ``src`` with) and
ansible-core's YAML loader (``AnsibleLoader``, what ``from_yaml`` and vars files use).

    .venv/bin/python -m tests.tools.yaml_twin [--docs 2000] [--repeat 5] [--no-kubectl]

* **Meaning**: each file of tests/fixtures/yaml-parity read by each reader, compared with what kubectl sends
  (``kubectl create --dry-run=client -o json``, against an in-process simulator for its REST mapping; the same
  comparison as tests/unit/plugins/plugin_utils/test_kubeyaml.py::test_lookup_reads_the_file_as_kubectl_does):
  the files where the reader gives kubectl's objects, or refuses what kubectl refuses.
* **Speed**: CPU seconds per 1,000 documents (the render benchmark's Deployments, 10 per file), the least of
  ``--repeat`` rounds, for each reader; the library readers' objects are taken as they come (no JSON round trip).

Measured, not asserted: docs/architecture.md quotes the figures.
"""

import argparse
import json
import os
import time

import yaml

# ansible-core's loader warns about duplicate keys and deprecated tags of the corpus: the figures are the point here
os.environ.setdefault("ANSIBLE_DUPLICATE_YAML_DICT_KEY", "ignore")
os.environ.setdefault("ANSIBLE_DEPRECATION_WARNINGS", "false")

from tests.conftest import COLLECTIONS_ROOT  # noqa: F401 - puts the collection on sys.path

DEPLOYMENT = """\
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: team-{ns}
  labels: {{app.kubernetes.io/name: app-{i}, app.kubernetes.io/part-of: bench}}
  annotations:
    description: "generated for the YAML reader figures"
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: app-{i}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-{i}
    spec:
      containers:
        - name: main
          image: registry.example.com/app:1.{i}
          args: ["--port=8080", "--verbose"]
          ports:
            - containerPort: 8080
              protocol: TCP
          env:
            - name: MODE
              value: production
          resources:
            requests: {{cpu: 100m, memory: 128Mi}}
            limits: {{cpu: "1", memory: 256Mi}}
"""


def _objects(documents):
    """kubectl's view of loaded documents: empty ones dropped, ``List`` items expanded."""
    out = []
    for doc in documents:
        if doc is None:
            continue
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out.extend(doc["items"])
        else:
            out.append(doc)
    return out


def library_reader(loader):
    """A reader of a file's text with ``yaml.load_all(..., Loader=loader)``, its objects as the module would send
    them (JSON; values JSON cannot hold written with ``str``, as an encoder with ``default=str`` does)."""
    def read(text):
        return json.loads(json.dumps(_objects(yaml.load_all(text, Loader=loader)), default=str))
    return read


def readers():
    """``{name: read(path) -> objects}``; each raises on a file it refuses."""
    from ansible.parsing.yaml.loader import AnsibleLoader
    from ansible_collections.stacksync.k8s.plugins.plugin_utils import render as R

    def ours(path):
        return R.render(str(path), source_annotation=False)

    def from_file(read):
        return lambda path: read(path.read_text(encoding="utf-8-sig"))

    return {"stacksync (kubeyaml)": ours,
            "PyYAML safe_load_all": from_file(library_reader(getattr(yaml, "CSafeLoader", yaml.SafeLoader))),
            "ansible-core AnsibleLoader": from_file(library_reader(AnsibleLoader))}


def parity(kubeconfig, cache_dir):
    """``{reader: (files like kubectl, files, [names that differ])}`` on the corpus."""
    from tests.unit.plugins.plugin_utils import test_kubeyaml as T

    results = dict((name, [0, 0, []]) for name in readers())
    for name in T.FILES:
        path = T.CORPUS / name
        kubectl_ok, theirs = T.kubectl_objects(path, kubeconfig, cache_dir)
        for reader, read in readers().items():
            try:
                ours, ok = read(path), True
            except Exception:
                ours, ok = None, False
            same = not kubectl_ok and not ok
            if kubectl_ok and ok and len(ours) == len(theirs):
                for mine, kubectls in zip(ours, theirs):
                    if isinstance(mine, dict) and "namespace" not in (mine.get("metadata") or {}):
                        kubectls.get("metadata", {}).pop("namespace", None)
                same = T.canonical(ours) == T.canonical(theirs)
            results[reader][1] += 1
            if same:
                results[reader][0] += 1
            else:
                results[reader][2].append(name)
    return results


def speed(docs, repeat):
    """``{reader: CPU seconds per 1,000 documents}`` (least of ``repeat``)."""
    from ansible.parsing.yaml.loader import AnsibleLoader
    from ansible_collections.stacksync.k8s.plugins.plugin_utils import render_files as RF

    texts = ["".join(DEPLOYMENT.format(i=f * 10 + d, ns=f % 7) for d in range(10)) for f in range(max(docs // 10, 1))]
    count = len(texts) * 10

    def ours(text):
        return [doc for _i, _line, doc, _plain in RF.iter_yaml_documents(text, "bench.yaml")]

    candidates = {"stacksync (kubeyaml)": ours,
                  "PyYAML safe_load_all (libyaml)": lambda t: list(yaml.load_all(t, Loader=yaml.CSafeLoader)),
                  "PyYAML safe_load_all (pure Python)": lambda t: list(yaml.load_all(t, Loader=yaml.SafeLoader)),
                  "ansible-core AnsibleLoader": lambda t: list(yaml.load_all(t, Loader=AnsibleLoader))}
    out = {}
    for name, read in candidates.items():
        best = None
        for _round in range(repeat):
            started = time.process_time()
            for text in texts:
                read(text)
            spent = time.process_time() - started
            best = spent if best is None else min(best, spent)
        out[name] = best * 1000.0 / count
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-kubectl", action="store_true", help="speed only")
    args = parser.parse_args(argv)
    if not args.no_kubectl:
        import tempfile

        from tests.kubesim import Simulator

        with Simulator(tls=True) as sim, tempfile.TemporaryDirectory() as cache:
            found = parity(sim.kubeconfig_path, cache)
        print("Reading tests/fixtures/yaml-parity as kubectl does (the same objects, or a refusal where kubectl refuses):")
        for reader, (same, total, differ) in found.items():
            where = (": differs on " + ", ".join(differ)) if differ else ""
            print(f"  {reader:<28} {same:2d} of {total} files{where}")
    print(f"CPU seconds per 1,000 documents ({args.docs} Deployments, least of {args.repeat} rounds):")
    for reader, seconds in speed(args.docs, args.repeat).items():
        print(f"  {reader:<36} {seconds:.3f} s")


if __name__ == "__main__":
    main()
