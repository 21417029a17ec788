"""standin.py: check mode's stand-in namespaces (what it lists as not validated: test_dryrun.py)."""

from types import SimpleNamespace

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import standin as S
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo

VERBS = ("create", "delete", "get", "list", "patch")
CONFIGMAPS = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, VERBS)
PLANNED = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
    "name": "web", "labels": {"kubernetes.io/metadata.name": "web", "pod-security.kubernetes.io/enforce": "restricted",
                              "stacksync.io/stack": "s", "team": "a"},
    "annotations": {"stacksync.io/checksum": "sha256:x", "stacksync.io/owner": "m", "scheduler.alpha.kubernetes.io/node-selector": "x=y",
                    "kubectl.kubernetes.io/last-applied-configuration": "{}"}}}


def desired(kind="ConfigMap", ns="web", name="c", **extra):
    d = SimpleNamespace(oid=ObjectId("", kind, ns, name), info=CONFIGMAPS, manifest={"apiVersion": "v1", "kind": kind,
                        "metadata": {"name": name, "namespace": ns}}, from_crd=False)
    d.__dict__.update(extra)
    return d


def test_a_stand_in_carries_the_labels_and_annotations_the_namespace_would_have_but_ours():
    body = S.standin_body("stacksync-check-1", "web", PLANNED)
    assert body == {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "stacksync-check-1",
        "labels": {"pod-security.kubernetes.io/enforce": "restricted", "team": "a", S.STANDIN_LABEL: "web"},
        "annotations": {"scheduler.alpha.kubernetes.io/node-selector": "x=y"}}}
    assert "spec" not in body and "finalizers" not in body["metadata"]


def test_errors_are_told_with_the_real_namespace():
    error = ApiError(403, "Forbidden", 'pods "p" is forbidden: error looking up service account stacksync-check-1/x: ...',
                     [{"message": "in stacksync-check-1", "field": "metadata.namespace"}], "PATCH",
                     "/api/v1/namespaces/stacksync-check-1/pods/p")
    told = S.translate(error, "stacksync-check-1", "web")
    assert told.message == 'pods "p" is forbidden: error looking up service account web/x: ...'
    assert told.causes == [{"message": "in web", "field": "metadata.namespace"}] and told.path == "/api/v1/namespaces/web/pods/p"
    assert (told.status, told.reason, told.method) == (403, "Forbidden", "PATCH") and "stacksync-check-1" not in told.describe()


def namespace(name, created, labelled=True, terminating=False):
    meta = {"name": name, "creationTimestamp": created, "labels": {S.STANDIN_LABEL: "web"} if labelled else {}}
    if terminating:
        meta["deletionTimestamp"] = created
    return {"metadata": meta}


def test_only_old_stand_ins_are_swept():
    now = S.seconds("2026-01-01T12:00:00Z")
    found = [namespace("stacksync-check-old", "2026-01-01T10:59:59Z"), namespace("stacksync-check-new", "2026-01-01T11:30:00Z"),
             namespace("stacksync-check-dying", "2026-01-01T09:00:00Z", terminating=True),
             namespace("stacksync-check-unlabelled", "2026-01-01T09:00:00Z", labelled=False), namespace("web", "2026-01-01T09:00:00Z")]
    assert S.stale(found, now) == ["stacksync-check-old"]
    assert S.seconds("garbage") == 0 and S.seconds(None) == 0


def test_a_selector_on_the_namespace_name_tells_a_stand_in_from_its_namespace():
    real = {"kubernetes.io/metadata.name": "web", "team": "a"}
    stand = {"kubernetes.io/metadata.name": "stacksync-check-1", "team": "a", S.STANDIN_LABEL: "web"}
    selectors = [("by team", {"matchLabels": {"team": "a"}}), ("all", {}), ("none given", None),
                 ("by name", {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["web"]}]}),
                 ("not kube-system", {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                             "values": ["kube-system"]}]}),
                 ("not stand-ins", {"matchExpressions": [{"key": S.STANDIN_LABEL, "operator": "DoesNotExist"}]}),
                 ("team set", {"matchExpressions": [{"key": "team", "operator": "Exists"}]})]
    assert S.diverging(selectors, real, stand) == ["by name", "not stand-ins"]


