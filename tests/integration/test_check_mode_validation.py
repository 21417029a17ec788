"""Check mode validates every write with the server, also in the namespaces the sync would create (issue 29), on the
simulator and on a real server (``make test-real``).

Before, a first sync's check mode reported every object of a new namespace "to create" (its dry run answered
``namespaces "x" not found``, accepted as "would create"), and the run then failed on what admission refused. Now
those objects are dry-run in a stand-in namespace carrying the namespace's labels: check mode fails with the message
the run fails with, leaves the cluster as it was (the stand-in included), and lists what it could not validate.
"""

import copy
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.contents import CLUSTER_OBJECTS, written_by_cluster
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.standin import STANDIN_LABEL, STANDIN_PREFIX
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

from tests.reliability import helpers as H
from tests.reliability.webhook import LABEL as WEBHOOK_LABEL
from tests.reliability.webhook import VWCS, Webhook

A = "/apis/admissionregistration.k8s.io/v1"
#: what a check run is compared on: the objects of these kinds in the test's namespaces (events and leases move alone)
SNAPSHOT = ("/api/v1/configmaps", "/api/v1/serviceaccounts", "/api/v1/pods", "/api/v1/secrets", "/apis/apps/v1/deployments",
            "/apis/apps/v1/replicasets", "/apis/rbac.authorization.k8s.io/v1/roles")
#: the objects the cluster's controllers put in every new namespace, whenever they get to it (a real server's root CA
#: ConfigMap, OpenShift's service CA ConfigMap -- seconds after the namespace on a loaded machine): left out of the
#: snapshot as long as only those controllers wrote them
_KINDS = {"/api/v1/configmaps": "ConfigMap", "/api/v1/serviceaccounts": "ServiceAccount"}


def uid():
    return uuid.uuid4().hex[:6]


def snapshot(admin, s):
    """``{(collection, namespace, name): resourceVersion}`` of the namespaces of the test (their names hold its
    suffix ``s``), stand-ins for them included, and of everything :data:`SNAPSHOT` lists in them (tests running at
    the same time use other namespaces)."""
    out, names = {}, set()
    for obj in admin.list("/api/v1/namespaces"):
        meta = obj["metadata"]
        if s in meta["name"] or s in (meta.get("labels") or {}).get(STANDIN_LABEL, ""):
            names.add(meta["name"])
            out[("/api/v1/namespaces", None, meta["name"])] = meta["resourceVersion"]
    for path in SNAPSHOT:
        for obj in admin.list(path):
            meta = obj["metadata"]
            if meta.get("namespace") in names and not cluster_own(path, obj):
                out[(path, meta["namespace"], meta["name"])] = meta["resourceVersion"]
    return out


def cluster_own(path, obj):
    return ("", _KINDS.get(path), obj["metadata"]["name"]) in CLUSTER_OBJECTS and written_by_cluster(obj)


class Writes:
    """The write requests a client sends while inside: ``(method, path, dry run?)``."""

    def __init__(self, client):
        self.client, self.seen = client, []

    def __enter__(self):
        real = self.client.request

        def request(method, path, *args, **kwargs):
            if method in H.WRITE_METHODS:
                self.seen.append((method, path, (kwargs.get("params") or {}).get("dryRun") == "All"))
            return real(method, path, *args, **kwargs)

        self.client.request = request
        return self

    def __exit__(self, *exc):
        self.client.__dict__.pop("request", None)

    def real(self):
        """The writes that are no dry run, no access review and no stand-in's creation or deletion."""
        return [(m, p) for m, p, dry in self.seen if not dry and not p.endswith("/selfsubjectaccessreviews")
                and not (m == "POST" and p == "/api/v1/namespaces") and not (m == "DELETE" and STANDIN_PREFIX in p)]

    def standins(self):
        return [p for m, p, _dry in self.seen if m == "DELETE" and STANDIN_PREFIX in p]


def run(client, stack, resources, **kw):
    kw.setdefault("poll_interval", 0.2)
    return StackManager(client, stack, record_namespace="default", namespace="default", **kw).sync(copy.deepcopy(resources))


