"""contents.py: what keeps a Namespace, and the order its contents are scanned in."""

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import contents
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo


def test_namespace_blockers_ignore_what_the_cluster_puts_there():
    ns = "n"
    prune = {ObjectId("", "ConfigMap", ns, "mine"), ObjectId("", "Service", ns, "svc")}
    objs = [
        (ObjectId("", "ServiceAccount", ns, "default"), {}),
        (ObjectId("", "ConfigMap", ns, "kube-root-ca.crt"), {}),
        (ObjectId("", "ConfigMap", ns, "openshift-service-ca.crt"), {}),
        (ObjectId("", "Event", ns, "e"), {}),
        (ObjectId("", "ConfigMap", ns, "mine"), {}),
        (ObjectId("", "Service", ns, "svc"), {"metadata": {"uid": "svc-uid"}}),
        (ObjectId("", "Endpoints", ns, "svc"), {}),
        # owned by the Service being pruned (an owner that stays would keep the namespace: below)
        (ObjectId("discovery.k8s.io", "EndpointSlice", ns, "svc-x"), {"metadata": {"ownerReferences": [{"uid": "svc-uid"}]}}),
        (ObjectId("", "ConfigMap", ns, "users"), {}),
        (ObjectId("", "ServiceAccount", ns, "robot"), {}),
    ]
    assert contents.namespace_blockers(ns, objs, prune) == [ObjectId("", "ConfigMap", ns, "users"), ObjectId("", "ServiceAccount", ns, "robot")]


def test_namespace_scan_rounds_skip_events_and_put_likely_holders_first():
    verbs = ("list", "delete")
    infos = [ResourceInfo("", "v1", "Event", "events", True, verbs),
             ResourceInfo("events.k8s.io", "v1", "Event", "events", True, verbs),
             ResourceInfo("", "v1", "ConfigMap", "configmaps", True, verbs),
             ResourceInfo("", "v1", "Namespace", "namespaces", False, verbs),
             ResourceInfo("example.com", "v1", "Widget", "widgets", True, verbs),
             ResourceInfo("apps", "v1", "Deployment", "deployments", True, verbs)]
    first, rest = contents.namespace_scan_rounds(infos)
    assert [i.kind for i in first] == ["ConfigMap", "Deployment"] and [i.kind for i in rest] == ["Widget"]


NS = "apps"


def obj(kind, name, uid, owners=(), group=""):
    meta = {"name": name, "namespace": NS, "uid": uid}
    if owners:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": o} for o in owners]
    return ObjectId(group, kind, NS, name), {"metadata": meta}


def test_a_namespace_with_only_what_goes_with_it_has_no_blockers():
    deploy = obj("Deployment", "web", "u-dep", group="apps")
    objects = [
        deploy,
        obj("ReplicaSet", "web-1", "u-rs", owners=["u-dep"], group="apps"),
        obj("Pod", "web-1-a", "u-pod", owners=["u-rs"]),  # grandchild of what we prune
        obj("ConfigMap", "kube-root-ca.crt", "u-ca"),  # the cluster's own
        obj("ServiceAccount", "default", "u-sa"),
        obj("Secret", "sa-token", "u-tok", owners=["u-sa"]),  # owned by the cluster's own object
    ]
    assert contents.namespace_blockers(NS, objects, {deploy[0]}, {"u-dep"}) == []


def test_an_owner_outside_the_prune_set_keeps_the_namespace():
    # a foreign object whose owner is a foreign cluster-scoped object (the owner is not in the namespace)
    foreign = obj("ConfigMap", "theirs", "u-1", owners=["u-cluster-scoped-foreign"])
    assert contents.namespace_blockers(NS, [foreign], set(), set()) == [foreign[0]]
    # the same object is harmless when its cluster-scoped owner is pruned by this run
    assert contents.namespace_blockers(NS, [foreign], set(), {"u-cluster-scoped-foreign"}) == []


