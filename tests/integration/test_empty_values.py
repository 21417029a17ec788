"""Empty lists and maps of every list type resync to nothing, and changes an apply reverts are still found (issue 29),
on the simulator and on a real server (``make test-real``).

kube-prometheus's ``Prometheus.spec.enableFeatures: []`` (``x-kubernetes-list-type: set``) was reported as drift
on every resync: server-side apply records a set or map list only through its items, so an empty one is never
in managedFields. The rule (``plugins/module_utils/engine/owned.py``, pinned by ``tests/conformance/test_empty_values.py``)
decides when an empty value of git absent from our managedFields is really lost.
"""

import copy
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import JSON_PATCH, MERGE_PATCH

from tests.reliability import helpers as H

NS_PREFIX = "empty"
WRITES = ("PATCH", "POST", "PUT", "DELETE")


def crd(group):
    """A Prometheus-like kind: set, map and atomic lists, structs and maps, at the top and inside list items."""
    string = {"type": "string"}
    item = {"type": "object", "required": ["name"], "properties": {
        "name": string, "args": {"type": "array", "items": string},
        "features": {"type": "array", "x-kubernetes-list-type": "set", "items": string},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"], "items": {
            "type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}}}},
        "resources": {"type": "object", "properties": {"limits": {"type": "object", "additionalProperties": string}}},
        "selector": {"type": "object", "additionalProperties": string}}}
    spec = {"type": "object", "properties": {
        "enableFeatures": {"type": "array", "x-kubernetes-list-type": "set", "items": string},
        "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": item},
        "volumes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": item},
        "args": {"type": "array", "items": string},
        "securityContext": {"type": "object", "properties": {"runAsUser": {"type": "integer"}}},
        "nodeSelector": {"type": "object", "additionalProperties": string},
        "podMetadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "retention": {"type": "string", "nullable": True}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "prometheuses." + group},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "prometheuses", "singular": "prometheus", "kind": "Prometheus", "listKind": "PrometheusList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "additionalPrinterColumns": [],
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}}


def prometheus(group, ns):
    return {"apiVersion": group + "/v1", "kind": "Prometheus", "metadata": {"name": "k8s", "namespace": ns, "labels": {}},
            "spec": {"enableFeatures": [], "args": [], "securityContext": {}, "nodeSelector": {}, "podMetadata": {}, "volumes": [],
                     "retention": None,
                     "containers": [{"name": "prometheus", "args": [], "features": [], "ports": [], "resources": {}, "selector": {}}]}}


def pod_spec():
    return {"securityContext": {}, "imagePullSecrets": [], "tolerations": [], "nodeSelector": {}, "affinity": {}, "initContainers": [],
            "readinessGates": [], "hostAliases": None,
            "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "conf", "configMap": {"name": "conf", "items": []}}],
            "containers": [{"name": "app", "image": "nginx:1.27", "args": [], "command": None, "ports": [], "env": [], "envFrom": [],
                            "resources": {}, "securityContext": {"capabilities": {}}, "volumeMounts": [], "lifecycle": {}}]}


def built_ins(ns):
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "web", "namespace": ns, "creationTimestamp": None, "annotations": {}},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "strategy": {},
                  "template": {"metadata": {"creationTimestamp": None, "labels": {"app": "web"}}, "spec": pod_spec()}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "externalIPs": [], "loadBalancerSourceRanges": None}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web", "namespace": ns, "finalizers": []},
         "secrets": [], "imagePullSecrets": []},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "web", "namespace": ns},
         "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [{"from": [], "ports": []}], "egress": []}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf", "namespace": ns, "labels": {}}, "data": {}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "web", "namespace": ns}, "rules": []},
    ]


@pytest.fixture
def group():
    return f"el{uuid.uuid4().hex[:6]}.stacksync.io"


@pytest.fixture
def stack(admin, ns):
    """A stack name; everything it holds is deleted afterwards (its CRD too)."""
    name = "empty-" + uuid.uuid4().hex[:6]
    yield name
    StackManager(admin, name, record_namespace=ns, poll_interval=0.1).delete_all()


def run(admin, stack, ns, manifests, **kw):
    return StackManager(admin, stack, namespace=ns, record_namespace=ns, poll_interval=0.1, **kw).sync(copy.deepcopy(manifests))


def not_unchanged(cs):
    return [(e["kind"], e["name"], e.get("action"), e.get("drift")) for e in cs.applied if e.get("action") != "unchanged"]


def test_empty_lists_and_maps_of_every_list_type_resync_with_zero_writes(kube, admin, ns, stack, group):
    manifests = [crd(group), prometheus(group, ns), *built_ins(ns)]
    first = run(admin, stack, ns, manifests)
    assert first.counts["created"] == len(manifests), first.result()
    if kube.is_sim:
        kube.sim.reset_counters()
    counted = {m: admin.counts.get(m, 0) for m in WRITES}  # what the module reports as api_requests
    with H.recording(admin) as writes:
        again = run(admin, stack, ns, manifests)
        check = run(admin, stack, ns, manifests, check_mode=True, diff=True)
    assert not_unchanged(again) == [] and not_unchanged(check) == [], (not_unchanged(again), not_unchanged(check))
    assert not again.changed and not check.changed and check.diff == []
    assert writes == [], writes
    assert {m: admin.counts.get(m, 0) for m in WRITES} == counted
    if kube.is_sim:  # and the server saw none either
        assert [r for r in kube.sim.requests if r["method"] in WRITES] == []


