"""The real-world-shaped corpus (``tests/fixtures/realworld``) applied to a cluster, and what comes back.

Shared by ``test_normalisation.py`` and its recorder (``python -m tests.conformance.realworld --record
KUBECONFIG`` writes ``realworld_expected.json`` from a real kube-apiserver). Names are made unique per
run (namespaces, cluster-scoped names, the CRD's group) so runs never collide on a shared cluster, and
mapped back, with allocated values (uids, cluster IPs, node ports, times) masked, in snapshots.
"""

import copy
import hashlib
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import yaml

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "realworld"
EXPECTED = Path(__file__).resolve().parent / "realworld_expected.json"
MANAGER = "stacksync"
GROUP = "rw.stacksync.io"
# Exact string values renamed per run (namespaces, cluster-scoped names, the CRD's name and group).
RENAMED = ("rw-ingress", "rw-monitoring", "rw-app", "rw-ingress-nginx", "rw-nginx", "rw-ingress-nginx-admission", "rw-monitoring-admission")
# Applied last (webhooks: so they never see the corpus's own writes) and deleted first.
LAST_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
# Written by controllers after the write (not in a real server's answer to it; the simulator runs its
# controllers inline, before answering): left out of snapshots.
CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/revision",)
CONTROLLER_MANAGERS = ("kube-controller-manager", "kube-apiserver")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
PLURALS = {
    "Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps", "Secret": "secrets", "Service": "services",
    "Role": "roles", "RoleBinding": "rolebindings", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
    "Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets", "Job": "jobs", "CronJob": "cronjobs",
    "Ingress": "ingresses", "IngressClass": "ingressclasses", "NetworkPolicy": "networkpolicies", "PodDisruptionBudget": "poddisruptionbudgets",
    "HorizontalPodAutoscaler": "horizontalpodautoscalers", "CustomResourceDefinition": "customresourcedefinitions",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations", "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ScrapeConfig": "scrapeconfigs",
}


def load_corpus(root=CORPUS):
    """The corpus's manifests (documents with a ``kind``, Kustomization files excepted), in file order."""
    out = []
    for path in sorted(root.rglob("*.yaml")):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if isinstance(doc, dict) and doc.get("kind") and doc["kind"] != "Kustomization":
                    out.append(doc)
    return out


def apply_order(manifests):
    """Namespaces and CRDs first, custom resources after them, webhooks last (a stable sort)."""
    def rank(m):
        if m["kind"] in ("Namespace", "CustomResourceDefinition"):
            return 0
        if m["kind"] in LAST_KINDS:
            return 3
        return 2 if "." in m["apiVersion"].split("/")[0] and m["apiVersion"].split("/")[0].endswith("stacksync.io") else 1
    return sorted(manifests, key=rank)


def renames(suffix):
    """The map of exact string values to this run's values."""
    out = {name: f"{name}-{suffix}" for name in RENAMED}
    group = f"rw{suffix}.stacksync.io"
    out[GROUP] = group
    out[f"{GROUP}/v1alpha1"] = f"{group}/v1alpha1"
    out[f"scrapeconfigs.{GROUP}"] = f"scrapeconfigs.{group}"
    return out


