"""The installed kubectl against the cluster under test (simulator, or real with STACKSYNC_TEST_KUBECONFIG)."""

import json
import os
import secrets
import shutil
import subprocess
import time

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture(scope="module")
def kubectl(kube, tmp_path_factory):
    """Run kubectl with the cluster's kubeconfig and a private cache dir; returns CompletedProcess."""
    cache = tmp_path_factory.mktemp("kubectl-cache")

    def run(*args, input=None, check=True):
        env = {**os.environ, "KUBECACHEDIR": str(cache)}
        proc = subprocess.run(["kubectl", "--kubeconfig", kube.kubeconfig, "--cache-dir", str(cache), *args], input=input,
                              capture_output=True, text=True, env=env, timeout=60)
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {proc.stderr}"
        return proc
    return run


def manifests(ns, group):
    """Namespace + ConfigMap + Deployment + CRD + custom resource, as one multi-document YAML."""
    return f"""apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: c1, namespace: {ns}, labels: {{tier: a}}}}
data: {{k: v}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}, labels: {{tier: a}}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: web, image: nginx}}]}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{kind: Widget, listKind: WidgetList, plural: widgets, singular: widget, shortNames: [wdg]}}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"""


def custom_resource(ns, group):
    """One Widget."""
    return f"""apiVersion: {group}/v1
kind: Widget
metadata: {{name: w1, namespace: {ns}, labels: {{tier: a}}}}
spec: {{size: 3}}
"""


def test_get_namespaces(kubectl):
    out = kubectl("get", "ns").stdout
    assert out.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
    assert any(line.split()[:2] == ["default", "Active"] for line in out.splitlines())
    names = json.loads(kubectl("get", "ns", "-o", "json").stdout)
    assert {"default", "kube-system"} <= {i["metadata"]["name"] for i in names["items"]}


def test_api_resources(kubectl):
    out = kubectl("api-resources", "--no-headers").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert rows["configmaps"] == ["configmaps", "cm", "v1", "true", "ConfigMap"]
    assert rows["namespaces"] == ["namespaces", "ns", "v1", "false", "Namespace"]
    assert rows["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert rows["clusterroles"] == ["clusterroles", "rbac.authorization.k8s.io/v1", "false", "ClusterRole"]
    assert rows["customresourcedefinitions"][:3] == ["customresourcedefinitions", "crd,crds", "apiextensions.k8s.io/v1"]
    namespaced = kubectl("api-resources", "--namespaced=false", "-o", "name").stdout.split()
    assert "namespaces" in namespaced and "configmaps" not in namespaced


def test_apply_get_delete(kubectl, kube):
    ns = f"kc-{secrets.token_hex(3)}"
    group = f"k{secrets.token_hex(3)}.conf.example.com"
    try:
        out = kubectl("apply", "--server-side", "-f", "-", input=manifests(ns, group)).stdout
        assert f"namespace/{ns} serverside-applied" in out
        assert "configmap/c1 serverside-applied" in out and "deployment.apps/web serverside-applied" in out
        assert f"customresourcedefinition.apiextensions.k8s.io/widgets.{group} serverside-applied" in out
        kubectl("wait", "--for=condition=Established", f"crd/widgets.{group}", "--timeout=60s")
        deadline = time.monotonic() + 60
        while True:
            proc = kubectl("apply", "--server-side", "-f", "-", input=custom_resource(ns, group), check=False)
            if proc.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert proc.returncode == 0, proc.stderr
        assert f"widget.{group}/w1 serverside-applied" in proc.stdout
        again = kubectl("apply", "--server-side", "-f", "-", input=manifests(ns, group)).stdout
        assert "configmap/c1 serverside-applied" in again

        got = kubectl("get", "cm", "-n", ns, "-l", "tier=a", "-o", "name").stdout.split()
        assert got == ["configmap/c1"]
        got = kubectl("get", "cm,deploy", "-n", ns, "-l", "tier=a", "-o", "name").stdout.split()
        assert got == ["configmap/c1", "deployment.apps/web"]
        table = kubectl("get", "wdg", "-n", ns, "-l", "tier=a").stdout
        assert table.splitlines()[1].split()[0] == "w1"
        cm = json.loads(kubectl("get", "configmap", "c1", "-n", ns, "-o", "json", "--show-managed-fields").stdout)
        assert cm["metadata"]["managedFields"][0]["manager"] == "kubectl" and cm["metadata"]["managedFields"][0]["operation"] == "Apply"
        assert kubectl("get", "cm", "-n", ns, "-l", "tier=zzz", "-o", "name").stdout.strip() == ""

        out = kubectl("delete", "-n", ns, "configmap", "c1").stdout
        assert 'configmap "c1" deleted' in out
        proc = kubectl("get", "configmap", "c1", "-n", ns, check=False)
        assert proc.returncode != 0 and "NotFound" in proc.stderr
        out = kubectl("delete", "-f", "-", "--wait=true", "--timeout=60s", input=custom_resource(ns, group)).stdout
        assert "w1" in out and "deleted" in out
    finally:
        kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=manifests(ns, group), check=False)
    proc = kubectl("get", "ns", ns, check=False)
    assert proc.returncode != 0 or "Terminating" in proc.stdout


@pytest.mark.parametrize("field, kind_line, type_line, description", [
    ("configmap.data", "KIND:       ConfigMap", "FIELD: data <map[string]string>", "Data contains the configuration data."),
    ("deployment.spec.replicas", "KIND:       Deployment", "FIELD: replicas <integer>", "Number of desired pods."),
    ("pods.spec.containers.image", "KIND:       Pod", "FIELD: image <string>", "Container image name."),
])
def test_explain_reads_the_openapi_schemas(kubectl, field, kind_line, type_line, description):
    # kubectl explain works from /openapi/v3/<group-version>: full schemas, with field types and descriptions
    out = kubectl("explain", field).stdout
    assert kind_line in out and type_line in out, out
    assert description in " ".join(out.split()), out

