"""Acceptance tests for the stack engine (issue 6), over HTTP against the `kube` fixture.

They call :class:`StackManager` directly (fast); ``test_stack_module.py`` runs the real module
through ansible-playbook. Each test uses its own namespaces and stack names and cleans up.
Write requests are counted by our client's own per-method counter, so the no-op assertions hold on
the simulator and on a real server alike.
"""

import base64
import contextlib
import json
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import IGNORE_ANNOTATION, STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import owner_mark
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def uid():
    return uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def client(kube):
    c, _ns = build_client({"kubeconfig": kube.kubeconfig}, maxsize=8)
    return c


@pytest.fixture(scope="module")
def record_ns(client):
    name = "ss-rec-" + uid()
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    delete_quietly(client, "/api/v1/namespaces/" + name)


@pytest.fixture
def ns(client):
    """A fresh namespace for one test (created outside any stack)."""
    name = "ss-" + uid()
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    delete_quietly(client, "/api/v1/namespaces/" + name)


def delete_quietly(client, path):
    with contextlib.suppress(ApiError):
        client.delete(path)


def writes(client):
    return sum(client.counts.get(m, 0) for m in WRITES)


def sync(client, record_ns, stack, resources, **kw):
    kw.setdefault("namespace", "default")
    m = StackManager(client, stack, record_namespace=record_ns, poll_interval=0.2, **kw)
    return m.sync(resources)


def cm(name, ns=None, **data):
    meta = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": "v"}}


def get(client, path):
    return client.get_or_none(path)


def cm_path(ns, name):
    return f"/api/v1/namespaces/{ns}/configmaps/{name}"


def names(entries):
    return sorted((e["kind"], e["namespace"], e["name"]) for e in entries)


def crd(group, kind, plural):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
            ],
        },
    }


