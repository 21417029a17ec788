"""Validating admission as check mode meets it, pinned to a real kube-apiserver: Pod Security admission's
refusals (their exact messages), ValidatingAdmissionPolicy's (literal expressions: the simulator evaluates no
other CEL), and NamespaceLifecycle's refusal of a dry run in a namespace that does not exist.

Runs against the simulator by default and against a real server when STACKSYNC_TEST_KUBECONFIG is set; both
must answer exactly this (``tests/kubesim/admission.py`` is the simulator's side).
"""

import pytest

from .helpers import poll, unique

NS_PREFIX = "admit"
PODS = "/api/v1/namespaces/{ns}/pods"
A = "/apis/admissionregistration.k8s.io/v1"


def labelled(api, labels):
    name = unique("admit")
    status, body, _ = api.request("POST", "/api/v1/namespaces",
                                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    assert status == 201, body
    return name


@pytest.fixture
def namespaces(api):
    made = []

    def make(**labels):
        made.append(labelled(api, labels))
        return made[-1]

    yield make
    for name in made:
        api.request("DELETE", f"/api/v1/namespaces/{name}")


def pod(name, spec_extra=None, **container):
    spec = {"containers": [dict({"name": "c", "image": "nginx"}, **container)]}
    spec.update(spec_extra or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


RESTRICTED_OK = {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
                 "capabilities": {"drop": ["ALL"]}}
EVERYTHING = {  # a Pod that breaks every check the simulator makes
    "hostNetwork": True, "hostPID": True, "hostIPC": True, "securityContext": {"runAsUser": 0},
    "volumes": [{"name": "hp", "hostPath": {"path": "/"}}, {"name": "ed", "emptyDir": {}}, {"name": "nf", "nfs": {"server": "x", "path": "/"}}],
    "initContainers": [{"name": "i", "image": "busybox", "securityContext": {"capabilities": {"add": ["NET_ADMIN", "CHOWN"]}}}],
    "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 80}],
                    "securityContext": {"privileged": True, "runAsUser": 0, "allowPrivilegeEscalation": True,
                                        "capabilities": {"add": ["SYS_ADMIN"]}}},
                   {"name": "d", "image": "nginx"}]}
PRIVILEGED = ('pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set '
              'securityContext.privileged=true), allowPrivilegeEscalation != false (container "c" must set '
              'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set '
              'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set '
              'securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set '
              'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')


def test_pod_security_restricted_refuses_a_privileged_pod_and_its_dry_run(api, namespaces):
    ns = namespaces(**{"pod-security.kubernetes.io/enforce": "restricted"})
    body = pod("priv", securityContext={"privileged": True})
    for params in ({"dryRun": "All"}, {}):
        status, answer, _ = api.apply(f"{PODS.format(ns=ns)}/priv", body, **params)
        assert status == 403, answer
        assert answer["reason"] == "Forbidden" and answer["message"] == PRIVILEGED
        assert answer["details"] == {"name": "priv", "kind": "pods"}
    status, answer, _ = api.apply(f"{PODS.format(ns=ns)}/fine", pod("fine", securityContext=RESTRICTED_OK), dryRun="All")
    assert status == 201, answer