def namespace(name, **labels):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def cm(name, ns, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


def pod(name, ns, **security):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "securityContext": security}]}}


def deployment(name, ns, **security):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "containers": [{"name": "c", "image": "nginx:1.27", "securityContext": security}]}}}}


RESTRICTED_OK = {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
                 "capabilities": {"drop": ["ALL"]}}


@pytest.fixture
def cleanup(admin):
    """Stacks and cluster objects to remove after the test: ``cleanup(stack=..., path=...)``."""
    stacks, paths = [], []

    def add(stack=None, path=None):
        if stack:
            stacks.append(stack)
        if path:
            paths.append(path)

    yield add
    for stack in stacks:
        StackManager(admin, stack, record_namespace="default", poll_interval=0.2).delete_all()
    for path in reversed(paths):
        H.delete_quietly(admin, path)


def policy_refusing(admin, cleanup, label, names):
    """A ValidatingAdmissionPolicy refusing ConfigMaps ``names`` in namespaces labelled ``policy: <label>`` (in force
    once a dry run of one is refused: a real server loads policies within seconds)."""
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"],
              "resourceNames": list(names)}]
    vap = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": label},
           "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": rules},
                    "validations": [{"expression": "false", "message": f"ConfigMaps named {names[0]} are not allowed here"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": label},
               "spec": {"policyName": label, "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"policy": label}}}}}
    for plural, obj in (("validatingadmissionpolicies", vap), ("validatingadmissionpolicybindings", binding)):
        admin.apply(f"{A}/{plural}/{label}", obj, "test")
        cleanup(path=f"{A}/{plural}/{label}")
    probe_ns = "vap-probe-" + uid()
    H.create_namespace(admin, probe_ns)
    admin.request("PATCH", f"/api/v1/namespaces/{probe_ns}", params={"fieldManager": "test"}, content_type="application/merge-patch+json",
                  body={"metadata": {"labels": {"policy": label}}})
    deadline = time.time() + 30
    try:
        while time.time() < deadline:
            try:
                admin.apply(f"/api/v1/namespaces/{probe_ns}/configmaps/{names[0]}", cm(names[0], probe_ns), "test", dry_run=True)
            except Exception:
                return
            time.sleep(0.3)
        raise AssertionError("the policy was never in force")
    finally:
        H.delete_quietly(admin, "/api/v1/namespaces/" + probe_ns)
        H.wait_namespaces_gone(admin, [probe_ns])


def failures(error):
    """``{object: message}`` of a StackError's failed objects."""
    return {e.split(": apply failed: ")[0]: e.split(": apply failed: ")[1] for e in error.changeset.errors}


def assert_check_matches_run(admin, cleanup, s, resources, refused):
    """Check mode fails on exactly ``refused`` with the run's messages, and leaves the cluster as it was."""
    stack = "check-" + s
    before = snapshot(admin, s)
    with Writes(admin) as writes, pytest.raises(StackError) as check:
        run(admin, stack, resources, check_mode=True)
    assert snapshot(admin, s) == before  # the stand-in included: created, used, and gone
    assert writes.standins(), writes.seen  # the objects were checked in a stand-in
    assert writes.real() == [], writes.seen  # else only dry runs
    checked = failures(check.value)
    assert sorted(checked) == sorted(refused), check.value.changeset.errors
    assert not any(STANDIN_PREFIX in message for message in checked.values())
    cleanup(stack=stack)
    with pytest.raises(StackError) as real:
        run(admin, stack, resources)
    assert failures(real.value) == checked  # the same messages as the run's
    return checked


def test_a_policy_refusing_an_object_of_a_new_namespace_fails_check_mode_with_its_message(admin, cleanup):
    s = uid()
    label, ns, other = "deny-" + s, "vap-" + s, "plain-" + s
    policy_refusing(admin, cleanup, label, ["forbidden"])
    resources = [namespace(ns, policy=label), namespace(other), cm("forbidden", ns, a="1"), cm("allowed", ns, a="1"),
                 cm("forbidden", other, a="1"), deployment("web", ns)]
    checked = assert_check_matches_run(admin, cleanup, s, resources, [f"ConfigMap {ns}/forbidden"])
    assert checked[f"ConfigMap {ns}/forbidden"] == (
        f"422 Invalid: configmaps \"forbidden\" is forbidden: ValidatingAdmissionPolicy '{label}' with binding '{label}' denied request: "
        "ConfigMaps named forbidden are not allowed here")


def test_pod_security_of_a_new_restricted_namespace_fails_check_mode_with_its_message(admin, cleanup):
    s = uid()
    ns = "psa-" + s
    resources = [namespace(ns, **{"pod-security.kubernetes.io/enforce": "restricted"}), pod("privileged", ns, privileged=True),
                 pod("fine", ns, **RESTRICTED_OK), deployment("web", ns, privileged=True),  # a workload: admitted
                 pod("root", ns, **dict(RESTRICTED_OK, runAsNonRoot=False))]
    checked = assert_check_matches_run(admin, cleanup, s, resources, [f"Pod {ns}/privileged", f"Pod {ns}/root"])
    assert checked[f"Pod {ns}/privileged"] == (
        '403 Forbidden: pods "privileged" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not '
        'set securityContext.privileged=true), allowPrivilegeEscalation != false (container "c" must set '
        'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set '
        'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set '
        'securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type '
        'to "RuntimeDefault" or "Localhost")')


def test_messages_that_name_the_namespace_name_the_real_one(admin, cleanup):
    s = uid()
    ns = "names-" + s
    resources = [namespace(ns), dict(pod("p", ns), spec={"serviceAccountName": "nobody", "containers": [{"name": "c", "image": "nginx"}]})]
    checked = assert_check_matches_run(admin, cleanup, s, resources, [f"Pod {ns}/p"])
    assert f"error looking up service account {ns}/nobody" in checked[f"Pod {ns}/p"]


def test_what_check_mode_cannot_validate_is_listed_with_the_reason(admin, cleanup):
    s = uid()
    ns, group = "gap-" + s, f"gap{s}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "gadgets." + group},
           "spec": {"group": group, "scope": "Namespaced", "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    sa_pod = dict(pod("p", ns), spec={"serviceAccountName": "runner", "containers": [{"name": "c", "image": "nginx"}]})
    resources = [namespace(ns), crd, {"apiVersion": group + "/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": ns}},
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": ns}}, sa_pod,
                 cm("elsewhere", "later-" + s), cm("checked", ns)]
    before = snapshot(admin, s)
    r = run(admin, "gap-" + s, resources, check_mode=True)
    assert snapshot(admin, s) == before
    listed = {(e["kind"], e["name"]): e.get("not_validated") for e in r.applied}
    assert listed[("Gadget", "g")].startswith("its kind is served by a CustomResourceDefinition this sync creates")
    assert listed[("Pod", "p")] == (f"it runs as ServiceAccount {ns}/runner, which this sync creates: the server cannot check it "
                                    "before that ServiceAccount exists")
    assert listed[("ConfigMap", "elsewhere")] == (f"its namespace later-{s} does not exist (yet: another task or source may "
                                                  "create it)")
    assert listed[("ConfigMap", "checked")] is None and listed[("ServiceAccount", "runner")] is None
    assert any(w.startswith("check mode could not validate 3 object(s) with the server") for w in r.warnings), r.warnings
    assert {e["action"] for e in r.applied} == {"created"}


def test_without_the_rights_to_delete_namespaces_the_objects_of_new_ones_are_listed(kube, admin, cleanup):
    if not kube.limited_kubeconfig:
        pytest.skip("no limited kubeconfig for this cluster")
    s = uid()
    ns, role = "norights-" + s, "check-" + s
    rules = [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "create", "patch"]},
             {"apiGroups": ["", "apps"], "resources": ["configmaps", "deployments"], "verbs": ["get", "list", "create", "patch"]}]
    admin.create("/apis/rbac.authorization.k8s.io/v1/clusterroles",
                 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role}, "rules": rules})
    cleanup(path="/apis/rbac.authorization.k8s.io/v1/clusterroles/" + role)
    admin.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}]})
    cleanup(path="/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" + role)
    limited = H.client_for(kube.limited_kubeconfig)
    before = snapshot(admin, s)
    deadline = time.time() + 15
    while True:  # RBAC caches catching up
        try:
            r = StackManager(limited, "norights-" + s, record_namespace="default", namespace="default", poll_interval=0.2,
                             check_mode=True).sync([namespace(ns), cm("a", ns), deployment("web", ns)])
            break
        except StackError:
            if time.time() > deadline:
                raise
            time.sleep(0.5)
    assert snapshot(admin, s) == before
    reason = "no stand-in namespace to check it in: check mode needs the rights to create and delete namespaces"
    assert {(e["kind"], e.get("not_validated")) for e in r.applied} == {("Namespace", None), ("ConfigMap", reason), ("Deployment", reason)}
    assert not [n for n in admin.list("/api/v1/namespaces", label_selector=STANDIN_LABEL) if n["metadata"]["name"].endswith(s)]
    # without the rights to create the namespace, the run would fail on it: so does check mode, and lists the rest
    rules[0]["verbs"].remove("create")
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + role
    admin.replace(path, dict(admin.get(path), rules=rules))
    deadline = time.time() + 15
    while True:
        with pytest.raises(StackError) as failed:
            StackManager(limited, "norights-" + s, record_namespace="default", namespace="default", poll_interval=0.2,
                         check_mode=True).sync([namespace(ns), cm("a", ns), deployment("web", ns)])
        if "cannot create" in str(failed.value) or time.time() > deadline:
            break
        time.sleep(0.5)  # RBAC caches catching up
    assert [e.split(": apply failed: ")[0] for e in failed.value.changeset.errors] == [f"Namespace {ns}"], failed.value
    assert "cannot create" not in "".join(failed.value.changeset.errors) or "namespaces" in failed.value.changeset.errors[0]
    why = f"its namespace {ns} would not be created (see its error)"
    assert {(e["kind"], e.get("not_validated")) for e in failed.value.changeset.applied} == {("ConfigMap", why), ("Deployment", why)}
    assert snapshot(admin, s) == before