def test_sync_then_prune_exactly_what_was_removed(client, record_ns):
    s = uid()
    ns_name, group = "ss-app-" + s, f"s{s}.example.com"
    stack = "acc-" + s
    keep_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "ss-keep-" + s}, "rules": []}
    gone_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "ss-gone-" + s}, "rules": []}
    # a cluster-scoped manifest naming a namespace: applied cluster-scoped, with a warning
    ns_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "ss-nsd-" + s, "namespace": "default"}, "rules": []}
    widget = {"apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "w-keep"}, "spec": {"size": 1}}
    widget_gone = {"apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "w-gone"}, "spec": {"size": 2}}
    a = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns_name}},
        cm("keep", ns_name),
        cm("gone", ns_name),
        keep_role,
        gone_role,
        ns_role,
        crd(group, "Widget", "widgets"),
        widget,
        widget_gone,
    ]
    try:
        r = sync(client, record_ns, stack, a, namespace=ns_name)
        assert r.counts["created"] == 9, r.result()
        assert any("cluster-scoped" in w for w in r.warnings)
        assert get(client, "/apis/rbac.authorization.k8s.io/v1/clusterroles/ss-nsd-" + s) is not None

        b = [x for x in a if x not in (gone_role, widget_gone) and x["metadata"]["name"] != "gone"]
        r = sync(client, record_ns, stack, b, namespace=ns_name)
        assert names(r.pruned) == sorted([("ClusterRole", None, "ss-gone-" + s), ("ConfigMap", ns_name, "gone"), ("Widget", ns_name, "w-gone")])
        assert r.counts["unchanged"] == len(b)
        assert get(client, cm_path(ns_name, "gone")) is None or get(client, cm_path(ns_name, "gone"))["metadata"].get("deletionTimestamp")
        for role in ("ss-keep-", "ss-nsd-"):
            assert get(client, "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + role + s) is not None
        assert get(client, f"/apis/{group}/v1/namespaces/{ns_name}/widgets/w-keep") is not None

        before = writes(client)
        r = sync(client, record_ns, stack, b, namespace=ns_name)
        assert not r.changed and r.counts["unchanged"] == len(b) and not r.pruned
        assert writes(client) == before, client.counts
    finally:
        StackManager(client, stack, record_namespace=record_ns, poll_interval=0.2).delete_all()
        for role in ("ss-keep-", "ss-nsd-", "ss-gone-"):
            delete_quietly(client, "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + role + s)
        delete_quietly(client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets." + group)
        delete_quietly(client, "/api/v1/namespaces/" + ns_name)


def test_out_of_band_edit_is_reverted(client, record_ns, ns):
    stack = "oob-" + uid()
    sync(client, record_ns, stack, [cm("c", ns, a="1")])
    client.request(
        "PATCH", cm_path(ns, "c"), params={"fieldManager": "kubectl-edit"}, body={"data": {"a": "edited"}}, content_type="application/merge-patch+json"
    )
    r = sync(client, record_ns, stack, [cm("c", ns, a="1")])
    assert [x["action"] for x in r.applied] == ["configured"]
    assert get(client, cm_path(ns, "c"))["data"]["a"] == "1"


def test_protected_objects_are_never_pruned(client, record_ns, ns):
    stack, other = "prot-" + uid(), "other-" + uid()
    sync(client, record_ns, stack, [cm("owner", ns), cm("ignored", ns), cm("plain", ns)])
    sync(client, record_ns, other, [cm("theirs", ns)])
    owner = get(client, cm_path(ns, "owner"))
    # foreign object: no label
    client.create(f"/api/v1/namespaces/{ns}/configmaps", cm("foreign", ns))
    # a copy of the stack's labels and annotations onto another object (operators do this)
    copied = cm("copied", ns)
    copied["metadata"]["labels"] = owner["metadata"]["labels"]
    copied["metadata"]["annotations"] = owner["metadata"]["annotations"]
    client.create(f"/api/v1/namespaces/{ns}/configmaps", copied)
    # a controller-made child carrying the label *and* a correct mark, but with ownerReferences
    child = cm("child", ns)
    child["metadata"]["labels"] = {STACK_LABEL: stack}
    child["metadata"]["annotations"] = {"stacksync.io/owner": owner_mark(stack, ObjectId("", "ConfigMap", ns, "child"))}
    child["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]
    client.create(f"/api/v1/namespaces/{ns}/configmaps", child)
    # opt-out added on the live object
    client.request(
        "PATCH",
        cm_path(ns, "ignored"),
        params={"fieldManager": "human"},
        body={"metadata": {"annotations": {IGNORE_ANNOTATION: "true"}}},
        content_type="application/merge-patch+json",
    )

    r = sync(client, record_ns, stack, [cm("owner", ns)])
    assert names(r.pruned) == [("ConfigMap", ns, "plain")]
    for name in ("owner", "ignored", "foreign", "copied", "child", "theirs"):
        assert get(client, cm_path(ns, name)) is not None, name
    reasons = dict((e["name"], e["reason"]) for e in r.skipped)
    assert "ownerReferences" in reasons["child"] and "ignore" in reasons["ignored"]
    assert "owner mark" in reasons["copied"]


def test_controller_children_inheriting_labels_are_not_pruned(client, record_ns, ns, kube):
    stack = "dep-" + uid()
    labels = {"app": "web", STACK_LABEL: stack}
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        },
    }
    sync(client, record_ns, stack, [dep])
    deadline = time.time() + 20
    rs = []
    while time.time() < deadline and not rs:
        rs = client.list(f"/apis/apps/v1/namespaces/{ns}/replicasets", label_selector=STACK_LABEL + "=" + stack)
        time.sleep(0.3)
    if not rs:
        pytest.skip("no Deployment controller on this cluster")
    # even a full scan of every kind (which lists ReplicaSets and Pods by the label) prunes nothing
    r = sync(client, record_ns, stack, [dep], full_prune_scan=True)
    assert not r.pruned
    assert client.list(f"/apis/apps/v1/namespaces/{ns}/replicasets")


def test_failed_apply_means_no_prune(client, record_ns, ns):
    stack = "fail-" + uid()
    sync(client, record_ns, stack, [cm("a", ns), cm("b", ns)])
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad", "namespace": ns}, "data": {"k": 1}}
    with pytest.raises(StackError) as err:
        sync(client, record_ns, stack, [cm("a", ns), bad])
    assert "bad" in str(err.value)
    assert not err.value.changeset.pruned
    assert get(client, cm_path(ns, "b")) is not None


def test_two_stacks_in_one_namespace_are_independent(client, record_ns, ns):
    s1, s2 = "one-" + uid(), "two-" + uid()
    sync(client, record_ns, s1, [cm("a", ns)])
    sync(client, record_ns, s2, [cm("b", ns)])
    r = sync(client, record_ns, s1, [cm("a2", ns)])
    assert names(r.pruned) == [("ConfigMap", ns, "a")]
    assert get(client, cm_path(ns, "b")) is not None
    r = sync(client, record_ns, s2, [cm("b", ns)])
    assert not r.changed


def test_object_moved_between_stacks_survives(client, record_ns, ns):
    x, y = "x-" + uid(), "y-" + uid()
    sync(client, record_ns, x, [cm("moving", ns), cm("x-only", ns)])
    sync(client, record_ns, y, [cm("y-only", ns)])
    with pytest.raises(StackError) as err:
        sync(client, record_ns, y, [cm("y-only", ns), cm("moving", ns)], fail_on_shared=True)
    assert x in str(err.value)
    assert get(client, cm_path(ns, "moving"))["metadata"]["labels"][STACK_LABEL] == x
    r = sync(client, record_ns, y, [cm("y-only", ns), cm("moving", ns)], phase="apply")
    assert any(x in w for w in r.warnings)
    r = sync(client, record_ns, x, [cm("x-only", ns)], phase="prune")
    assert not r.pruned
    assert get(client, cm_path(ns, "moving"))["metadata"]["labels"][STACK_LABEL] == y


def test_check_mode_writes_nothing(client, record_ns, ns):
    stack = "chk-" + uid()
    sync(client, record_ns, stack, [cm("a", ns), cm("b", ns)])
    versions = dict((n, get(client, cm_path(ns, n))["metadata"]["resourceVersion"]) for n in ("a", "b"))
    counts = dict(client.counts)
    r = sync(client, record_ns, stack, [cm("a", ns, k="changed"), cm("new", ns)], check_mode=True, diff=True)
    assert r.changed
    assert sorted((e["name"], e["action"]) for e in r.applied) == [("a", "configured"), ("new", "created")]
    assert names(r.pruned) == [("ConfigMap", ns, "b")]
    for method in ("POST", "PUT", "DELETE"):
        assert client.counts.get(method, 0) == counts.get(method, 0), method
    assert get(client, cm_path(ns, "new")) is None
    for n, rv in versions.items():
        assert get(client, cm_path(ns, n))["metadata"]["resourceVersion"] == rv
    diffs = dict((d["after_header"], d) for d in r.diff)
    assert diffs[f"ConfigMap {ns}/a"]["after"]["data"] == {"k": "changed"}
    assert diffs[f"ConfigMap {ns}/b"]["after"] == {}


def test_secret_values_never_leak(client, record_ns, ns):
    stack = "sec-" + uid()
    value, value2 = "s3cr3t-" + uid(), "t0ps3cr3t-" + uid()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": ns}, "stringData": {"password": value}}
    r1 = sync(client, record_ns, stack, [secret], diff=True)
    secret2 = json.loads(json.dumps(secret))
    secret2["stringData"]["password"] = value2
    r2 = sync(client, record_ns, stack, [secret2], diff=True)
    assert [a["action"] for a in r2.applied] == ["configured"]
    r3 = sync(client, record_ns, stack, [secret2], diff=True)
    assert [a["action"] for a in r3.applied] == ["unchanged"]
    live = get(client, f"/api/v1/namespaces/{ns}/secrets/creds")
    assert base64.b64decode(live["data"]["password"]).decode() == value2
    assert live["metadata"]["annotations"]["stacksync.io/checksum"].startswith("hmac-sha256:")
    text = json.dumps([r.result() for r in (r1, r2, r3)] + [r.diff for r in (r1, r2, r3)])
    for v in (value, value2):
        assert v not in text
        assert base64.b64encode(v.encode()).decode() not in text
    assert "<redacted, changed>" in json.dumps(r2.diff)
    r = sync(client, record_ns, stack, [cm("other", ns)], diff=True)
    assert names(r.pruned) == [("Secret", ns, "creds")]
    assert value2 not in json.dumps(r.diff) and base64.b64encode(value2.encode()).decode() not in json.dumps(r.diff)


def test_empty_desired_set_refuses_to_prune(client, record_ns, ns):
    stack = "empty-" + uid()
    sync(client, record_ns, stack, [cm("a", ns)])
    with pytest.raises(StackError, match="allow_empty"):
        sync(client, record_ns, stack, [])
    assert get(client, cm_path(ns, "a")) is not None
    r = sync(client, record_ns, stack, [], allow_empty=True)
    assert names(r.pruned) == [("ConfigMap", ns, "a")]


def test_namespace_holding_foreign_objects_is_not_pruned(client, record_ns):
    stack, name = "nsp-" + uid(), "ss-nsp-" + uid()
    try:
        sync(client, record_ns, stack, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, cm("mine", name)])
        client.create(f"/api/v1/namespaces/{name}/configmaps", cm("users-own", name))
        r = sync(client, record_ns, stack, [], allow_empty=True)
        assert names(r.pruned) == [("ConfigMap", name, "mine")]
        skipped = dict((e["name"], e["reason"]) for e in r.skipped)
        assert "users-own" in skipped[name]
        ns_obj = get(client, "/api/v1/namespaces/" + name)
        assert ns_obj is not None and not ns_obj["metadata"].get("deletionTimestamp")
        # once the user's object is gone, the next run prunes the namespace (what the cluster puts there
        # by itself -- default ServiceAccount, kube-root-ca.crt -- does not count)
        client.delete(cm_path(name, "users-own"))
        r = sync(client, record_ns, stack, [], allow_empty=True)
        assert names(r.pruned) == [("Namespace", None, name)]
    finally:
        delete_quietly(client, "/api/v1/namespaces/" + name)


def test_namespace_contents_check_lists_each_kind_once_and_stops_early(client, record_ns, monkeypatch):
    """Pruning a Namespace lists its contents: each namespaced kind at most once (Events never), and
    none beyond the likely holders once one of them holds a foreign object."""
    stack, name = "nsq-" + uid(), "ss-nsq-" + uid()
    inside = f"/namespaces/{name}/"
    lists = []
    real_get = client.get

    def counting_get(path, params=None):
        if inside in path and not path.startswith("/api/v1/namespaces/" + name + "/configmaps/"):
            lists.append(path)
        return real_get(path, params)

    try:
        sync(client, record_ns, stack, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, cm("mine", name)])
        client.create(f"/api/v1/namespaces/{name}/configmaps", cm("users-own", name))
        monkeypatch.setattr(client, "get", counting_get)
        r = sync(client, record_ns, stack, [], allow_empty=True)
        assert "users-own" in dict((e["name"], e["reason"]) for e in r.skipped)[name]
        assert len(lists) == len(set(lists)) and not any("/events" in p for p in lists), lists
        assert len(lists) <= 14, lists  # the likely holders only (the old scan listed ~40 kinds)
        first = len(lists)
        del lists[:]
        monkeypatch.setattr(client, "get", real_get)
        client.delete(cm_path(name, "users-own"))
        monkeypatch.setattr(client, "get", counting_get)
        r = sync(client, record_ns, stack, [], allow_empty=True)
        assert names(r.pruned) == [("Namespace", None, name)]
        # an empty namespace: every other listable namespaced kind is read, once
        assert len(lists) == len(set(lists)) > first and not any("/events" in p for p in lists), lists
    finally:
        monkeypatch.setattr(client, "get", real_get)
        delete_quietly(client, "/api/v1/namespaces/" + name)