def test_pod_security_lists_every_violation_in_the_servers_order(api, namespaces):
    baseline = namespaces(**{"pod-security.kubernetes.io/enforce": "baseline"})
    restricted = namespaces(**{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "v1.30"})
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": EVERYTHING}
    status, answer, _ = api.apply(f"{PODS.format(ns=baseline)}/p", body, dryRun="All")
    assert status == 403 and answer["message"] == (
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (containers "i", "c" must '
        'not include "NET_ADMIN", "SYS_ADMIN" in securityContext.capabilities.add), host namespaces (hostNetwork=true, '
        'hostPID=true, hostIPC=true), hostPath volumes (volume "hp"), hostPort (container "c" uses hostPort 80), privileged '
        '(container "c" must not set securityContext.privileged=true)'), answer
    status, answer, _ = api.apply(f"{PODS.format(ns=restricted)}/p", body, dryRun="All")
    assert status == 403 and answer["message"] == (
        'pods "p" is forbidden: violates PodSecurity "restricted:v1.30": host namespaces (hostNetwork=true, hostPID=true, '
        'hostIPC=true), hostPort (container "c" uses hostPort 80), privileged (container "c" must not set '
        'securityContext.privileged=true), allowPrivilegeEscalation != false (containers "i", "c", "d" must set '
        'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers "i", "c", "d" must set '
        'securityContext.capabilities.drop=["ALL"]; containers "i", "c" must not include "CHOWN", "NET_ADMIN", "SYS_ADMIN" '
        'in securityContext.capabilities.add), restricted volume types (volumes "hp", "nf" use restricted volume types '
        '"hostPath", "nfs"), runAsNonRoot != true (pod or containers "i", "c", "d" must set securityContext.runAsNonRoot=true), '
        'runAsUser=0 (pod and container "c" must not set runAsUser=0), seccompProfile (pod or containers "i", "c", "d" must '
        'set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'), answer


def test_pod_security_explicit_bad_values_and_volumes(api, namespaces):
    restricted = namespaces(**{"pod-security.kubernetes.io/enforce": "restricted"})
    baseline = namespaces(**{"pod-security.kubernetes.io/enforce": "baseline"})
    spec = {"securityContext": {"runAsNonRoot": False},
            "containers": [{"name": "c", "image": "nginx"}, {"name": "d", "image": "x", "securityContext": {"runAsNonRoot": False}}]}
    status, answer, _ = api.apply(f"{PODS.format(ns=restricted)}/p", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                                                     "spec": spec}, dryRun="All")
    assert status == 403 and answer["message"] == (
        'pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (containers "c", "d" '
        'must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers "c", "d" must set '
        'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod and container "d" must not set '
        'securityContext.runAsNonRoot=false), seccompProfile (pod or containers "c", "d" must set '
        'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'), answer
    volumes = {"volumes": [{"name": "hp", "hostPath": {"path": "/"}}, {"name": "hq", "hostPath": {"path": "/x"}}]}
    status, answer, _ = api.apply(f"{PODS.format(ns=baseline)}/p", pod("p", volumes), dryRun="All")
    assert status == 403 and answer["message"].endswith('"baseline:latest": hostPath volumes (volumes "hp", "hq")'), answer
    status, answer, _ = api.apply(f"{PODS.format(ns=restricted)}/p", pod("p", volumes, securityContext=RESTRICTED_OK), dryRun="All")
    assert status == 403 and answer["message"].endswith(
        '"restricted:latest": restricted volume types (volumes "hp", "hq" use restricted volume type "hostPath")'), answer


def test_pod_security_lets_workloads_and_privileged_namespaces_through(api, namespaces):
    restricted = namespaces(**{"pod-security.kubernetes.io/enforce": "restricted"})
    privileged = namespaces(**{"pod-security.kubernetes.io/enforce": "privileged"})
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "priv"},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                  "containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": True}}]}}}}
    status, answer, _ = api.apply(f"/apis/apps/v1/namespaces/{restricted}/deployments/priv", deploy, dryRun="All")
    assert status == 201, answer  # a warning only: the Pods its ReplicaSet makes are refused
    status, answer, _ = api.apply(f"{PODS.format(ns=privileged)}/priv", pod("priv", securityContext={"privileged": True}), dryRun="All")
    assert status == 201, answer


def policy(name, validations, rules, **spec):
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
            "spec": dict({"failurePolicy": "Fail", "matchConstraints": {"resourceRules": rules}, "validations": validations}, **spec)}


def binding(name, policy_name, actions=("Deny",), **match):
    spec = {"policyName": policy_name, "validationActions": list(actions)}
    if match:
        spec["matchResources"] = match
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": spec}


