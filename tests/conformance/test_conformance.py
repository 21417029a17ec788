"""Behaviour of the Kubernetes API that the collection relies on, pinned to a real kube-apiserver.

Runs against the simulator by default and against a real cluster when STACKSYNC_TEST_KUBECONFIG is set;
both must pass. Assertions tolerate a real server's extras but pin codes, reasons, scope and
managedFields.
"""

import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import urllib3

from .helpers import unique

CM = "/api/v1/namespaces/{ns}/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/{ns}/deployments"

SCOPES = [
    ("", "v1", "namespaces", "Namespace", False), ("", "v1", "configmaps", "ConfigMap", True), ("", "v1", "secrets", "Secret", True),
    ("", "v1", "services", "Service", True), ("", "v1", "serviceaccounts", "ServiceAccount", True), ("", "v1", "pods", "Pod", True),
    ("", "v1", "persistentvolumes", "PersistentVolume", False), ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    ("", "v1", "events", "Event", True), ("apps", "v1", "deployments", "Deployment", True), ("apps", "v1", "replicasets", "ReplicaSet", True),
    ("apps", "v1", "statefulsets", "StatefulSet", True), ("apps", "v1", "daemonsets", "DaemonSet", True), ("batch", "v1", "jobs", "Job", True),
    ("batch", "v1", "cronjobs", "CronJob", True), ("networking.k8s.io", "v1", "ingresses", "Ingress", True),
    ("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True), ("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True), ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False),
    ("coordination.k8s.io", "v1", "leases", "Lease", True), ("events.k8s.io", "v1", "events", "Event", True),
]
SHORT_NAMES = {"configmaps": ["cm"], "namespaces": ["ns"], "deployments": ["deploy"], "customresourcedefinitions": ["crd", "crds"],
               "services": ["svc"], "serviceaccounts": ["sa"], "persistentvolumeclaims": ["pvc"], "statefulsets": ["sts"]}
FULL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def cm(name, labels=None, data=None, ns=None):
    """A ConfigMap manifest."""
    meta = {"name": name}
    if labels:
        meta["labels"] = labels
    if ns:
        meta["namespace"] = ns
    out = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    if data is not None:
        out["data"] = data
    return out


def deployment(name, ns, image="nginx:1.27", labels=None):
    """A Deployment manifest."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns, "labels": labels or {"stack": "s"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name, "stack": "s"}}, "spec": {"containers": [{"name": "web", "image": image}]}}}}


def entry(obj, manager, operation=None):
    """The managedFields entry of a manager."""
    found = [e for e in obj["metadata"].get("managedFields", []) if e["manager"] == manager and (operation is None or e["operation"] == operation)]
    assert found, f"no managedFields entry for {manager}: {obj['metadata'].get('managedFields')}"
    return found[0]


def assert_status(status, body, code, reason):
    """Check a Status error."""
    assert status == code, body
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code, body
    assert body.get("reason") == reason, body


# ------------------------------------------------------------------ discovery
def test_version(api):
    status, body, _ = api.get("/version")
    assert status == 200 and body["major"] == "1" and body["gitVersion"].startswith("v1.")


def test_legacy_and_group_discovery(api):
    status, body, _ = api.get("/api")
    assert status == 200 and body["kind"] == "APIVersions" and body["versions"] == ["v1"]
    status, body, _ = api.get("/apis")
    assert status == 200 and body["kind"] == "APIGroupList"
    names = [g["name"] for g in body["groups"]]
    for group in ("apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "coordination.k8s.io", "networking.k8s.io"):
        assert group in names
    apps = next(g for g in body["groups"] if g["name"] == "apps")
    assert apps["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    status, body, _ = api.get("/apis/apps")
    assert status == 200 and body["kind"] == "APIGroup" and body["name"] == "apps"


@pytest.mark.parametrize(("group", "version", "plural", "kind", "namespaced"), SCOPES, ids=[f"{s[0] or 'core'}-{s[2]}" for s in SCOPES])
def test_resource_scope(api, group, version, plural, kind, namespaced):
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    status, body, _ = api.get(path)
    assert status == 200 and body["kind"] == "APIResourceList" and body["groupVersion"] == (f"{group}/{version}" if group else version)
    res = next(r for r in body["resources"] if r["name"] == plural)
    assert res["kind"] == kind and res["namespaced"] is namespaced
    assert res["singularName"] == kind.lower()
    if plural == "namespaces":
        assert sorted(res["verbs"]) == sorted(v for v in FULL_VERBS if v != "deletecollection")
    else:
        assert sorted(res["verbs"]) == FULL_VERBS
    if plural in SHORT_NAMES:
        assert res["shortNames"] == SHORT_NAMES[plural]


def test_subresources_listed(api):
    _, body, _ = api.get("/apis/apps/v1")
    names = {r["name"]: r for r in body["resources"]}
    assert names["deployments/status"]["verbs"] == ["get", "patch", "update"]
    assert names["deployments/scale"]["kind"] == "Scale" and names["deployments/scale"]["group"] == "autoscaling"


def test_aggregated_discovery(api):
    accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
    status, body, headers = api.request("GET", "/apis", headers={"Accept": accept})
    assert status == 200
    assert headers["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert body["kind"] == "APIGroupDiscoveryList" and body["apiVersion"] == "apidiscovery.k8s.io/v2"
    apps = next(i for i in body["items"] if i["metadata"].get("name") == "apps")
    dep = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    assert dep["scope"] == "Namespaced" and dep["responseKind"]["kind"] == "Deployment" and dep["shortNames"] == ["deploy"]
    assert {s["subresource"] for s in dep["subresources"]} >= {"scale", "status"}
    status, body, _ = api.request("GET", "/api", headers={"Accept": accept})
    core = body["items"][0]
    assert core["metadata"] == {} and core["versions"][0]["version"] == "v1"
    ns_res = next(r for r in core["versions"][0]["resources"] if r["resource"] == "namespaces")
    assert ns_res["scope"] == "Cluster"


def test_openapi_v3(api):
    status, body, _ = api.get("/openapi/v3")
    assert status == 200
    assert "api/v1" in body["paths"] and "apis/apps/v1" in body["paths"]
    url = body["paths"]["apis/apps/v1"]["serverRelativeURL"]
    status, doc, _ = api.get(url.split("?")[0])
    assert status == 200 and doc["openapi"].startswith("3.")
    patch_ops = [p["patch"] for p in doc["paths"].values()
                 if "patch" in p and p["patch"].get("x-kubernetes-group-version-kind", {}).get("kind") == "Deployment"]
    assert patch_ops and any(q.get("name") == "fieldValidation" for q in patch_ops[0]["parameters"])


def test_unknown_resource(api, ns):
    status, body, _ = api.get(f"/api/v1/namespaces/{ns}/gizmos")
    assert_status(status, body, 404, "NotFound")
    assert body["message"] == "the server could not find the requested resource"


# ----------------------------------------------------------------- namespaces
def test_system_namespaces_exist(api):
    _, body, _ = api.get("/api/v1/namespaces")
    names = {i["metadata"]["name"] for i in body["items"]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
    assert body["kind"] == "NamespaceList"


def test_new_namespace_content(api, ns):
    status, body, _ = api.get(f"/api/v1/namespaces/{ns}")
    assert status == 200
    assert body["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns
    assert body["spec"] == {"finalizers": ["kubernetes"]} and body["status"]["phase"] == "Active"
    assert entry(body, "stacksync-conformance")["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}

    def contents():
        names = {i["metadata"]["name"] for i in api.get(CM.format(ns=ns))[1]["items"]}
        sas = {i["metadata"]["name"] for i in api.get(f"/api/v1/namespaces/{ns}/serviceaccounts")[1]["items"]}
        return "kube-root-ca.crt" in names and "default" in sas
    api.wait_for(contents)
    root = api.get(f"{CM.format(ns=ns)}/kube-root-ca.crt")[1]
    assert root["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    assert entry(root, "kube-controller-manager")["operation"] == "Update"


def test_namespace_termination(api):
    name = unique()
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    held = cm("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    assert api.request("POST", CM.format(ns=name), held)[0] == 201
    api.request("POST", CM.format(ns=name), cm("plain"))
    status, body, _ = api.request("DELETE", f"/api/v1/namespaces/{name}")
    assert status == 200 and body["kind"] == "Namespace"
    assert body["status"]["phase"] == "Terminating" and body["metadata"]["deletionTimestamp"]
    status, body, _ = api.request("POST", CM.format(ns=name), {"metadata": {"name": "late"}})
    assert_status(status, body, 403, "Forbidden")
    assert body["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    assert "because it is being terminated" in body["message"]
    api.wait_for(lambda: api.get(f"{CM.format(ns=name)}/plain")[0] == 404)
    assert api.get(f"/api/v1/namespaces/{name}")[1]["status"]["phase"] == "Terminating"
    api.request("PATCH", f"{CM.format(ns=name)}/held", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    api.wait_for(lambda: api.get(f"/api/v1/namespaces/{name}")[0] == 404, timeout=60)


def test_namespace_termination_deletes_each_object_once(kube, api):
    """A namespace of more objects than Python's recursion limit drains completely, one DELETED each."""
    name = unique()
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    names = [f"c{i:04d}" for i in range(1100)]
    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(lambda n: api.request("POST", CM.format(ns=name), cm(n))[0], names)) == {201}
    rv = api.get(CM.format(ns=name))[1]["metadata"]["resourceVersion"]
    assert api.request("DELETE", f"/api/v1/namespaces/{name}")[0] == 200
    api.wait_for(lambda: api.get(f"/api/v1/namespaces/{name}")[0] == 404, timeout=180)
    url = f"{kube.server}{CM.format(ns=name)}?watch=true&resourceVersion={rv}&timeoutSeconds=2"
    http = urllib3.PoolManager(cert_reqs="CERT_REQUIRED" if kube.ca_cert else "CERT_NONE", ca_certs=kube.ca_cert)
    resp = http.request("GET", url, headers={"Authorization": f"Bearer {kube.token}"}, timeout=30)
    assert resp.status == 200
    events = [json.loads(line) for line in resp.data.splitlines() if line.strip()]
    deleted = [e["object"]["metadata"]["name"] for e in events if e["type"] == "DELETED"]
    assert len(deleted) == len(set(deleted)), "an object was deleted twice"
    # all of ours, and the ConfigMaps the control plane put there (kube-root-ca.crt; a real server may add more)
    assert set(deleted) >= {*names, "kube-root-ca.crt"}