def test_immutable_field_fails_then_recreates(client, record_ns, ns):
    stack = "imm-" + uid()
    obj = cm("frozen", ns, a="1")
    obj["immutable"] = True
    sync(client, record_ns, stack, [obj])
    obj2 = json.loads(json.dumps(obj))
    obj2["data"]["a"] = "2"
    try:
        sync(client, record_ns, stack, [obj2])
    except StackError as e:
        err = e
    else:
        pytest.fail("changing an immutable ConfigMap did not fail")
    assert "frozen" in str(err) and "immutable" in str(err) and "data" in str(err)
    r = sync(client, record_ns, stack, [obj2], recreate_on_immutable=True)
    assert [a["action"] for a in r.applied] == ["recreated"] and r.counts["recreated"] == 1
    assert get(client, cm_path(ns, "frozen"))["data"]["a"] == "2"


def test_a_service_whose_cluster_ip_changed_is_recreated_when_asked(client, record_ns, ns):
    # the server says "may not change once set" for spec.clusterIPs[0]: an immutable field like any other
    stack = "svc-" + uid()
    path = f"/api/v1/namespaces/{ns}/services/web"
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    sync(client, record_ns, stack, [svc])
    first = get(client, path)
    ip = "10.96.0.123" if first["spec"]["clusterIP"] != "10.96.0.123" else "10.96.0.124"
    moved = json.loads(json.dumps(svc))
    moved["spec"]["clusterIP"] = ip
    with pytest.raises(StackError) as err:
        sync(client, record_ns, stack, [moved])
    assert (f"Service {ns}/web: cannot change immutable field(s) spec.clusterIPs[0] (set recreate_on_immutable"
            in str(err.value)) and "may not change once set" in str(err.value)
    r = sync(client, record_ns, stack, [moved], recreate_on_immutable=True, check_mode=True)
    assert [a["action"] for a in r.applied] == ["recreated"] and get(client, path)["metadata"]["uid"] == first["metadata"]["uid"]
    assert any("would be deleted and created again: immutable field(s) spec.clusterIPs[0] changed" in w for w in r.warnings)
    r = sync(client, record_ns, stack, [moved], recreate_on_immutable=True)
    live = get(client, path)
    assert [a["action"] for a in r.applied] == ["recreated"] and "may not change once set" in r.applied[0]["reason"]
    assert live["metadata"]["uid"] != first["metadata"]["uid"] and live["spec"]["clusterIP"] == ip
    assert any(f"Service {ns}/web" in w and "was deleted and created again" in w for w in r.warnings), r.warnings