def live_prometheus(admin, group, ns):
    return admin.get(f"/apis/{group}/v1/namespaces/{ns}/prometheuses/k8s")


def test_items_added_to_an_empty_list_by_someone_are_found_and_reverted(admin, ns, stack, group):
    manifests = [crd(group), prometheus(group, ns), *built_ins(ns)]
    run(admin, stack, ns, manifests)
    path = f"/apis/{group}/v1/namespaces/{ns}/prometheuses/k8s"
    # a person's tool adds to the set list (taken over), a controller replaces the atomic list (its value is lost)
    admin.request("PATCH", path, params={"fieldManager": "kubectl-edit"}, body={"spec": {"enableFeatures": ["exemplar-storage"]}},
                  content_type=MERGE_PATCH)
    admin.request("PATCH", path, params={"fieldManager": "tuner"}, body={"spec": {"args": ["--debug"]}}, content_type=MERGE_PATCH)
    dep = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    admin.request("PATCH", dep, params={"fieldManager": "tuner"}, content_type=MERGE_PATCH,
                  body={"spec": {"template": {"spec": {"tolerations": [{"key": "spot", "operator": "Exists"}]}}}})
    check = run(admin, stack, ns, manifests, check_mode=True)
    drifted = {(e["kind"], tuple(sorted(f for d in e.get("drift") or [] for f in d["fields"]))) for e in check.applied if e.get("drift")}
    assert drifted == {("Prometheus", ("spec.args", "spec.enableFeatures[\"exemplar-storage\"]")),
                       ("Deployment", ("spec.template.spec.tolerations",))}, drifted
    done = run(admin, stack, ns, manifests)
    assert {(e["kind"], e["action"]) for e in done.applied if e["action"] != "unchanged"} == {
        ("Prometheus", "configured"), ("Deployment", "configured")}
    spec = live_prometheus(admin, group, ns)["spec"]
    # the apply removed the item it took over, and with it the list (server-side apply keeps no set list without
    # items it owns none of): to it that is ``[]``, and the next resync is a no-op
    assert "enableFeatures" not in spec and spec["args"] == [], spec
    assert not admin.get(dep)["spec"]["template"]["spec"].get("tolerations")
    assert not_unchanged(run(admin, stack, ns, manifests)) == []


def test_an_item_a_controller_adds_to_an_empty_set_list_is_its_own(admin, ns, stack, group):
    manifests = [crd(group), prometheus(group, ns)]
    run(admin, stack, ns, manifests)
    path = f"/apis/{group}/v1/namespaces/{ns}/prometheuses/k8s"
    admin.request("PATCH", path, params={"fieldManager": "operator"}, body={"spec": {"enableFeatures": ["auto-gomemlimit"]}},
                  content_type=MERGE_PATCH)
    again = run(admin, stack, ns, manifests)
    assert not_unchanged(again) == []  # an apply would not remove it: it is not drift
    assert live_prometheus(admin, group, ns)["spec"]["enableFeatures"] == ["auto-gomemlimit"]


def test_empty_values_someone_removed_are_found_and_written_back(admin, ns, stack, group):
    manifests = [crd(group), prometheus(group, ns), *built_ins(ns)]
    run(admin, stack, ns, manifests)
    path = f"/apis/{group}/v1/namespaces/{ns}/prometheuses/k8s"
    admin.request("PATCH", path, params={"fieldManager": "janitor"}, content_type=MERGE_PATCH,
                  body={"spec": {"enableFeatures": None, "securityContext": None, "nodeSelector": None}})
    dep = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    admin.request("PATCH", dep, params={"fieldManager": "janitor"}, content_type=JSON_PATCH,
                  body=[{"op": "remove", "path": "/spec/template/spec/containers/0/securityContext"},
                        {"op": "remove", "path": "/spec/template/spec/affinity"}])
    check = run(admin, stack, ns, manifests, check_mode=True)
    lost = {e["kind"]: sorted(f for d in e.get("drift") or [] for f in d["fields"]) for e in check.applied if e.get("drift")}
    # a removed {} is lost (recorded), a removed set list [] is not (server-side apply records none)
    assert lost == {"Prometheus": ["spec.nodeSelector", "spec.securityContext"],
                    "Deployment": ["spec.template.spec.affinity",
                                   "spec.template.spec.containers[name=app].securityContext.capabilities"]}, lost
    run(admin, stack, ns, manifests)
    spec = live_prometheus(admin, group, ns)["spec"]
    # the apply that writes them back sends the [] too: the server puts it back with them
    assert spec["securityContext"] == {} and spec["nodeSelector"] == {} and spec["enableFeatures"] == [], spec
    template = admin.get(dep)["spec"]["template"]["spec"]
    assert template["affinity"] == {} and template["containers"][0]["securityContext"] == {"capabilities": {}}, template
    assert not_unchanged(run(admin, stack, ns, manifests)) == []