# ------------------------------------------------------------------------ CRUD
def test_create_get_conflicts(api, ns):
    status, body, _ = api.request("POST", CM.format(ns=ns), cm("c1", {"tier": "a"}, {"k": "v"}))
    assert status == 201
    meta = body["metadata"]
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"] and "generation" not in meta
    assert entry(body, "stacksync-conformance", "Update")["fieldsV1"] == {"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:tier": {}}}}
    status, body, _ = api.request("POST", CM.format(ns=ns), cm("c1", data={"k": "v"}))
    assert_status(status, body, 409, "AlreadyExists")
    assert body["details"] == {"kind": "configmaps", "name": "c1"}
    assert body["message"] == 'configmaps "c1" already exists'
    status, body, _ = api.get(f"{CM.format(ns=ns)}/nope")
    assert_status(status, body, 404, "NotFound")
    assert body["details"] == {"kind": "configmaps", "name": "nope"} and body["message"] == 'configmaps "nope" not found'
    current = api.get(f"{CM.format(ns=ns)}/c1")[1]
    stale = json.loads(json.dumps(current))
    stale["metadata"]["resourceVersion"] = "1"
    status, body, _ = api.request("PUT", f"{CM.format(ns=ns)}/c1", stale)
    assert_status(status, body, 409, "Conflict")
    assert "the object has been modified" in body["message"]
    current["data"]["k"] = "v2"
    status, body, _ = api.request("PUT", f"{CM.format(ns=ns)}/c1", current)
    assert status == 200 and body["data"] == {"k": "v2"}
    assert int(body["metadata"]["resourceVersion"]) > int(current["metadata"]["resourceVersion"])


def test_missing_namespace_and_name(api, ns):
    status, body, _ = api.request("POST", CM.format(ns="does-not-exist-" + secrets.token_hex(2)), cm("c1"))
    assert_status(status, body, 404, "NotFound")
    assert body["details"]["kind"] == "namespaces"
    status, body, _ = api.request("POST", CM.format(ns=ns), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    assert_status(status, body, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["details"]["causes"][0]["reason"] == "FieldValueRequired"
    assert body["details"]["kind"] == "ConfigMap"


def test_generate_name(api, ns):
    status, body, _ = api.request("POST", CM.format(ns=ns), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}})
    assert status == 201 and body["metadata"]["name"].startswith("gen-") and len(body["metadata"]["name"]) == 9


def test_invalid_values(api, ns):
    bad = deployment("bad", ns)
    bad["spec"]["replicas"] = "three"
    status, body, _ = api.request("POST", DEPLOY.format(ns=ns), bad)
    assert_status(status, body, 400, "BadRequest")
    bad = deployment("bad", ns)
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    status, body, _ = api.request("POST", DEPLOY.format(ns=ns), bad)
    assert_status(status, body, 422, "Invalid")
    assert any(c["field"] == "spec.template.metadata.labels" for c in body["details"]["causes"])
    assert body["details"]["group"] == "apps" and body["details"]["kind"] == "Deployment"