def test_a_webhook_cannot_refuse_dry_runs_for_side_effects_and_is_asked_about_check_mode_s(admin, cleanup):
    # admissionregistration/v1 refuses webhooks with side effects on dry runs (v1beta1's Some / Unknown, which made
    # a server answer "does not support dry run", are gone): a webhook is called for a dry run and sees dryRun: true
    s = uid()
    ns, stack = "hook-" + s, "check-hook-" + s
    H.create_namespace(admin, ns)
    cleanup(path="/api/v1/namespaces/" + ns)
    with Webhook() as hook:
        with pytest.raises(ApiError) as refused:
            admin.create(VWCS, hook.configuration(ns, ["CREATE"], side_effects="Some"))
        assert (refused.value.status, refused.value.message) == (422, (
            f'ValidatingWebhookConfiguration.admissionregistration.k8s.io "{hook.name}" is invalid: webhooks[0].sideEffects: '
            'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"'))
        hook.install(admin, ns, ["CREATE", "UPDATE"])
        labelled = dict(cm("seen", ns, a="1"), metadata={"name": "seen", "namespace": ns, "labels": {WEBHOOK_LABEL: "x"}})
        before, calls = snapshot(admin, s), len(hook.calls)
        with Writes(admin) as writes:
            r = run(admin, stack, [labelled], check_mode=True)
        assert snapshot(admin, s) == before and writes.real() == [], writes.seen
        assert [(e["name"], e.get("not_validated")) for e in r.applied] == [("seen", None)]  # validated with the server
        assert [name for _t, _op, _ns, name in hook.calls[calls:]] == ["seen"]  # the dry run went through the webhook