def test_a_recreate_the_server_would_refuse_to_create_deletes_nothing(client, record_ns, ns):
    """A clusterIP outside the service range: the create of a recreate would be refused, so the Service is not
    deleted (it would stay gone); check mode says so the same way."""
    stack = "svc-" + uid()
    path = f"/api/v1/namespaces/{ns}/services/web"
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
    sync(client, record_ns, stack, [svc])
    first = get(client, path)
    svc["spec"]["clusterIP"] = first["spec"]["clusterIP"]  # git names the IP it has
    sync(client, record_ns, stack, [svc])
    far = json.loads(json.dumps(svc))
    far["spec"]["clusterIP"] = "1.2.3.4"  # a typo: outside the service range
    for check_mode, said in ((True, "would not be deleted"), (False, "was not deleted")):
        with pytest.raises(StackError) as err:
            sync(client, record_ns, stack, [far], recreate_on_immutable=True, check_mode=check_mode)
        assert (f"Service {ns}/web: immutable field(s) spec.clusterIPs[0] changed, but the server refuses the object "
                f"as it would be created again, so it {said}: ") in str(err.value), str(err.value)
        assert "failed to allocate IP 1.2.3.4" in str(err.value)
        assert get(client, path)["metadata"]["uid"] == first["metadata"]["uid"]