def test_a_chain_through_a_foreign_object_keeps_the_namespace():
    objects = [obj("StatefulSet", "db", "u-db", group="apps"),  # someone else's, no owner: a blocker itself
               obj("Pod", "db-0", "u-pod", owners=["u-db"])]
    blockers = contents.namespace_blockers(NS, objects, set(), set())
    assert sorted(b.name for b in blockers) == ["db", "db-0"]


def test_two_owners_both_must_go():
    mine = obj("Deployment", "mine", "u-mine", group="apps")
    child = obj("ConfigMap", "shared-child", "u-c", owners=["u-mine", "u-other"])
    assert contents.namespace_blockers(NS, [mine, child], {mine[0]}, {"u-mine"}) == [child[0]]


def test_owner_cycle_does_not_loop_and_keeps():
    a = obj("ConfigMap", "a", "u-a", owners=["u-b"])
    b = obj("ConfigMap", "b", "u-b", owners=["u-a"])
    assert sorted(x.name for x in contents.namespace_blockers(NS, [a, b], set(), set())) == ["a", "b"]


def test_incomplete_listing_returns_only_certain_blockers():
    objects = [obj("Pod", "child", "u-p", owners=["u-unknown"]), obj("ConfigMap", "plain", "u-x")]
    assert [b.name for b in contents.namespace_blockers(NS, objects, set(), set(), complete=False)] == ["plain"]
    assert sorted(b.name for b in contents.namespace_blockers(NS, objects, set(), set())) == ["child", "plain"]


def test_endpoints_of_a_pruned_service_do_not_block():
    svc = ObjectId("", "Service", NS, "web")
    ep = obj("Endpoints", "web", "u-ep")
    other = obj("Endpoints", "db", "u-ep2")
    assert contents.namespace_blockers(NS, [ep, other], {svc}, set()) == [other[0]]


def managed(*managers):
    return {"metadata": {"managedFields": [{"manager": m, "operation": "Update"} for m in managers]}}


def test_the_clusters_own_objects_are_recognised_by_exact_name_never_by_suffix():
    ns = "n"
    objs = [
        (ObjectId("", "ConfigMap", ns, "kube-root-ca.crt"), managed("kube-controller-manager")),
        (ObjectId("", "ConfigMap", ns, "openshift-service-ca.crt"), managed("openshift-controller-manager")),
        (ObjectId("", "ServiceAccount", ns, "default"), {}),  # the real server records no fields for it
        # names that only end (or start) like the cluster's own are somebody's
        (ObjectId("", "ConfigMap", ns, "x-openshift-service-ca.crt"), managed("kubectl-create")),
        (ObjectId("", "ConfigMap", ns, "x-openshift-service-ca.crt-2"), {}),
        (ObjectId("", "ConfigMap", ns, "my-kube-root-ca.crt"), {}),
        (ObjectId("", "ServiceAccount", ns, "default-robot"), {}),
        (ObjectId("", "Secret", ns, "kube-root-ca.crt"), {}),  # the right name, not the cluster's kind
    ]
    assert contents.namespace_blockers(ns, objs, set()) == [oid for oid, _o in objs[3:]]


def test_an_object_with_a_cluster_name_written_by_someone_else_keeps_the_namespace():
    ns = "n"
    prune = {ObjectId("", "Service", ns, "svc")}
    objs = [
        # on a cluster without OpenShift, anybody can create the name
        (ObjectId("", "ConfigMap", ns, "openshift-service-ca.crt"), managed("kubectl-create")),
        (ObjectId("", "ConfigMap", ns, "kube-root-ca.crt"), managed("kube-controller-manager", "kubectl-edit")),
        (ObjectId("", "ServiceAccount", ns, "default"), managed("kube-controller-manager")),
        (ObjectId("", "Endpoints", ns, "svc"), managed("kube-controller-manager")),
        (ObjectId("", "Endpoints", ns, "other"), managed("kube-controller-manager")),  # not a Service we prune
    ]
    assert contents.namespace_blockers(ns, objs, prune) == [objs[0][0], objs[1][0], objs[4][0]]