@pytest.fixture
def admission_policies(api):
    made = []

    def make(*objects):
        for obj in objects:
            plural = "validatingadmissionpolicies" if obj["kind"] == "ValidatingAdmissionPolicy" else "validatingadmissionpolicybindings"
            path = f"{A}/{plural}/{obj['metadata']['name']}"
            status, body, _ = api.apply(path, obj)
            assert status == 201, body
            made.append(path)

    yield make
    for path in reversed(made):
        api.request("DELETE", path)


CM_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}


def refused(api, path, body, **params):
    """The answer to a dry-run apply once the policies took effect (a real server loads them within seconds)."""
    answer = poll(lambda: (lambda r: r if r[0] >= 400 else None)(api.apply(path, body, dryRun="All", **params)))
    assert answer, f"{path} was never refused"
    return answer[0], answer[1]


def test_a_policy_bound_by_namespace_labels_refuses_a_named_object_with_its_message(api, namespaces, admission_policies):
    name = unique("deny")
    strict = namespaces(policy=name)
    other = namespaces()
    admission_policies(policy(name, [{"expression": "false"}, {"expression": "false", "message": "second", "reason": "Forbidden"}],
                              [dict(CM_RULE, resourceNames=["bad"]),
                               {"apiGroups": ["rbac.authorization.k8s.io"], "apiVersions": ["*"], "operations": ["CREATE"],
                                "resources": ["clusterroles"], "resourceNames": [name]}]),
                       binding(name, name, namespaceSelector={"matchLabels": {"policy": name}}))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}}
    status, body = refused(api, f"/api/v1/namespaces/{strict}/configmaps/bad", cm)
    text = f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: failed expression: false"
    assert status == 422 and body["reason"] == "Invalid", body  # the first failed validation answers
    assert body["message"] == f'configmaps "bad" is forbidden: {text}'
    assert body["details"] == {"name": "bad", "kind": "configmaps", "causes": [{"message": text}]}
    assert api.apply(f"/api/v1/namespaces/{strict}/configmaps/bad", cm)[0] == 422  # the real write too
    assert api.apply(f"/api/v1/namespaces/{other}/configmaps/bad", cm, dryRun="All")[0] == 201  # namespace not selected
    assert api.apply(f"/api/v1/namespaces/{strict}/configmaps/good", dict(cm, metadata={"name": "good"}), dryRun="All")[0] == 201
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": []}
    status, body, _ = api.apply(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}", role, dryRun="All")
    assert status == 422, body  # a cluster-scoped object: the namespace selector never skips it
    assert body["message"] == f'clusterroles.rbac.authorization.k8s.io "{name}" is forbidden: {text}'
    assert body["details"]["group"] == "rbac.authorization.k8s.io"


def test_a_policy_with_a_reason_and_message_and_a_warn_only_binding(api, namespaces, admission_policies):
    name = unique("deny")
    ns = namespaces()
    admission_policies(policy(name, [{"expression": "false", "message": "no configmaps with label x", "reason": "Forbidden"}], [CM_RULE],
                              matchConditions=[{"name": "always", "expression": "true"}]),
                       binding(name, name, objectSelector={"matchLabels": {"x": "z1"}}),
                       binding(name + "-warn", name, ("Warn",)))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"x": "z1"}}}
    status, body = refused(api, f"/api/v1/namespaces/{ns}/configmaps/c", cm)
    assert status == 403 and body["reason"] == "Forbidden", body
    assert body["message"] == (f"configmaps \"c\" is forbidden: ValidatingAdmissionPolicy '{name}' with binding '{name}' denied "
                               "request: no configmaps with label x")
    assert api.apply(f"/api/v1/namespaces/{ns}/configmaps/d", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}},
                     dryRun="All")[0] == 201  # the Warn binding selects it: not refused


def test_a_dry_run_in_a_namespace_that_does_not_exist_is_refused(api):
    name = unique("missing")
    status, body, _ = api.apply(f"/api/v1/namespaces/{name}/configmaps/c", {"apiVersion": "v1", "kind": "ConfigMap",
                                                                           "metadata": {"name": "c"}}, dryRun="All")
    assert status == 404 and body["message"] == f'namespaces "{name}" not found', body
    assert body["details"] == {"name": name, "kind": "namespaces"}