def test_the_namespace_selectors_of_policies_bindings_and_webhooks():
    assert S.namespace_selectors("ValidatingAdmissionPolicy", "policy", {"metadata": {"name": "p"}, "spec": {
        "matchConstraints": {"namespaceSelector": {"matchLabels": {"a": "b"}}}}}) == [
        ("ValidatingAdmissionPolicy p", {"matchLabels": {"a": "b"}})]
    assert S.namespace_selectors("ValidatingAdmissionPolicyBinding", "binding", {"metadata": {"name": "b"}, "spec": {}}) == [
        ("ValidatingAdmissionPolicyBinding b", None)]
    assert S.namespace_selectors("MutatingWebhookConfiguration", "webhooks", {"metadata": {"name": "m"}, "webhooks": [
        {"name": "one", "namespaceSelector": {}}, {"name": "two"}]}) == [
        ("MutatingWebhookConfiguration m (webhook one)", {}), ("MutatingWebhookConfiguration m (webhook two)", None)]


class FakeClient:
    """Answers the stand-ins' requests; ``allowed``: the access review's answer; ``refuse``: namespaces not created."""

    def __init__(self, allowed=True, refuse=(), lingering=0, selectors=()):
        self.allowed, self.refuse, self.lingering, self.selectors = allowed, refuse, lingering, list(selectors)
        self.made, self.deleted, self.gets = {}, [], 0

    def request(self, method, path, body=None, **_kw):
        if path.endswith("selfsubjectaccessreviews"):
            return {"status": {"allowed": self.allowed}}
        real = body["metadata"]["labels"][S.STANDIN_LABEL]
        if real in self.refuse:
            raise ApiError(403, "Forbidden", "namespaces is forbidden: by policy")
        name = body["metadata"]["name"]
        labels = dict(body["metadata"]["labels"], **{S.NAME_LABEL: name})
        self.made[name] = {"metadata": {"name": name, "uid": "u-" + name, "labels": labels, "creationTimestamp": "2026-01-01T12:00:00Z"}}
        return self.made[name]

    def list(self, path, label_selector=None):
        if path.endswith("validatingadmissionpolicybindings"):
            return self.selectors
        return [] if "admissionregistration" in path else [namespace("stacksync-check-stale", "2026-01-01T09:00:00Z")]

    def delete(self, path, preconditions=None):
        self.deleted.append((path.rsplit("/", 1)[1], preconditions))

    def get_or_none(self, path):
        self.gets += 1
        return {} if self.gets <= self.lingering else None


def standins(client):
    return S.StandIns(client, lambda fn, items: [fn(i) for i in items], poll_interval=0)


def test_stand_ins_are_made_swept_used_and_deleted():
    client = FakeClient()
    st = standins(client)
    st.open({"web": PLANNED, "other": {"metadata": {"name": "other"}}})
    assert sorted(st.by_real) == ["other", "web"] and st.missing == {}
    name, _uid = st.by_real["web"]
    assert client.made[name]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert client.deleted == [("stacksync-check-stale", None)]  # an interrupted run's, older than STALE_AFTER
    path, manifest, used = st.target(desired())
    assert used == name and path == f"/api/v1/namespaces/{name}/configmaps/c" and manifest["metadata"]["namespace"] == name
    assert st.target(desired(ns="elsewhere")) is None
    assert st.close() == []
    assert sorted(client.deleted[1:]) == sorted((n, {"uid": "u-" + n}) for n in client.made)  # by uid: never another one
    assert st.by_real == {}


def test_without_the_rights_to_delete_namespaces_no_stand_in_is_made():
    client = FakeClient(allowed=False)
    st = standins(client)
    st.open({"web": PLANNED})
    assert client.made == {} and st.target(desired()) is None
    assert st.reason("web") == "no stand-in namespace to check it in: check mode needs the rights to create and delete namespaces"


def test_a_refused_stand_in_and_a_policy_selecting_by_name_are_reasons():
    by_name = {"metadata": {"name": "only-web"}, "spec": {"matchResources": {"namespaceSelector": {"matchLabels": {S.NAME_LABEL: "web"}}}}}
    client = FakeClient(refuse=("other",), selectors=[by_name])
    st = standins(client)
    st.open({"web": PLANNED, "other": {"metadata": {"name": "other"}}})
    assert st.reason("other") == "no stand-in namespace to check it in: 403 Forbidden: namespaces is forbidden: by policy"
    assert st.reason("web") == ("no stand-in namespace answers for it: ValidatingAdmissionPolicyBinding only-web selects namespaces "
                                "by labels the stand-in cannot carry (its name)")
    assert st.target(desired()) is None
    st.close()
    assert [n for n, _ in client.deleted[1:]] == list(client.made)  # made, so deleted, though unused


def test_a_stand_in_still_terminating_at_the_end_is_a_warning():
    client = FakeClient(lingering=10**6)
    st = standins(client)
    st.open({"web": PLANNED})
    name = next(iter(client.made))
    ticks = iter(range(1000))
    assert st.close(timeout=3, clock=lambda: next(ticks), sleep=lambda _s: None) == [
        f"check mode's stand-in namespace {name} was deleted and is still terminating"]