def replace_strings(value, mapping):
    """``value`` with every string equal to a key of ``mapping`` replaced (values only, not keys)."""
    if isinstance(value, dict):
        return {k: replace_strings(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_strings(v, mapping) for v in value]
    if isinstance(value, str):
        return mapping.get(value, value)
    return value


def path_of(m):
    """The API path of a manifest's object."""
    group_version = m["apiVersion"]
    base = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
    ns = m["metadata"].get("namespace")
    plural = PLURALS[m["kind"]]
    if ns:
        return f"{base}/namespaces/{ns}/{plural}/{m['metadata']['name']}"
    return f"{base}/{plural}/{m['metadata']['name']}"


def key_of(m):
    """``Kind namespace/name`` of a manifest (with the corpus's own names)."""
    ns = m["metadata"].get("namespace")
    return f"{m['kind']} {ns + '/' if ns else ''}{m['metadata']['name']}"


def _mask_managed(entries):
    out = []
    for e in entries or []:
        if e["manager"] in CONTROLLER_MANAGERS:
            continue
        item = {"manager": e["manager"], "operation": e["operation"], "apiVersion": e.get("apiVersion"), "fieldsV1": e.get("fieldsV1")}
        if e.get("subresource"):
            item["subresource"] = e["subresource"]
        out.append(item)
    return sorted(out, key=lambda e: (e["manager"], e["operation"], e.get("subresource") or ""))


def _mask_service(spec):
    if spec.get("clusterIP") not in (None, "None", ""):
        spec["clusterIP"] = "<allocated>"
        spec["clusterIPs"] = ["<allocated>" for _ in spec.get("clusterIPs") or []]
    for p in spec.get("ports") or []:
        if "nodePort" in p:
            p["nodePort"] = "<allocated>"


def snapshot(obj, mapping):
    """What the comparison looks at: the object without identity noise, names mapped back to the corpus's."""
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata") or {}
    uid = meta.get("uid")
    text = json.dumps(obj)
    if uid:
        text = text.replace(uid, "<uid>")
    obj = replace_strings(json.loads(text), {v: k for k, v in mapping.items()})
    meta = obj["metadata"]
    out = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")}
    kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations", "finalizers") if k in meta}
    annotations = {k: v for k, v in (kept.get("annotations") or {}).items() if k not in CONTROLLER_ANNOTATIONS}
    if annotations:
        kept["annotations"] = annotations
    else:
        kept.pop("annotations", None)
    last = (kept.get("annotations") or {}).get(LAST_APPLIED)
    if last:  # kubectl's JSON text: compared as the value it holds (the identity kubectl replace copies into it masked)
        last = replace_strings(json.loads(last), {v: k for k, v in mapping.items()})
        for k in ("creationTimestamp", "resourceVersion"):
            if k in (last.get("metadata") or {}):
                last["metadata"][k] = "<masked>"
        kept["annotations"][LAST_APPLIED] = last
    kept["managedFields"] = _mask_managed(meta.get("managedFields"))
    out["metadata"] = kept
    for k, v in obj.items():
        if k not in ("apiVersion", "kind", "metadata", "status"):
            out[k] = v
    if obj.get("kind") == "Service":
        _mask_service(out.get("spec") or {})
    if obj.get("kind") == "Secret" and "data" in out:
        out["data"] = {k: "sha256:" + hashlib.sha256(v.encode()).hexdigest()[:16] for k, v in out["data"].items()}  # never the values
    return out


def diff(expected, actual, path=""):
    """Differences between two JSON values, as ``path: expected != actual`` lines."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for k in sorted(set(expected) | set(actual)):
            if k not in actual:
                out.append(f"{path}.{k}: missing (expected {json.dumps(expected[k])[:200]})")
            elif k not in expected:
                out.append(f"{path}.{k}: unexpected {json.dumps(actual[k])[:200]}")
            else:
                out += diff(expected[k], actual[k], f"{path}.{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out += diff(e, a, f"{path}[{i}]")
        return out
    if expected != actual:
        return [f"{path}: expected {json.dumps(expected)[:300]} got {json.dumps(actual)[:300]}"]
    return []


class Run:
    """The corpus applied once to a cluster through a :class:`~tests.kubesim.client.KubeHTTP` client."""

    def __init__(self, api, suffix=None):
        self.api = api
        self.suffix = suffix or secrets.token_hex(3)
        self.mapping = renames(self.suffix)
        self.manifests = [replace_strings(m, self.mapping) for m in apply_order(load_corpus())]
        self.applied = []

    def _wait_crd(self, name):
        def established():
            _, body, _ = self.api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conds = (body or {}).get("status", {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                return False
            status, _, _ = self.api.get(f"/apis/{self.mapping[GROUP + '/v1alpha1']}")
            return status == 200
        self.api.wait_for(established, timeout=60)

    def apply_all(self, manager=MANAGER, **params):
        """Server-side apply every manifest; returns {key: (status, answer)}."""
        answers = {}
        for m in self.manifests:
            status, body, _ = self.api.apply(path_of(m), m, manager=manager, force=True, **params)
            answers[key_of(replace_strings(m, {v: k for k, v in self.mapping.items()}))] = (status, body)
            if status in (200, 201) and m not in self.applied:
                self.applied.append(m)
            if m["kind"] == "CustomResourceDefinition" and status in (200, 201) and not params.get("dryRun"):
                self._wait_crd(m["metadata"]["name"])
        return answers

    def kubectl_apply_all(self, kubeconfig, workdir):
        """``kubectl apply -f`` (client-side apply: Update operations by ``kubectl-client-side-apply``, the
        last-applied annotation) of the corpus, custom resources once their CRD is served; returns
        {key: snapshot} of what the objects hold then."""
        custom = [m for m in self.manifests if m["apiVersion"].startswith(self.mapping[GROUP])]
        rest = [m for m in self.manifests if m not in custom]
        for batch in (rest, custom):
            if batch is custom:
                self._wait_crd(self.mapping[f"scrapeconfigs.{GROUP}"])
            proc = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(workdir, "cache"), "apply", "-f", "-"],
                                  input=yaml.safe_dump_all(batch), capture_output=True, text=True, timeout=300, check=False)
            if proc.returncode != 0:
                raise AssertionError(f"kubectl apply: {proc.stderr}")
            self.applied += [m for m in batch if m not in self.applied]
        out = {}
        for key, (status, body) in self.get_all().items():
            assert status == 200, body
            out[key] = snapshot(body, self.mapping)
        return out

    def reapply_writes(self, manager=MANAGER):
        """Apply every manifest again: {key: what changed} of those whose apply wrote (a new resourceVersion
        while no one else wrote in between, or a different snapshot)."""
        back = {v: k for k, v in self.mapping.items()}
        out = {}
        for m in self.manifests:
            key = key_of(replace_strings(m, back))
            _, before, _ = self.api.get(path_of(m))
            status, after, _ = self.api.apply(path_of(m), m, manager=manager, force=True)
            assert status == 200, after
            changed = diff(snapshot(before, self.mapping), snapshot(after, self.mapping))
            quiet = before.get("status") == after.get("status")  # no controller wrote in between
            if quiet and before["metadata"]["resourceVersion"] != after["metadata"]["resourceVersion"]:
                changed.append("metadata.resourceVersion changed")
            if changed:
                out[key] = changed
        return out

    def edit_and_apply_steps(self, manager=MANAGER):
        """Apply the edits of :func:`git_edits` (a later commit of the corpus) one by one: [(key, (snapshot,
        wrote))] where ``wrote`` says whether the resourceVersion moved (a notation-only edit must not write)."""
        back = {v: k for k, v in self.mapping.items()}
        by_key = {key_of(replace_strings(m, back)): m for m in self.manifests}
        out = []
        for key, edit in git_edits():
            m = copy.deepcopy(by_key[key])
            edit(m)
            _, before, _ = self.api.get(path_of(m))
            status, after, _ = self.api.apply(path_of(m), m, manager=manager, force=True)
            assert status == 200, after
            wrote = before["metadata"]["resourceVersion"] != after["metadata"]["resourceVersion"]
            out.append((key, (snapshot(after, self.mapping), wrote)))
            by_key[key] = m
        return out

    def get_all(self):
        """GET every applied object: {key: (status, body)}."""
        back = {v: k for k, v in self.mapping.items()}
        return {key_of(replace_strings(m, back)): self.api.get(path_of(m))[:2] for m in self.applied}

    def cleanup(self):
        """Delete what was applied (webhooks first, namespaces and the CRD last) without waiting."""
        for m in sorted(self.applied, key=lambda m: (m["kind"] not in LAST_KINDS, m["kind"] in ("Namespace", "CustomResourceDefinition"))):
            self.api.request("DELETE", path_of(m))


# ---------------------------------------------------------------- a later commit of the corpus
def _container(m, name):
    return next(c for c in m["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def _notation_only(m):
    """The same values in other notations: no write."""
    res = _container(m, "web")["resources"]
    res["limits"]["cpu"], res["requests"]["cpu"], res["requests"]["memory"] = "1000m", "0.25", "0.25Gi"
    m["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 30


def _web_edits(m):
    """An env var, a volume and its mount removed, a port renamed, a container's quantities changed."""
    web = _container(m, "web")
    web["env"] = [e for e in web["env"] if e["name"] != "EMPTY"]
    web["volumeMounts"] = [v for v in web["volumeMounts"] if v["name"] != "tmp"]
    web["ports"][1]["name"] = "prom"
    web["resources"]["limits"]["memory"] = "1536Mi"
    m["spec"]["template"]["spec"]["volumes"] = [v for v in m["spec"]["template"]["spec"]["volumes"] if v["name"] != "tmp"]
    del m["spec"]["minReadySeconds"]


def _scrape_edits(m):
    """A list-map item removed, another's defaulted field now set, a defaulted field given its default."""
    m["spec"]["targets"] = [{"name": "b", "url": "http://10.0.0.2:9100", "weight": 1}]
    m["spec"]["interval"] = "30s"


def _service_edits(m):
    m["spec"]["ports"] = [p for p in m["spec"]["ports"] if p["name"] != "reloader"]
    m["spec"]["ports"][0]["targetPort"] = 9090


def _configmap_edits(m):
    del m["data"]["FEATURES"]
    m["data"]["NEW"] = "1"


def git_edits():
    """(key, edit) pairs applied in order (each to the previous state of its manifest)."""
    return [("Deployment rw-app/web", _notation_only), ("Deployment rw-app/web", _web_edits),
            ("ScrapeConfig rw-monitoring/node-exporter", _scrape_edits), ("Service rw-monitoring/prometheus", _service_edits),
            ("ConfigMap rw-app/web-config", _configmap_edits)]


# ---------------------------------------------------------------- people's tools
_EDITOR = """#!/bin/sh
sed -i -e 's/^  b: two$/  b: edited/' "$1"
"""


def _kubectl_manifests(mapping):
    """The objects the kubectl scenario writes: a ConfigMap (client-side apply, then label, annotate,
    patch, edit, replace), the corpus's app Deployment (client-side apply, then scale and set image) and
    the ingress controller's Deployment (kubectl create -f)."""
    corpus = {key_of(m): m for m in load_corpus()}
    ns = mapping["rw-app"]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "csa", "namespace": ns, "labels": {"from": "kubectl"},
                                                                 "annotations": {"note": "first"}},
          "data": {"a": "one", "b": "two"}}
    web = replace_strings(corpus["Deployment rw-app/web"], mapping)
    created = replace_strings(corpus["Deployment rw-ingress/ingress-nginx-controller"], mapping)
    created["metadata"]["namespace"] = ns
    created["spec"]["template"]["spec"]["volumes"][0]["secret"]["optional"] = True
    return cm, web, created