def test_a_pod_whose_service_account_does_not_exist_is_refused(api, ns):
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"serviceAccountName": "nobody", "containers": [{"name": "c", "image": "nginx"}]}}
    status, answer, _ = api.apply(f"{PODS.format(ns=ns)}/p", body, dryRun="All")
    assert status == 403 and answer["reason"] == "Forbidden", answer
    assert answer["message"] == f'pods "p" is forbidden: error looking up service account {ns}/nobody: serviceaccount "nobody" not found'
    assert answer["details"] == {"name": "p", "kind": "pods"}
    poll(lambda: api.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200)
    assert api.apply(f"{PODS.format(ns=ns)}/q", pod("q"), dryRun="All")[0] == 201  # the default one exists


def test_a_namespace_whose_pod_security_labels_name_no_level_is_refused(api):
    name = unique("admit")
    for labels, causes in (
            ({"pod-security.kubernetes.io/enforce": "bogus"},
             [("metadata.labels[pod-security.kubernetes.io/enforce]", 'Invalid value: "bogus": must be one of privileged, baseline, restricted')]),
            ({"pod-security.kubernetes.io/enforce-version": "v1.x"},
             [("metadata.labels[pod-security.kubernetes.io/enforce-version]", 'Invalid value: "v1.x": must be "latest" or "v1.x"')]),
            ({"pod-security.kubernetes.io/warn": "bogus", "pod-security.kubernetes.io/audit": "nope"},
             [("metadata.labels[pod-security.kubernetes.io/audit]", 'Invalid value: "nope": must be one of privileged, baseline, restricted'),
              ("metadata.labels[pod-security.kubernetes.io/warn]", 'Invalid value: "bogus": must be one of privileged, baseline, restricted')])):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        status, answer, _ = api.apply(f"/api/v1/namespaces/{name}", body, dryRun="All")
        assert status == 422 and answer["reason"] == "Invalid", answer
        assert [(c["field"], c["message"]) for c in answer["details"]["causes"]] == causes
        summary = "; ".join(f"{f}: {m}" for f, m in causes) if len(causes) == 1 else "[" + ", ".join(f"{f}: {m}" for f, m in causes) + "]"
        assert answer["message"] == f'Namespace "{name}" is invalid: {summary}'
    ok = {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.30"}
    assert api.apply(f"/api/v1/namespaces/{name}", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": ok}},
                     dryRun="All")[0] == 201


def test_an_apply_that_creates_needs_the_right_to_create(kube, api, ns):
    limited = kube.limited_http()
    if limited is None:
        pytest.skip("no limited kubeconfig (set STACKSYNC_TEST_LIMITED_KUBECONFIG)")
    name = unique("nocreate")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["namespaces", "configmaps"], "verbs": ["get", "list", "patch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}]}
    paths = [f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}"]
    try:
        assert api.apply(paths[0], role)[0] == 201 and api.apply(paths[1], binding)[0] == 201
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "exists"}}
        assert api.apply(f"/api/v1/namespaces/{ns}/configmaps/exists", cm)[0] == 201
        poll(lambda: limited.apply(f"/api/v1/namespaces/{ns}/configmaps/exists", cm, dryRun="All")[0] == 200)  # patch suffices
        status, body, _ = limited.apply(f"/api/v1/namespaces/{ns}/configmaps/new", dict(cm, metadata={"name": "new"}), dryRun="All")
        assert status == 403 and body["message"] == (f'configmaps "new" is forbidden: User "limited" cannot create resource "configmaps" '
                                                     f'in API group "" in the namespace "{ns}"'), body
        status, body, _ = limited.apply(f"/api/v1/namespaces/{name}", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                                        dryRun="All")
        assert status == 403 and body["message"] == (f'namespaces "{name}" is forbidden: User "limited" cannot create resource '
                                                     f'"namespaces" in API group "" in the namespace "{name}"'), body
        assert body["details"] == {"name": name, "kind": "namespaces"}
    finally:
        for path in reversed(paths):
            api.request("DELETE", path)