def statefulset(name, ns, storage, **annotations):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations},
            "spec": {"selector": {"matchLabels": {"app": name}}, "serviceName": name,
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "db", "image": "db:1"}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}}]}}


def test_a_statefulset_whose_volume_claim_templates_changed_fails_then_is_recreated_when_asked(client, record_ns, ns):
    # the server refuses the spec whole ("updates to statefulset spec for fields other than ... are forbidden"):
    # an immutable-field refusal like any other
    stack = "sts-" + uid()
    path = f"/apis/apps/v1/namespaces/{ns}/statefulsets/db"
    sync(client, record_ns, stack, [statefulset("db", ns, "10Gi")])
    first = get(client, path)["metadata"]["uid"]
    with pytest.raises(StackError) as err:
        sync(client, record_ns, stack, [statefulset("db", ns, "20Gi")])
    assert f"StatefulSet.apps {ns}/db: cannot change immutable field(s) spec (set recreate_on_immutable" in str(err.value)
    asked = statefulset("db", ns, "20Gi", **{"stacksync.io/recreate-on-immutable": "true"})
    r = sync(client, record_ns, stack, [asked], check_mode=True)
    assert [a["action"] for a in r.applied] == ["recreated"] and get(client, path)["metadata"]["uid"] == first
    r = sync(client, record_ns, stack, [asked])
    live = get(client, path)
    assert [a["action"] for a in r.applied] == ["recreated"] and live["metadata"]["uid"] != first
    assert live["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "20Gi"


def test_unknown_kind_and_duplicates_fail_before_any_write(client, record_ns, ns):
    stack = "val-" + uid()
    before = writes(client)
    bogus = {"apiVersion": "nope.example.com/v1", "kind": "Nope", "metadata": {"name": "x", "namespace": ns}}
    with pytest.raises(StackError, match="Nope"):
        sync(client, record_ns, stack, [cm("a", ns), bogus])
    with pytest.raises(StackError, match="duplicate"):
        sync(client, record_ns, stack, [cm("a", ns), cm("a", ns)])
    with pytest.raises(StackError, match=r"metadata\.name"):
        sync(client, record_ns, stack, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}])
    assert writes(client) == before
    assert get(client, cm_path(ns, "a")) is None


def test_removed_api_versions_fail_naming_what_the_cluster_serves_and_prune_nothing(client, record_ns, ns):
    stack = "old-" + uid()
    sync(client, record_ns, stack, [cm("a", ns), cm("b", ns)])
    before = writes(client)
    ingress = {"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "web", "namespace": ns},
               "spec": {"backend": {"serviceName": "web", "servicePort": 80}}}
    hpa = {"apiVersion": "autoscaling/v2beta2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": ns},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 2}}
    with pytest.raises(StackError) as err:
        sync(client, record_ns, stack, [cm("a", ns), ingress, hpa])
    message = str(err.value)
    assert "Ingress is served as apiVersion networking.k8s.io/v1" in message, message
    assert "not served in version v2beta2" in message and "autoscaling/v2" in message, message
    assert writes(client) == before and get(client, cm_path(ns, "b")) is not None  # nothing written, nothing pruned


def test_a_new_commit_of_the_same_manifests_writes_only_the_record(client, record_ns, ns):
    """A sync whose only change is the commit (an empty commit, a commit elsewhere in the repository) takes
    the Lease and saves the record, without observing the stack a second time under the Lease."""
    stack = "rec-" + uid()
    resources = [cm("a", ns), cm("b", ns), {"apiVersion": "v1", "kind": "ServiceAccount",
                                            "metadata": {"name": "sa", "namespace": ns}}]
    record = f"/api/v1/namespaces/{record_ns}/configmaps/stacksync-{stack}"

    def counted(commit):
        before = dict(client.counts)
        r = sync(client, record_ns, stack, resources, commit=commit)
        return r, dict((m, client.counts.get(m, 0) - before.get(m, 0)) for m in set(client.counts) | set(before))

    try:
        sync(client, record_ns, stack, resources, commit="c1")
        same, same_requests = counted("c1")  # nothing to write: no Lease, no record
        assert not same.changed and writes_in(same_requests) == 0, same_requests
        new, new_requests = counted("c2")
        assert not new.changed and new.counts["unchanged"] == 3 and not new.pruned, new.result()
        assert get(client, record)["data"]["commit"] == "c2"
        # the Lease (taken, released) and the record's apply are the only writes; the only extra read is the
        # record, read again under the Lease (observing again would list both kinds once more)
        assert writes_in(new_requests) == 3 and new_requests.get("PATCH", 0) == 1, new_requests
        assert new_requests.get("GET", 0) - same_requests.get("GET", 0) == 1, (new_requests, same_requests)
    finally:
        StackManager(client, stack, record_namespace=record_ns, poll_interval=0.2).delete_all()