# ----------------------------------------------------------- server-side apply
def test_server_side_apply_lifecycle(api, ns):
    path = f"{CM.format(ns=ns)}/c2"
    applied = cm("c2", {"app": "x"}, {"a": "1", "b": "2"}, ns)
    status, body, _ = api.apply(path, applied)
    assert status == 201
    e = entry(body, "stacksync", "Apply")
    assert e["fieldsV1"] == {"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    assert e["apiVersion"] == "v1" and e["fieldsType"] == "FieldsV1" and len(body["metadata"]["managedFields"]) == 1
    rv = body["metadata"]["resourceVersion"]
    status, body, _ = api.apply(path, applied)
    assert status == 200 and body["metadata"]["resourceVersion"] == rv
    applied["data"] = {"a": "1"}
    status, body, _ = api.apply(path, applied)
    assert status == 200 and body["data"] == {"a": "1"}
    assert entry(body, "stacksync")["fieldsV1"] == {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    status, body, _ = api.request("PATCH", path, {"data": {"a": "changed"}}, "application/merge-patch+json", fieldManager="kubectl-edit")
    assert status == 200
    assert entry(body, "kubectl-edit", "Update")["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert entry(body, "stacksync")["fieldsV1"] == {"f:metadata": {"f:labels": {"f:app": {}}}}
    status, body, _ = api.apply(path, applied)
    assert_status(status, body, 409, "Conflict")
    assert body["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "kubectl-edit" using v1', "field": ".data.a"}]
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a'
    status, body, _ = api.apply(path, applied, force=True)
    assert status == 200 and body["data"] == {"a": "1"}
    assert [e["manager"] for e in body["metadata"]["managedFields"]] == ["stacksync"]


def test_apply_shared_ownership_keeps_field(api, ns):
    path = f"{CM.format(ns=ns)}/shared"
    api.apply(path, cm("shared", data={"a": "1", "b": "2"}, ns=ns), manager="one")
    api.apply(path, cm("shared", data={"b": "2"}, ns=ns), manager="two")
    status, body, _ = api.apply(path, cm("shared", data={"a": "1"}, ns=ns), manager="one")
    assert status == 200 and body["data"] == {"a": "1", "b": "2"}
    status, body, _ = api.apply(path, cm("shared", data={"c": "3"}, ns=ns), manager="two")
    assert body["data"] == {"a": "1", "c": "3"}


def test_apply_dry_run_and_field_manager(api, ns):
    path = f"{CM.format(ns=ns)}/c3"
    status, body, _ = api.apply(path, cm("c3", data={"a": "1"}, ns=ns), dryRun="All")
    assert status == 201 and "resourceVersion" not in body["metadata"] and body["metadata"]["uid"]
    assert api.get(path)[0] == 404
    status, body, _ = api.request("PATCH", path, cm("c3", data={"a": "1"}, ns=ns), "application/apply-patch+yaml")
    assert_status(status, body, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "fieldManager"
    assert body["details"]["kind"] == "PatchOptions" and body["details"]["group"] == "meta.k8s.io"


def test_apply_namespace_handling(api, ns):
    name = unique("conf-role")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name, "namespace": ns}, "rules": []}
    status, body, _ = api.apply(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}", role)
    try:
        assert status == 201 and "namespace" not in body["metadata"]
        assert entry(body, "stacksync")["fieldsV1"] == {"f:rules": {}}
    finally:
        api.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")
    status, body, _ = api.apply(f"{CM.format(ns=ns)}/c5", cm("c5", ns="other"))
    assert_status(status, body, 400, "BadRequest")
    assert body["message"] == "the namespace of the provided object does not match the namespace sent on the request"


def test_apply_deployment_defaults_and_generation(api, ns):
    path = f"{DEPLOY.format(ns=ns)}/web"
    status, body, _ = api.apply(path, deployment("web", ns))
    assert status == 201 and body["metadata"]["generation"] == 1
    spec = body["spec"]
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    c = spec["template"]["spec"]["containers"][0]
    assert c["imagePullPolicy"] == "IfNotPresent" and c["terminationMessagePath"] == "/dev/termination-log"
    assert spec["template"]["spec"]["restartPolicy"] == "Always" and spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert entry(body, "stacksync")["fieldsV1"]["f:spec"]["f:template"]["f:spec"] == {
        "f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}}
    assert entry(body, "stacksync")["fieldsV1"]["f:spec"]["f:selector"] == {}
    status, body, _ = api.apply(path, deployment("web", ns))
    assert status == 200 and body["metadata"]["generation"] == 1
    status, body, _ = api.apply(path, deployment("web", ns, labels={"stack": "s", "extra": "1"}))
    assert body["metadata"]["generation"] == 1
    status, body, _ = api.apply(path, deployment("web", ns, image="nginx:1.28"))
    assert body["metadata"]["generation"] == 2


def test_controller_creates_owned_replicaset(api, ns):
    _, dep, _ = api.apply(f"{DEPLOY.format(ns=ns)}/web", deployment("web", ns))

    def owned():
        items = api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"]
        return [rs for rs in items if any(r["uid"] == dep["metadata"]["uid"] for r in rs["metadata"].get("ownerReferences", []))]
    rs = api.wait_for(owned)[0]
    ref = rs["metadata"]["ownerReferences"][0]
    assert ref == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": dep["metadata"]["uid"], "controller": True,
                   "blockOwnerDeletion": True}
    labels = rs["metadata"]["labels"]
    assert labels["app"] == "web" and labels["stack"] == "s" and labels["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{labels['pod-template-hash']}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": labels["pod-template-hash"]}
    assert entry(rs, "kube-controller-manager", "Update")
    listed = api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets", labelSelector="stack=s")[1]["items"]
    assert [r["metadata"]["name"] for r in listed] == [rs["metadata"]["name"]]
    api.wait_for(lambda: api.get(f"{DEPLOY.format(ns=ns)}/web")[1]["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision") == "1")


# --------------------------------------------------------------------- patches
def test_strategic_merge_patch_merges_containers(api, ns):
    path = f"{DEPLOY.format(ns=ns)}/web"
    d = deployment("web", ns)
    d["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox:1.36"})
    api.apply(path, d)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}}
    status, body, _ = api.request("PATCH", path, patch, "application/strategic-merge-patch+json")
    assert status == 200
    containers = body["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("web", "nginx:1.28"), ("side", "busybox:1.36")]
    assert containers[0]["imagePullPolicy"] == "IfNotPresent"
    mine = entry(body, "stacksync-conformance", "Update")["fieldsV1"]
    assert mine == {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {"f:image": {}}}}}}}
    web = entry(body, "stacksync", "Apply")["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert web == {".": {}, "f:name": {}}
    assert body["metadata"]["generation"] == 2
    status, body, _ = api.request("PATCH", path, {"metadata": {"labels": {"x": "y"}}}, "application/strategic-merge-patch+json")
    assert body["metadata"]["generation"] == 2 and body["metadata"]["labels"] == {"stack": "s", "x": "y"}


def test_merge_patch_replaces_lists_and_deletes_keys(api, ns):
    path = f"{DEPLOY.format(ns=ns)}/web"
    d = deployment("web", ns)
    d["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox:1.36"})
    api.apply(path, d)
    patch = {"metadata": {"labels": {"stack": None}}, "spec": {"template": {"spec": {"containers": [{"name": "only", "image": "nginx"}]}}}}
    status, body, _ = api.request("PATCH", path, patch, "application/merge-patch+json")
    assert status == 200
    assert [c["name"] for c in body["spec"]["template"]["spec"]["containers"]] == ["only"]
    assert body["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert "labels" not in body["metadata"] or "stack" not in body["metadata"]["labels"]


def test_json_patch(api, ns):
    api.request("POST", CM.format(ns=ns), cm("c1", {"tier": "a"}, {"k": "v"}))
    ops = [{"op": "replace", "path": "/data/k", "value": "w"}, {"op": "add", "path": "/metadata/labels/extra", "value": "1"}]
    status, body, _ = api.request("PATCH", f"{CM.format(ns=ns)}/c1", ops, "application/json-patch+json")
    assert status == 200 and body["data"] == {"k": "w"} and body["metadata"]["labels"] == {"tier": "a", "extra": "1"}
    status, body, _ = api.request("PATCH", f"{CM.format(ns=ns)}/c1", [{"op": "test", "path": "/data/k", "value": "nope"}],
                                  "application/json-patch+json")
    assert status == 422 and body["reason"] == "Invalid"


def test_patch_missing_object_and_dry_run_update(api, ns):
    status, body, _ = api.request("PATCH", f"{CM.format(ns=ns)}/ghost", {"data": {"a": "1"}}, "application/merge-patch+json")
    assert_status(status, body, 404, "NotFound")
    api.request("POST", CM.format(ns=ns), cm("c1", data={"k": "v"}))
    status, body, _ = api.request("PATCH", f"{CM.format(ns=ns)}/c1", {"data": {"k": "dry"}}, "application/merge-patch+json", dryRun="All")
    assert status == 200 and body["data"] == {"k": "dry"}
    assert api.get(f"{CM.format(ns=ns)}/c1")[1]["data"] == {"k": "v"}
    status, body, _ = api.request("POST", CM.format(ns=ns), cm("c9"), dryRun="All")
    assert status == 201 and api.get(f"{CM.format(ns=ns)}/c9")[0] == 404


# -------------------------------------------------------------------- listing
@pytest.fixture
def labelled(api, ns):
    """Five ConfigMaps l0..l4 with tier a/b and idx labels, plus one without labels."""
    for i in range(5):
        api.request("POST", CM.format(ns=ns), cm(f"l{i}", {"tier": "ab"[i % 2] if i != 2 else "c", "idx": str(i)}))
    api.request("POST", CM.format(ns=ns), cm("nolabels"))
    return ns


@pytest.mark.parametrize(("selector", "expected"), [
    ("tier=a", {"l0", "l4"}), ("tier==b", {"l1", "l3"}), ("tier!=a,idx", {"l1", "l2", "l3"}), ("tier in (a,b),idx", {"l0", "l1", "l3", "l4"}),
    ("tier notin (a,b),idx", {"l2"}), ("idx", {"l0", "l1", "l2", "l3", "l4"}), ("!idx,!tier", {"nolabels"}), ("idx in (1, 3)", {"l1", "l3"}),
])
def test_label_selectors(api, labelled, selector, expected):
    status, body, _ = api.get(CM.format(ns=labelled), labelSelector=selector)
    assert status == 200 and body["kind"] == "ConfigMapList"
    names = {i["metadata"]["name"] for i in body["items"]} - {"kube-root-ca.crt", "openshift-service-ca.crt"}
    assert names == expected


@pytest.mark.parametrize("selector", ["tier in a", "tier in (a", "=a", "tier=a=b"])
def test_bad_label_selector(api, ns, selector):
    status, body, _ = api.get(CM.format(ns=ns), labelSelector=selector)
    assert_status(status, body, 400, "BadRequest")
    assert body["message"].startswith("unable to parse requirement") or "found" in body["message"]


def test_bad_label_selector_message(api, ns):
    _, body, _ = api.get(CM.format(ns=ns), labelSelector="tier in a")
    assert body["message"] == "unable to parse requirement: found 'a' expected: '('"


def test_list_items_and_all_namespaces(api, labelled):
    _, body, _ = api.get("/api/v1/configmaps", labelSelector="tier=a")
    mine = [i for i in body["items"] if i["metadata"]["namespace"] == labelled]
    assert {i["metadata"]["name"] for i in mine} == {"l0", "l4"}
    assert "kind" not in mine[0] and "apiVersion" not in mine[0]
    assert body["metadata"]["resourceVersion"]


def test_field_selectors(api, labelled):
    _, body, _ = api.get(CM.format(ns=labelled), fieldSelector="metadata.name=l1")
    assert [i["metadata"]["name"] for i in body["items"]] == ["l1"]
    _, body, _ = api.get("/api/v1/configmaps", fieldSelector=f"metadata.namespace={labelled},metadata.name!=l1", labelSelector="idx")
    assert {i["metadata"]["name"] for i in body["items"]} == {"l0", "l2", "l3", "l4"}
    _, body, _ = api.get("/api/v1/namespaces", fieldSelector=f"metadata.name={labelled}")
    assert [i["metadata"]["name"] for i in body["items"]] == [labelled]
    status, body, _ = api.get(CM.format(ns=labelled), fieldSelector="spec.foo=bar")
    assert_status(status, body, 400, "BadRequest")


def test_pagination(api, labelled):
    _, everything, _ = api.get(CM.format(ns=labelled))
    total = len(everything["items"])
    seen, token, pages = [], None, 0
    while True:
        _, body, _ = api.get(CM.format(ns=labelled), limit=2, **({"continue": token} if token else {}))
        pages += 1
        seen += [i["metadata"]["name"] for i in body["items"]]
        token = body["metadata"].get("continue")
        if pages == 1:
            assert body["metadata"]["remainingItemCount"] == total - 2
        if not token:
            break
    assert seen == [i["metadata"]["name"] for i in everything["items"]] and seen == sorted(seen)
    assert pages == (total + 1) // 2


def test_cluster_scoped_list(api):
    status, body, _ = api.get("/apis/rbac.authorization.k8s.io/v1/clusterroles", labelSelector="nothing=here")
    assert status == 200 and body == {"kind": "ClusterRoleList", "apiVersion": "rbac.authorization.k8s.io/v1",
                                      "metadata": {"resourceVersion": body["metadata"]["resourceVersion"]}, "items": []}


# ------------------------------------------------------------------------ CRDs
def crd_manifest(group, plural="widgets", kind="Widget", scope="Namespaced"):
    """A minimal CRD."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope, "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_crd_lifecycle(api, ns):
    group = f"{secrets.token_hex(3)}.conf.example.com"
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}"
    status, body, _ = api.apply(crd_path, crd_manifest(group))
    assert status == 201 and body["metadata"]["generation"] == 1
    assert body["spec"]["conversion"] == {"strategy": "None"} and body["status"]["storedVersions"] == ["v1"]
    try:
        def established():
            conds = api.get(crd_path)[1].get("status", {}).get("conditions") or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conds)
        api.wait_for(established)
        crd = api.get(crd_path)[1]
        assert crd["status"]["acceptedNames"]["kind"] == "Widget"
        assert entry(crd, "kube-apiserver", "Update")["subresource"] == "status"
        status, body, _ = api.wait_for(lambda: (r := api.get(f"/apis/{group}/v1")) and r[0] == 200 and r)
        assert body["resources"][0]["name"] == "widgets" and body["resources"][0]["namespaced"] is True
        assert body["resources"][0]["kind"] == "Widget" and body["resources"][0]["singularName"] == "widget"
        w = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": ns, "labels": {"stack": "s"}},
             "spec": {"a": 1, "nested": {"b": 2}}}
        wpath = f"/apis/{group}/v1/namespaces/{ns}/widgets/w1"
        status, body = api.wait_for(lambda: (r := api.apply(wpath, w)) and r[0] == 201 and r[:2])
        assert body["metadata"]["generation"] == 1 and body["spec"] == {"a": 1, "nested": {"b": 2}}
        assert entry(body, "stacksync")["fieldsV1"] == {"f:metadata": {"f:labels": {"f:stack": {}}},
                                                         "f:spec": {".": {}, "f:a": {}, "f:nested": {".": {}, "f:b": {}}}}
        _, listed, _ = api.get(f"/apis/{group}/v1/widgets", labelSelector="stack=s")
        assert listed["kind"] == "WidgetList" and listed["items"][0]["kind"] == "Widget"
        w["spec"] = {"a": 2}
        status, body, _ = api.apply(wpath, w)
        assert body["spec"] == {"a": 2} and body["metadata"]["generation"] == 2
        status, body, _ = api.request("PATCH", wpath, {"spec": {"a": 3}}, "application/strategic-merge-patch+json")
        assert status == 415 and body["reason"] == "UnsupportedMediaType"
    finally:
        status, body, _ = api.request("DELETE", crd_path)
    assert status == 200
    api.wait_for(lambda: api.get(crd_path)[0] == 404, timeout=60)
    api.wait_for(lambda: api.get(f"/apis/{group}/v1/namespaces/{ns}/widgets")[0] == 404, timeout=60)


def test_crd_cluster_scoped_and_invalid(api):
    group = f"{secrets.token_hex(3)}.conf.example.com"
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}"
    bad = crd_manifest(group, "gadgets", "Gadget", "Cluster")
    bad["metadata"]["name"] = f"wrong.{group}"
    status, body, _ = api.apply(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/wrong.{group}", bad)
    assert_status(status, body, 422, "Invalid")
    api.apply(crd_path, crd_manifest(group, "gadgets", "Gadget", "Cluster"))
    try:
        gpath = f"/apis/{group}/v1/gadgets/g1"
        g = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"x": "y"}}
        status, body = api.wait_for(lambda: (r := api.apply(gpath, g)) and r[0] == 201 and r[:2])
        assert "namespace" not in body["metadata"]
    finally:
        api.request("DELETE", crd_path)


# ------------------------------------------------------------------- deletion
def test_delete_background_collects_dependents(api, ns):
    _, dep, _ = api.apply(f"{DEPLOY.format(ns=ns)}/web", deployment("web", ns))
    api.wait_for(lambda: api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"])
    status, body, _ = api.request("DELETE", f"{DEPLOY.format(ns=ns)}/web", {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})
    assert status == 200 and body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"] == {"name": "web", "group": "apps", "kind": "deployments", "uid": dep["metadata"]["uid"]}
    api.wait_for(lambda: not api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"])
    status, body, _ = api.request("DELETE", f"{DEPLOY.format(ns=ns)}/web")
    assert_status(status, body, 404, "NotFound")
    assert body["message"] == 'deployments.apps "web" not found'


def test_delete_orphan_keeps_dependents(api, ns):
    api.apply(f"{DEPLOY.format(ns=ns)}/web", deployment("web", ns))
    api.wait_for(lambda: api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"])
    status, _, _ = api.request("DELETE", f"{DEPLOY.format(ns=ns)}/web", {"propagationPolicy": "Orphan"})
    assert status == 200
    api.wait_for(lambda: api.get(f"{DEPLOY.format(ns=ns)}/web")[0] == 404)

    def orphaned():
        items = api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"]
        return items and all(not i["metadata"].get("ownerReferences") for i in items)
    api.wait_for(orphaned)


def test_delete_foreground(api, ns):
    api.apply(f"{DEPLOY.format(ns=ns)}/web", deployment("web", ns))
    api.wait_for(lambda: api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"])
    status, body, _ = api.request("DELETE", f"{DEPLOY.format(ns=ns)}/web", {"propagationPolicy": "Foreground"})
    assert status == 200 and body["kind"] == "Deployment"
    assert "foregroundDeletion" in body["metadata"]["finalizers"] and body["metadata"]["deletionTimestamp"]
    api.wait_for(lambda: api.get(f"{DEPLOY.format(ns=ns)}/web")[0] == 404, timeout=60)
    assert not api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets")[1]["items"]


def test_finalizers_block_deletion(api, ns):
    held = cm("fin")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    api.request("POST", CM.format(ns=ns), held)
    status, body, _ = api.request("DELETE", f"{CM.format(ns=ns)}/fin")
    assert status == 200 and body["kind"] == "ConfigMap"
    assert body["metadata"]["deletionTimestamp"] and body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert body["metadata"]["finalizers"] == ["example.com/hold"]
    assert entry(body, "stacksync-conformance")["fieldsV1"] == {"f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/hold"': {}}}}
    status, body, _ = api.get(f"{CM.format(ns=ns)}/fin")
    assert status == 200 and body["metadata"]["deletionTimestamp"]
    status, body, _ = api.request("PATCH", f"{CM.format(ns=ns)}/fin", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert status == 200
    assert api.get(f"{CM.format(ns=ns)}/fin")[0] == 404


def test_delete_dry_run_and_preconditions(api, ns):
    _, created, _ = api.request("POST", CM.format(ns=ns), cm("keep"))
    status, body, _ = api.request("DELETE", f"{CM.format(ns=ns)}/keep", dryRun="All")
    assert status == 200 and body["status"] == "Success" and body["details"]["uid"] == created["metadata"]["uid"]
    assert api.get(f"{CM.format(ns=ns)}/keep")[0] == 200
    status, body, _ = api.request("DELETE", f"{CM.format(ns=ns)}/keep", {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})
    assert_status(status, body, 409, "Conflict")


def test_delete_collection(api, labelled):
    status, body, _ = api.request("DELETE", CM.format(ns=labelled), labelSelector="tier=a")
    assert status == 200 and body["kind"] == "ConfigMapList"
    left = {i["metadata"]["name"] for i in api.get(CM.format(ns=labelled), labelSelector="idx")[1]["items"]}
    assert left == {"l1", "l2", "l3"}


# --------------------------------------------------------------- auth / RBAC
def test_unauthenticated(api):
    status, body, _ = api.request("GET", "/api/v1/namespaces", token="not-a-valid-token")
    assert_status(status, body, 401, "Unauthorized")
    assert body["message"] == "Unauthorized"


def test_rbac_limited_user(kube, api, ns):
    limited = kube.limited_http()
    if limited is None:
        pytest.skip("no limited kubeconfig (set STACKSYNC_TEST_LIMITED_KUBECONFIG)")
    status, body, _ = limited.get("/api/v1/secrets")
    assert_status(status, body, 403, "Forbidden")
    assert body["message"] == 'secrets is forbidden: User "limited" cannot list resource "secrets" in API group "" at the cluster scope'
    assert body["details"] == {"kind": "secrets"}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cm-reader", "namespace": ns},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "cm-reader", "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}]}
    assert api.apply(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/cm-reader", role)[0] == 201
    assert api.apply(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/cm-reader", binding)[0] == 201
    api.request("POST", CM.format(ns=ns), cm("l2"))
    api.wait_for(lambda: limited.get(CM.format(ns=ns))[0] == 200)
    status, body, _ = limited.request("DELETE", f"{CM.format(ns=ns)}/l2")
    assert_status(status, body, 403, "Forbidden")
    assert body["message"] == (f'configmaps "l2" is forbidden: User "limited" cannot delete resource "configmaps" in API group "" '
                               f'in the namespace "{ns}"')
    assert body["details"] == {"kind": "configmaps", "name": "l2"}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"namespace": ns, "resource": "configmaps", "verb": "delete"}}}
    status, body, _ = limited.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    assert status == 201 and body["status"]["allowed"] is False
    review["spec"]["resourceAttributes"]["verb"] = "list"
    assert limited.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)[1]["status"]["allowed"] is True
    rules = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": ns}}
    status, body, _ = limited.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", rules)
    assert status == 201
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]} in body["status"]["resourceRules"]


def test_admin_access_review(api):
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"resource": "clusterroles", "group": "rbac.authorization.k8s.io", "verb": "delete"}}}
    status, body, _ = api.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    assert status == 201 and body["status"]["allowed"] is True


# -------------------------------------------------------------- misc kinds
def test_lease_and_events(api, ns):
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock", "namespace": ns},
             "spec": {"holderIdentity": "run-1", "leaseDurationSeconds": 60}}
    status, body, _ = api.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", lease)
    assert status == 201 and body["spec"] == {"holderIdentity": "run-1", "leaseDurationSeconds": 60} and "generation" not in body["metadata"]
    assert entry(body, "stacksync-conformance")["fieldsV1"] == {"f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}}}
    body["spec"]["holderIdentity"] = "run-2"
    status, body, _ = api.request("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/lock", body)
    assert status == 200 and body["spec"]["holderIdentity"] == "run-2"
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": ns},
             "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": ns}, "reason": "Synced", "message": "ok", "type": "Normal"}
    status, body, _ = api.request("POST", f"/api/v1/namespaces/{ns}/events", event)
    assert status == 201 and body["reason"] == "Synced"
    _, listed, _ = api.get(f"/api/v1/namespaces/{ns}/events", fieldSelector="involvedObject.name=x")
    assert [e["metadata"]["name"] for e in listed["items"]] == ["e1"]


def test_status_subresource(api, ns):
    api.apply(f"{DEPLOY.format(ns=ns)}/web", deployment("web", ns))
    status, body, _ = api.apply(f"{DEPLOY.format(ns=ns)}/web", {**deployment("web", ns), "status": {"replicas": 42}})
    assert status == 200 and body["status"].get("replicas") != 42
    status, body, _ = api.get(f"{DEPLOY.format(ns=ns)}/web/status")
    assert status == 200 and body["kind"] == "Deployment"
    status, body, _ = api.get(f"{DEPLOY.format(ns=ns)}/web/scale")
    assert status == 200 and body["kind"] == "Scale" and body["spec"]["replicas"] == 1
    status, body, _ = api.request("PATCH", f"{DEPLOY.format(ns=ns)}/web/scale", {"spec": {"replicas": 2}}, "application/merge-patch+json")
    assert status == 200 and body["spec"]["replicas"] == 2
    assert api.get(f"{DEPLOY.format(ns=ns)}/web")[1]["spec"]["replicas"] == 2


def test_scale_subresource_records_an_owner_of_replicas_only_when_replicas_had_one(api, ns):
    """kube-apiserver's scale handler hands the Scale only the owners of ``spec.replicas``: with none, the update
    of the Scale records nothing (an HPA or ``kubectl scale`` then owns nothing); with one, the scaler takes it."""
    owned = deployment("owned", ns)
    unowned = json.loads(json.dumps(deployment("unowned", ns)))
    del unowned["spec"]["replicas"]
    for d in (owned, unowned):
        assert api.apply(f"{DEPLOY.format(ns=ns)}/{d['metadata']['name']}", d)[0] == 201

    def scale(name, replicas):
        status, body, _ = api.request("PATCH", f"{DEPLOY.format(ns=ns)}/{name}/scale", {"spec": {"replicas": replicas}},
                                      "application/merge-patch+json", fieldManager="scaler")
        assert status == 200 and body["spec"]["replicas"] == replicas, body
        return api.get(f"{DEPLOY.format(ns=ns)}/{name}")[1]

    def owners(obj):
        return sorted((e["manager"], e["operation"], e.get("subresource", "")) for e in obj["metadata"]["managedFields"]
                      if "f:replicas" in (e.get("fieldsV1") or {}).get("f:spec", {}))

    live = scale("unowned", 3)
    assert live["spec"]["replicas"] == 3 and owners(live) == []
    assert "scaler" not in [e["manager"] for e in live["metadata"]["managedFields"]]
    live = scale("owned", 3)
    assert live["spec"]["replicas"] == 3 and owners(live) == [("scaler", "Update", "scale")]
    assert "f:replicas" not in entry(live, "stacksync", "Apply")["fieldsV1"]["f:spec"]


def test_service_defaults(api, ns):
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    status, body, _ = api.apply(f"/api/v1/namespaces/{ns}/services/web", svc)
    assert status == 201
    spec = body["spec"]
    assert spec["type"] == "ClusterIP" and spec["clusterIP"] and spec["ports"][0]["protocol"] == "TCP" and spec["ports"][0]["targetPort"] == 80
    assert entry(body, "stacksync")["fieldsV1"] == {"f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}},
                                                               "f:selector": {}}}


def test_watch_stream(kube, api, ns):
    _, listed, _ = api.get(CM.format(ns=ns))
    rv = listed["metadata"]["resourceVersion"]
    url = f"{kube.server}{CM.format(ns=ns)}?watch=true&resourceVersion={rv}&timeoutSeconds=5"
    pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED" if kube.ca_cert else "CERT_NONE", ca_certs=kube.ca_cert)
    resp = pool.request("GET", url, headers={"Authorization": f"Bearer {kube.token}"}, preload_content=False)
    assert resp.status == 200
    api.request("POST", CM.format(ns=ns), cm("watched"))
    started = time.monotonic()
    buf = b""
    for chunk in resp.stream(1024):
        buf += chunk
        if b"watched" in buf or time.monotonic() - started > 10:
            break
    resp.release_conn()
    events = [json.loads(line) for line in buf.splitlines() if line.strip()]
    added = [e for e in events if e["object"]["metadata"]["name"] == "watched"]
    assert added and added[0]["type"] == "ADDED" and added[0]["object"]["kind"] == "ConfigMap"


# ------------------------------------------------------------ immutable fields
FROZEN = "Forbidden: field is immutable when `immutable` is set"


def frozen_cause(field):
    return {"reason": "FieldValueForbidden", "message": FROZEN, "field": field}


def test_immutable_configmap(api, ns):
    path = f"{CM.format(ns=ns)}/frozen"
    obj = cm("frozen", data={"a": "1"}, ns=ns)
    obj["immutable"] = True
    status, body, _ = api.apply(path, obj)
    assert status == 201, body
    # metadata stays mutable, and re-applying the same data is fine
    status, body, _ = api.request("PATCH", path, {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json")
    assert status == 200, body
    status, body, _ = api.apply(path, obj)
    assert status == 200, body
    obj["data"] = {"a": "2"}
    for params in ({}, {"dryRun": "All"}):
        status, body, _ = api.apply(path, obj, **params)
        assert_status(status, body, 422, "Invalid")
        assert body["message"] == f'ConfigMap "frozen" is invalid: data: {FROZEN}'
        assert body["details"] == {"name": "frozen", "kind": "ConfigMap", "causes": [frozen_cause("data")]}
    status, body, _ = api.request("PATCH", path, {"immutable": False, "binaryData": {"b": "AAA="}}, "application/merge-patch+json")
    assert_status(status, body, 422, "Invalid")
    assert body["details"]["causes"] == [frozen_cause("immutable"), frozen_cause("binaryData")]
    assert body["message"] == f'ConfigMap "frozen" is invalid: [immutable: {FROZEN}, binaryData: {FROZEN}]'
    status, live, _ = api.request("GET", path)
    live["data"] = {"a": "3"}
    status, body, _ = api.request("PUT", path, live)
    assert_status(status, body, 422, "Invalid")
    assert body["details"]["causes"] == [frozen_cause("data")]
    status, live, _ = api.request("GET", path)
    assert live["data"] == {"a": "1"} and live["immutable"] is True
    # not yet immutable: data and immutable may change in the same write
    path2 = f"{CM.format(ns=ns)}/thawed"
    assert api.apply(path2, cm("thawed", data={"a": "1"}, ns=ns))[0] == 201
    status, body, _ = api.request("PATCH", path2, {"immutable": True, "data": {"a": "2"}}, "application/merge-patch+json")
    assert status == 200 and body["data"] == {"a": "2"}, body
    # empty and absent data are the same
    path3 = f"{CM.format(ns=ns)}/empty"
    status, body, _ = api.request("POST", CM.format(ns=ns), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "empty"}, "immutable": True})
    assert status == 201, body
    status, body, _ = api.request("PATCH", path3, {"data": {}}, "application/merge-patch+json")
    assert status == 200, body


def test_immutable_secret_and_type(api, ns):
    base = f"/api/v1/namespaces/{ns}/secrets"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "frozen"}, "immutable": True, "stringData": {"a": "1"}}
    status, body, _ = api.apply(f"{base}/frozen", secret)
    assert status == 201, body
    assert body["data"] == {"a": "MQ=="} and "stringData" not in body and body["type"] == "Opaque"
    secret["stringData"] = {"a": "2"}
    status, body, _ = api.apply(f"{base}/frozen", secret)
    assert_status(status, body, 422, "Invalid")
    assert body["message"] == f'Secret "frozen" is invalid: data: {FROZEN}'
    assert body["details"] == {"name": "frozen", "kind": "Secret", "causes": [frozen_cause("data")]}
    status, body, _ = api.request("PATCH", f"{base}/frozen", {"immutable": None}, "application/merge-patch+json")
    assert_status(status, body, 422, "Invalid")
    assert body["details"]["causes"] == [frozen_cause("immutable")]
    # type is immutable on every Secret
    status, body, _ = api.request("POST", base, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"}, "data": {"a": "MQ=="}})
    assert status == 201, body
    status, body, _ = api.request("PATCH", f"{base}/plain", {"type": "Foo"}, "application/merge-patch+json")
    assert_status(status, body, 422, "Invalid")
    assert body["message"] == 'Secret "plain" is invalid: type: Invalid value: "Foo": field is immutable'
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "message": 'Invalid value: "Foo": field is immutable', "field": "type"}]
    status, body, _ = api.request("PATCH", f"{base}/plain", {"stringData": {"b": "2"}}, "application/merge-patch+json")
    assert status == 200 and body["data"] == {"a": "MQ==", "b": "Mg=="} and "stringData" not in body, body


def test_immutable_deployment_selector(api, ns):
    path = f"{DEPLOY.format(ns=ns)}/web"
    dep = deployment("web", ns)
    assert api.apply(path, dep)[0] == 201
    dep["spec"]["selector"]["matchLabels"]["stack"] = "s"
    status, body, _ = api.apply(path, dep)
    assert_status(status, body, 422, "Invalid")
    why = 'Invalid value: {"matchLabels":{"app":"web","stack":"s"}}: field is immutable'
    assert body["message"] == f'Deployment.apps "web" is invalid: spec.selector: {why}'
    assert body["details"] == {"name": "web", "group": "apps", "kind": "Deployment",
                               "causes": [{"reason": "FieldValueInvalid", "message": why, "field": "spec.selector"}]}
    status, body, _ = api.request("PATCH", path, {"spec": {"selector": {"matchLabels": {"app": "zz"}}}}, "application/merge-patch+json")
    assert_status(status, body, 422, "Invalid")
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.template.metadata.labels", "spec.selector"]
    assert body["details"]["causes"][0]["message"] == 'Invalid value: {"app":"web","stack":"s"}: `selector` does not match template `labels`'


def test_statefulset_spec_outside_the_mutable_fields_is_refused_whole(api, ns):
    path = f"/apis/apps/v1/namespaces/{ns}/statefulsets/zk"
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "zk", "namespace": ns},
           "spec": {"selector": {"matchLabels": {"app": "zk"}}, "serviceName": "zk-hs", "replicas": 3,
                    "template": {"metadata": {"labels": {"app": "zk"}}, "spec": {"containers": [{"name": "zk", "image": "zk:1"}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}]}}
    status, body, _ = api.apply(path, sts)
    assert status == 201, body
    # the stored template carries what the server defaulted; re-applying the manifest as written is no change
    vct = body["spec"]["volumeClaimTemplates"][0]
    assert (vct["apiVersion"], vct["kind"], vct["spec"]["volumeMode"], vct["status"]) == (
        "v1", "PersistentVolumeClaim", "Filesystem", {"phase": "Pending"}), vct
    assert api.apply(path, sts)[0] == 200
    # replicas and the pod template may change
    sts["spec"]["replicas"] = 2
    sts["spec"]["template"]["spec"]["containers"][0]["image"] = "zk:2"
    status, body, _ = api.apply(path, sts)
    assert status == 200 and body["spec"]["replicas"] == 2, body
    why = ("Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
           "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
           "are forbidden")
    for field, value in (("volumeClaimTemplates", [dict(sts["spec"]["volumeClaimTemplates"][0], spec={
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}})]), ("serviceName", "zk"),
            ("podManagementPolicy", "Parallel")):
        changed = dict(sts, spec=dict(sts["spec"], **{field: value}))
        for params in ({}, {"dryRun": "All"}):
            status, body, _ = api.apply(path, changed, **params)
            assert_status(status, body, 422, "Invalid")
            assert body["message"] == f'StatefulSet.apps "zk" is invalid: spec: {why}', (field, body)
            assert body["details"] == {"name": "zk", "group": "apps", "kind": "StatefulSet",
                                       "causes": [{"reason": "FieldValueForbidden", "message": why, "field": "spec"}]}


def test_immutable_service_cluster_ip(api, ns):
    path = f"/api/v1/namespaces/{ns}/services/web"
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns}, "spec": {"ports": [{"port": 80}]}}
    status, body, _ = api.apply(path, svc)
    assert status == 201, body
    ip = body["spec"]["clusterIP"]
    assert body["spec"]["clusterIPs"] == [ip]
    # re-applying without clusterIP keeps the allocated one; so does a merge patch setting it empty
    status, body, _ = api.apply(path, svc)
    assert status == 200 and body["spec"]["clusterIP"] == ip, body
    status, body, _ = api.request("PATCH", path, {"spec": {"clusterIP": ""}}, "application/merge-patch+json")
    assert status == 200 and body["spec"]["clusterIP"] == ip and body["spec"]["clusterIPs"] == [ip], body
    other = "10.96.0.3" if ip != "10.96.0.3" else "10.96.0.4"
    svc["spec"]["clusterIP"] = other
    status, body, _ = api.apply(path, svc, force="true")
    assert_status(status, body, 422, "Invalid")
    why = f'Invalid value: ["{other}"]: may not change once set'
    assert body["message"] == f'Service "web" is invalid: spec.clusterIPs[0]: {why}'
    assert body["details"] == {"name": "web", "kind": "Service",
                               "causes": [{"reason": "FieldValueInvalid", "message": why, "field": "spec.clusterIPs[0]"}]}
    status, body, _ = api.request("PATCH", path, {"spec": {"clusterIPs": [other]}}, "application/merge-patch+json")
    assert_status(status, body, 422, "Invalid")
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.clusterIPs",
                                          "message": f'Invalid value: ["{other}"]: first value must match `clusterIP`'}]


def test_a_service_ip_outside_the_service_range_is_refused_on_create(api, ns):
    """What a recreate checks first (a dry-run create): a clusterIP outside the range is refused, dry run or not."""
    path = f"/api/v1/namespaces/{ns}/services"
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "far", "namespace": ns},
           "spec": {"clusterIP": "1.2.3.4", "ports": [{"port": 80}]}}
    for dry_run, why in ((True, "the provided IP (1.2.3.4) is not in the valid range. The range of valid IPs is "),
                         (False, "the provided network does not match the current range")):  # the registry's words
        status, body, _ = api.request("POST", path + ("?dryRun=All" if dry_run else ""), svc)
        assert_status(status, body, 422, "Invalid")
        (cause,) = body["details"]["causes"]
        assert cause["field"] == "spec.clusterIPs" and cause["reason"] == "FieldValueInvalid", cause
        assert cause["message"].startswith('Invalid value: ["1.2.3.4"]: failed to allocate IP 1.2.3.4: ' + why), cause
        assert body["message"] == 'Service "far" is invalid: spec.clusterIPs: ' + cause["message"]


def test_immutable_role_binding_role_ref(api, ns):
    path = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/rb"
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb", "namespace": ns},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
          "subjects": [{"kind": "User", "name": "a", "apiGroup": "rbac.authorization.k8s.io"}]}
    assert api.apply(path, rb)[0] == 201
    rb["subjects"][0]["name"] = "b"  # subjects may change
    assert api.apply(path, rb)[0] == 200
    rb["roleRef"]["name"] = "edit"
    status, body, _ = api.apply(path, rb)
    assert_status(status, body, 422, "Invalid")
    why = 'Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: cannot change roleRef'
    assert body["message"] == f'RoleBinding.rbac.authorization.k8s.io "rb" is invalid: roleRef: {why}'
    assert body["details"] == {"name": "rb", "group": "rbac.authorization.k8s.io", "kind": "RoleBinding",
                               "causes": [{"reason": "FieldValueInvalid", "message": why, "field": "roleRef"}]}


def test_a_name_with_a_colon_is_addressed_percent_encoded(api):
    """RBAC objects are often named ``system:...``: the collection's client sends ``:`` as ``%3A`` in the
    path, and the server decodes the path before routing (the object is the same either way)."""
    name = unique("conf") + ":colon"
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + name.replace(":", "%3A")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": []}
    status, body, _ = api.apply(path, role)
    assert status == 201 and body["metadata"]["name"] == name, body
    try:
        status, body, _ = api.request("GET", path)
        assert status == 200 and body["metadata"]["name"] == name
        status, body, _ = api.request("GET", path.replace("%3A", ":"))  # the same object either way
        assert status == 200 and body["metadata"]["name"] == name
    finally:
        status, _, _ = api.request("DELETE", path)
        assert status == 200