def kubectl_scenario(kubeconfig, mapping, workdir):
    """Write with kubectl's commands (each its own field manager); returns [(key, path)] of the objects."""
    cache = os.path.join(workdir, "kubectl-cache")
    editor = os.path.join(workdir, "editor.sh")
    with open(editor, "w") as f:
        f.write(_EDITOR)
    os.chmod(editor, 0o755)
    env = {**os.environ, "KUBE_EDITOR": editor, "KUBECTL_EXTERNAL_DIFF": ""}

    def kubectl(*args, stdin=None):
        proc = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", cache, *args], input=stdin, capture_output=True,
                              text=True, timeout=120, env=env, check=False)
        if proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc.stdout

    cm, web, created = _kubectl_manifests(mapping)
    ns = cm["metadata"]["namespace"]
    kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
    kubectl("apply", "-f", "-", stdin=json.dumps(cm))
    kubectl("apply", "-f", "-", stdin=json.dumps(web))
    kubectl("create", "-f", "-", stdin=json.dumps(created))
    kubectl("label", "-n", ns, "configmap", "csa", "extra=yes")
    kubectl("annotate", "-n", ns, "configmap", "csa", "added=by-hand")
    kubectl("patch", "-n", ns, "configmap", "csa", "--type=merge", "-p", json.dumps({"data": {"c": "three"}}))
    kubectl("edit", "-n", ns, "configmap", "csa")
    replaced = json.loads(kubectl("get", "-n", ns, "configmap", "csa", "-o", "json"))
    replaced["data"]["d"] = "four"
    kubectl("replace", "-f", "-", stdin=json.dumps(replaced))
    kubectl("scale", "-n", ns, "deployment", "web", "--replicas=4")
    kubectl("set", "image", "-n", ns, "deployment/web", "sidecar=busybox:1.37")
    kubectl("patch", "-n", ns, "deployment", "ingress-nginx-controller", "-p",
            json.dumps({"spec": {"template": {"spec": {"containers": [{"name": "controller", "resources": {"limits": {"memory": "512Mi"}}}]}}}}))
    # kubectl create <kind>: typed clients, protobuf request bodies
    kubectl("create", "-n", ns, "configmap", "typed", "--from-literal=a=b", "--from-literal=empty=")
    kubectl("create", "-n", ns, "secret", "generic", "typed", "--from-literal=user=admin")
    kubectl("create", "-n", ns, "serviceaccount", "typed")
    kubectl("create", "-n", ns, "service", "nodeport", "typed", "--tcp=80:8080", "--tcp=443:https")
    kubectl("create", "-n", ns, "deployment", "typed", "--image=registry.example.com/web:1.0", "--replicas=2", "--port=8080")
    kubectl("create", "-n", ns, "role", "typed", "--verb=get,list", "--resource=configmaps,deployments.apps")
    kubectl("create", "-n", ns, "rolebinding", "typed", "--role=typed", f"--serviceaccount={ns}:typed")
    kubectl("create", "-n", ns, "job", "typed", "--image=registry.example.com/web:1.0", "--", "echo", "hi")
    kubectl("create", "-n", ns, "cronjob", "typed", "--image=registry.example.com/web:1.0", "--schedule=0 0 1 1 *")
    core = f"/api/v1/namespaces/{ns}"
    apps = f"/apis/apps/v1/namespaces/{ns}/deployments"
    return [("Namespace rw-app", core), ("ConfigMap rw-app/csa", f"{core}/configmaps/csa"), ("Deployment rw-app/web", f"{apps}/web"),
            ("Deployment rw-app/ingress-nginx-controller", f"{apps}/ingress-nginx-controller"),
            ("ConfigMap rw-app/typed", f"{core}/configmaps/typed"), ("Secret rw-app/typed", f"{core}/secrets/typed"),
            ("ServiceAccount rw-app/typed", f"{core}/serviceaccounts/typed"), ("Service rw-app/typed", f"{core}/services/typed"),
            ("Deployment rw-app/typed", f"{apps}/typed"),
            ("Role rw-app/typed", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/typed"),
            ("RoleBinding rw-app/typed", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/typed"),
            ("Job rw-app/typed", f"/apis/batch/v1/namespaces/{ns}/jobs/typed"), ("CronJob rw-app/typed", f"/apis/batch/v1/namespaces/{ns}/cronjobs/typed")]


def kubectl_snapshots(api, kubeconfig, workdir, suffix=None):
    """Run :func:`kubectl_scenario` in namespaces of its own and snapshot what it wrote; deletes the namespace."""
    mapping = renames(suffix or secrets.token_hex(3))
    try:
        objects = kubectl_scenario(kubeconfig, mapping, workdir)
        out = {}
        for key, path in objects:
            status, body, _ = api.get(path)
            assert status == 200, body
            out[key] = snapshot(body, mapping)
        return out
    finally:
        api.request("DELETE", f"/api/v1/namespaces/{mapping['rw-app']}")


def record(kubeconfig, out=EXPECTED):
    """Apply the corpus to the cluster of ``kubeconfig`` (a real kube-apiserver) and write the snapshots."""
    import tempfile

    from tests.kubesim.client import KubeHTTP

    with tempfile.TemporaryDirectory() as d:
        api = KubeHTTP.from_kubeconfig(kubeconfig, f"{d}/ca.crt")
        run = Run(api)
        try:
            answers = run.apply_all()
            bad = {k: v for k, v in answers.items() if v[0] not in (200, 201)}
            if bad:
                raise SystemExit(f"apply failed: {json.dumps(bad, indent=1)[:4000]}")
            version = api.get("/version")[1]["gitVersion"]
            result = {"server": version, "objects": {k: snapshot(v[1], run.mapping) for k, v in answers.items()},
                      "reapply_writes": sorted(run.reapply_writes()), "kubectl": kubectl_snapshots(api, kubeconfig, d)}
            result["edits"] = [[key, snap, wrote] for key, (snap, wrote) in run.edit_and_apply_steps()]
            csa = Run(api)
            try:
                result["client_side_apply"] = csa.kubectl_apply_all(kubeconfig, d)
            finally:
                csa.cleanup()
        finally:
            run.cleanup()
    with open(out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":  # python -m tests.conformance.realworld --record KUBECONFIG
    if len(sys.argv) != 3 or sys.argv[1] != "--record":
        raise SystemExit("usage: python -m tests.conformance.realworld --record KUBECONFIG")
    record(sys.argv[2])