def test_a_record_written_by_another_run_meanwhile_means_observing_again(client, record_ns, ns):
    """The record-only save is skipped when the record changed between the observation and the Lease (another
    run recorded in between): the run observes again under the Lease and records from what it sees."""
    import contextlib as _contextlib

    stack = "rec2-" + uid()
    resources = [cm("a", ns)]
    record = f"/api/v1/namespaces/{record_ns}/configmaps/stacksync-{stack}"

    class Raced(StackManager):
        @_contextlib.contextmanager
        def _locked(self):
            # another run recorded after this one observed, before it took the Lease
            client.request("PATCH", record, body={"data": {"commit": "other"}},
                           content_type="application/merge-patch+json")
            self.raced = True
            with super()._locked() as lock:
                yield lock

    try:
        sync(client, record_ns, stack, resources, commit="c1")
        before = client.counts.get("GET", 0)
        raced = Raced(client, stack, record_namespace=record_ns, namespace="default", poll_interval=0.2, commit="c2")
        r = raced.sync(resources)
        raced_gets = client.counts.get("GET", 0) - before
        assert raced.raced and not r.changed and r.counts["unchanged"] == 1
        assert get(client, record)["data"]["commit"] == "c2"  # recorded from what it observed again
        before = client.counts.get("GET", 0)
        sync(client, record_ns, stack, resources, commit="c3")  # no race: the record-only save
        assert raced_gets == client.counts.get("GET", 0) - before + 2  # + the second observation: list, record
    finally:
        StackManager(client, stack, record_namespace=record_ns, poll_interval=0.2).delete_all()


def writes_in(requests):
    return sum(requests.get(m, 0) for m in WRITES)


def test_state_absent_deletes_the_stack_and_its_record(client, record_ns, ns):
    stack = "abs-" + uid()
    sync(client, record_ns, stack, [cm("a", ns), cm("b", ns)], commit="abc123")
    rec = get(client, f"/api/v1/namespaces/{record_ns}/configmaps/stacksync-{stack}")
    assert rec["data"]["commit"] == "abc123" and rec["data"]["groupKinds"] == "ConfigMap"
    r = StackManager(client, stack, record_namespace=record_ns).delete_all()
    assert names(r.pruned) == [("ConfigMap", ns, "a"), ("ConfigMap", ns, "b")]
    assert get(client, f"/api/v1/namespaces/{record_ns}/configmaps/stacksync-{stack}") is None


def test_lock_held_by_another_run_blocks(client, record_ns, ns):
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LeaseLock

    stack = "lock-" + uid()
    holder = LeaseLock(client, record_ns, stack, duration=30).acquire()
    try:
        with pytest.raises(StackError, match="locked"):
            sync(client, record_ns, stack, [cm("a", ns)], lock_timeout=1)
    finally:
        holder.release()
    r = sync(client, record_ns, stack, [cm("a", ns)], lock_timeout=1)
    assert r.counts["created"] == 1


def test_check_mode_first_sync_with_new_namespace_and_crd(client, record_ns):
    s = uid()
    ns_name, group, stack = "ss-chk-" + s, f"c{s}.example.com", "chk1-" + s
    resources = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns_name}},
        cm("a", ns_name),
        crd(group, "Gadget", "gadgets"),
        {"apiVersion": group + "/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": ns_name}},
    ]
    before = dict(client.counts)
    r = sync(client, record_ns, stack, resources, check_mode=True)
    assert r.counts["created"] == 4 and r.changed
    # the ConfigMap was dry-run in a stand-in namespace (created, then deleted: one POST of it, one of an access
    # review, one DELETE); the Gadget, whose CRD the run would create, is listed as not validated
    assert client.counts.get("PUT", 0) == before.get("PUT", 0)
    assert client.counts.get("POST", 0) == before.get("POST", 0) + 2 and client.counts.get("DELETE", 0) == before.get("DELETE", 0) + 1
    validated = {e["kind"]: e.get("not_validated") for e in r.applied}
    assert validated["ConfigMap"] is None and validated["Gadget"].startswith("its kind is served by a CustomResourceDefinition")
    assert get(client, "/api/v1/namespaces/" + ns_name) is None
    assert not [n for n in client.list("/api/v1/namespaces") if n["metadata"]["name"].startswith("stacksync-check-")
                and n["metadata"]["labels"].get("stacksync.io/check-stand-in") == ns_name]
    assert get(client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets." + group) is None


def crd_and_gadget(group, ns):
    return [crd(group, "Gadget", "gadgets"),
            {"apiVersion": group + "/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": ns}}]


def test_check_mode_after_the_crd_was_deleted_reads_its_custom_resources_as_created(client, record_ns, ns, tmp_path):
    # someone else deleted the CRD; the discovery cache written before still lists the kind
    s = uid()
    group, stack = f"c{s}.example.com", "chk2-" + s
    resources = crd_and_gadget(group, ns)
    cache = str(tmp_path / "discovery")
    assert sync(client, record_ns, stack, resources, discovery_cache_dir=cache).counts["created"] == 2
    crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets." + group
    client.delete(crd_path)
    deadline = time.time() + 60
    while get(client, crd_path) is not None and time.time() < deadline:
        time.sleep(0.2)
    r = sync(client, record_ns, stack, resources, check_mode=True, discovery_cache_dir=cache)
    assert r.counts["created"] == 2 and not r.errors, r.errors
    assert get(client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets." + group) is None


def test_a_run_that_prunes_a_crd_drops_the_discovery_cache(client, record_ns, ns, tmp_path):
    # the cache written while the CRD existed lists its kind; the run that deletes the CRD drops it
    s = uid()
    group, stack = f"c{s}.example.com", "dc-" + s
    resources = crd_and_gadget(group, ns)
    cache = tmp_path / "discovery"
    assert sync(client, record_ns, stack, resources, discovery_cache_dir=str(cache)).counts["created"] == 2
    assert any(group in f.read_text() for f in cache.glob("stacksync-discovery-*.json"))
    r = sync(client, record_ns, stack, [cm("c", ns)], discovery_cache_dir=str(cache))
    assert r.counts["pruned"] == 2, r.counts
    assert not any(group in f.read_text() for f in cache.glob("stacksync-discovery-*.json"))


def test_rbac_limited_credentials(client, kube):
    if not kube.limited_kubeconfig:
        pytest.skip("no limited kubeconfig for this cluster")
    ns = "ss-rbac-" + uid()
    stack = "rbac-" + uid()
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        rules = [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "patch", "update"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
        ]
        client.create(
            f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}, "rules": rules},
        )
        client.create(
            f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "r"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}],
            },
        )
        limited, _ = build_client({"kubeconfig": kube.limited_kubeconfig})
        deadline = time.time() + 15
        while True:
            try:
                r = sync(limited, ns, stack, [cm("a", ns), cm("b", ns)])
                break
            except StackError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)  # RBAC caches catching up
        assert r.counts["created"] == 2
        assert any("all namespaces" in w for w in r.warnings)
        r = sync(limited, ns, stack, [cm("a", ns)])
        assert not r.pruned
        refused = [e for e in r.skipped if e["name"] == "b"]
        assert refused and "delete refused" in refused[0]["reason"]
        assert get(client, cm_path(ns, "b")) is not None
        rec = get(client, f"/api/v1/namespaces/{ns}/configmaps/stacksync-{stack}")
        assert rec["data"]["groupKinds"] == "ConfigMap"
        # with delete allowed, the next run retries and prunes it
        rules[0]["verbs"].append("delete")
        client.replace(
            f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/r",
            dict(get(client, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/r"), rules=rules),
        )
        deadline = time.time() + 15
        while True:
            r = sync(limited, ns, stack, [cm("a", ns)])
            if r.pruned or time.time() > deadline:
                break
            time.sleep(0.5)
        assert names(r.pruned) == [("ConfigMap", ns, "b")]
    finally:
        delete_quietly(client, "/api/v1/namespaces/" + ns)


def test_a_confined_stack_with_namespace_credentials_still_refuses_another_stacks_object(client, kube, record_ns):
    """The set-up docs/security.md recommends: a tenant's credentials may list only its namespace. Whether a desired
    object belongs to another stack is then read in that namespace (a cluster-wide list is forbidden), and a confined
    stack refuses it before any write, as it does with the platform's credentials."""
    if not kube.limited_kubeconfig:
        pytest.skip("no limited kubeconfig for this cluster")
    ns, tenant, platform = "ss-share-" + uid(), "tenant-" + uid(), "platform-" + uid()
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        rules = [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["*"]},
                 {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]}]
        client.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
                      {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
                       "rules": rules})
        client.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                      {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "r"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                       "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}]})
        assert sync(client, record_ns, platform, [cm("default-deny", ns, k="platform")]).counts["created"] == 1
        limited, _ = build_client({"kubeconfig": kube.limited_kubeconfig})
        confined = {"allowed_namespaces": [ns]}
        deadline = time.time() + 15
        while True:
            try:
                sync(limited, ns, tenant, [cm("default-deny", ns, k="opened")], confinement=confined)
                raise AssertionError("the confined stack took the platform's object over")
            except StackError as e:
                refused = str(e)
                if "belong to other stacks" in refused or time.time() > deadline:
                    break
                time.sleep(0.5)  # RBAC caches catching up
        assert f"ConfigMap {ns}/default-deny" in refused and f"(stack '{platform}')" in refused, refused
        live = get(client, cm_path(ns, "default-deny"))
        assert live["data"] == {"k": "platform"} and live["metadata"]["labels"][STACK_LABEL] == platform
    finally:
        delete_quietly(client, "/api/v1/namespaces/" + ns)


def test_expired_lease_is_taken_over(client, record_ns, ns):
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LeaseLock

    stack = "crash-" + uid()
    dead = LeaseLock(client, record_ns, stack, duration=1).acquire()
    dead._stop.set()  # the holder "crashes": no renewals, no release
    time.sleep(2.2)
    r = sync(client, record_ns, stack, [cm("a", ns)], lock_timeout=5)
    assert r.counts["created"] == 1


def test_inspect_reports_status_per_object(client, record_ns, ns):
    stack = "info-" + uid()
    sync(client, record_ns, stack, [cm("same", ns), cm("edited", ns), cm("old", ns), cm("gone", ns)], commit="feed")
    client.request("PATCH", cm_path(ns, "edited"), params={"fieldManager": "human"}, body={"data": {"k": "x"}}, content_type="application/merge-patch+json")
    m = StackManager(client, stack, record_namespace=record_ns, namespace="default")
    before = writes(client)
    report = m.inspect([cm("same", ns), cm("edited", ns), cm("old", ns, k="new"), cm("new", ns)])
    assert writes(client) == before
    status = dict((o["name"], o["status"]) for o in report["objects"])
    assert status == {"same": "in_sync", "edited": "drifted", "old": "out_of_date", "gone": "would_prune", "new": "missing"}
    assert report["commit"] == "feed" and report["group_kinds"] == ["ConfigMap"]


def test_wait_with_user_conditions(client, record_ns, ns):
    stack = "wait-" + uid()
    ok = [{"kind": "ConfigMap", "group": "", "expression": "data.k == 'v'"}]
    r = sync(client, record_ns, stack, [cm("a", ns)], wait=True, wait_timeout=5, wait_conditions=ok)
    assert r.counts["created"] == 1
    never = [{"kind": "ConfigMap", "expression": "data.k == 'never'"}]
    with pytest.raises(StackError, match="timed out"):
        sync(client, record_ns, stack, [cm("a", ns, k="w")], wait=True, wait_timeout=1, wait_conditions=never)


def test_a_new_api_version_in_git_updates_the_same_object(client, record_ns, ns, tmp_path):
    # an HPA from autoscaling/v1 to v2, a CRD gaining v2 (v1 still served and stored) and its CR moving to v2 in the
    # same commit: updated in place (same uid), nothing pruned, then a no-op; with a discovery cache written before
    s = uid()
    group, stack, cache = f"v{s}.example.com", "ver-" + s, str(tmp_path / "discovery")
    v1_crd = crd(group, "Gadget", "gadgets")
    v2_crd = json.loads(json.dumps(v1_crd))
    v2_crd["spec"]["versions"].append(dict(v2_crd["spec"]["versions"][0], name="v2", storage=False))
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    hpa_v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h", "namespace": ns},
              "spec": {"scaleTargetRef": target, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}}
    hpa_v2 = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h", "namespace": ns},
              "spec": {"scaleTargetRef": target, "maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {
                  "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]}}

    def gadget(version, size):
        return {"apiVersion": f"{group}/{version}", "kind": "Gadget", "metadata": {"name": "g", "namespace": ns},
                "spec": {"size": size}}

    paths = [f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/h", f"/apis/{group}/v1/namespaces/{ns}/gadgets/g"]
    try:
        r = sync(client, record_ns, stack, [hpa_v1, v1_crd, gadget("v1", 1)], discovery_cache_dir=cache)
        assert r.counts["created"] == 3, r.result()
        uids = [get(client, p)["metadata"]["uid"] for p in paths]
        moved = [hpa_v2, v2_crd, gadget("v2", 2)]
        r = sync(client, record_ns, stack, moved, discovery_cache_dir=cache)
        assert not r.errors and not r.pruned and r.counts["configured"] == 3, r.result()
        assert [get(client, p)["metadata"]["uid"] for p in paths] == uids
        assert get(client, paths[1])["spec"]["size"] == 2
        assert get(client, paths[0])["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
        r = sync(client, record_ns, stack, moved, discovery_cache_dir=cache)
        assert not r.changed and r.counts["unchanged"] == 3, r.result()
    finally:
        StackManager(client, stack, record_namespace=record_ns).delete_all()
