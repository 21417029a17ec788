"""Authentication and impersonation as kube-apiserver v1.36 does them, over raw HTTP: anonymous requests,
client certificates before bearer tokens, the ``Impersonate-*`` headers, and what SelfSubjectReview
reports. Passes on the simulator and on a real server (STACKSYNC_TEST_KUBECONFIG)."""

import http.client
import json
import ssl
import time
import uuid

import pytest

REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
BODY = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def whoami(api, headers=None, token=None):
    status, body, _ = api.request("POST", REVIEW, BODY, headers=headers, token=token)
    assert status == 201, body
    assert body["kind"] == "SelfSubjectReview" and "creationTimestamp" in body["metadata"] and "spec" not in body
    return body["status"]["userInfo"]


def anonymous(kube, method, path, headers=None):
    """A request without any credentials (no Authorization header, no client certificate)."""
    context = ssl.create_default_context(cafile=kube.ca_cert)
    host, port = kube.server.split("://")[1].rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
    body = json.dumps(BODY) if method == "POST" else None
    conn.request(method, path, body=body,
                 headers=dict(headers or {}, **{"Content-Type": "application/json", "Accept": "application/json"}))
    resp = conn.getresponse()
    data = json.loads(resp.read() or b"{}")
    conn.close()
    return resp.status, data


def test_a_request_without_credentials_is_system_anonymous(kube):
    if not kube.ca_cert:
        pytest.skip("the cluster's kubeconfig names no CA")
    status, body = anonymous(kube, "GET", "/api/v1/namespaces/default/configmaps")
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == ('configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" '
                               'in the namespace "default"')
    status, body = anonymous(kube, "GET", "/api")
    assert (status, body["message"], body["details"]) == (403, 'forbidden: User "system:anonymous" cannot get path "/api"', {})
    status, body = anonymous(kube, "POST", REVIEW)
    assert status == 403 and body["message"] == (
        'selfsubjectreviews.authentication.k8s.io is forbidden: User "system:anonymous" cannot create resource '
        '"selfsubjectreviews" in API group "authentication.k8s.io" at the cluster scope')


def test_forbidden_names_the_group_resource(kube):
    limited = kube.limited_http()
    if limited is None:
        pytest.skip("no limited kubeconfig (set STACKSYNC_TEST_LIMITED_KUBECONFIG)")
    status, body, _ = limited.get("/apis/apps/v1/namespaces/default/deployments")
    assert status == 403 and body["message"] == ('deployments.apps is forbidden: User "limited" cannot list resource "deployments" '
                                                 'in API group "apps" in the namespace "default"')
    assert body["details"] == {"group": "apps", "kind": "deployments"}


def test_impersonation_headers(api):
    me = whoami(api)
    assert me["username"] and "system:authenticated" in me["groups"]
    headers = {"Impersonate-User": "jane", "Impersonate-Uid": "u-1", "Impersonate-Extra-Scopes": "s",
               "Impersonate-Extra-Example.com%2Fteam": "x"}
    assert whoami(api, headers) == {"username": "jane", "uid": "u-1", "groups": ["system:authenticated"],
                                    "extra": {"scopes": ["s"], "example.com/team": ["x"]}}
    # system:authenticated is added once, after the groups asked for, unless asked for
    assert whoami(api, {"Impersonate-User": "jane", "Impersonate-Group": "system:authenticated"})["groups"] == ["system:authenticated"]
    sa = whoami(api, {"Impersonate-User": "system:serviceaccount:ns1:sa1"})
    assert sa == {"username": "system:serviceaccount:ns1:sa1",
                  "groups": ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]}
    # a service account impersonated with groups gets those alone
    sa = whoami(api, {"Impersonate-User": "system:serviceaccount:ns1:sa1", "Impersonate-Group": "devs"})
    assert sa["groups"] == ["devs", "system:authenticated"]


def test_impersonation_without_a_user_is_a_bad_request(api):
    status, body, _ = api.request("GET", "/api/v1/namespaces", headers={"Impersonate-Group": "g"})
    assert (status, body["reason"]) == (400, "BadRequest") and "details" not in body
    assert body["message"] == ('requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"g"}, '
                               'Extra:map[string][]string(nil)} without impersonating a user name')
    status, body, _ = api.request("GET", "/api/v1/namespaces", headers={"Impersonate-Uid": "u"})
    assert status == 400 and body["message"] == ('requested &user.DefaultInfo{Name:"", UID:"u", Groups:[]string(nil), '
                                                 'Extra:map[string][]string(nil)} without impersonating a user name')


def _anonymous_get(kube, path, headers):
    return anonymous(kube, "GET", path, headers)


def test_a_requestor_that_never_impersonated_is_refused_in_the_constrained_words(kube):
    # v1.36 tries the constrained impersonation modes first and remembers, per requestor, the mode that last worked:
    # a requestor whose impersonation never worked (system:anonymous here) is refused naming the first mode, on the
    # request's own verb and resource
    if not kube.ca_cert:
        pytest.skip("the cluster's kubeconfig names no CA")
    status, body = _anonymous_get(kube, "/api/v1/namespaces", {"Impersonate-User": "bob"})
    assert status == 403 and body["message"] == (
        'namespaces is forbidden: User "system:anonymous" cannot impersonate-on:user-info:list resource "namespaces" '
        'in API group "" at the cluster scope')
    status, body = _anonymous_get(kube, "/api/v1/namespaces/default/configmaps/x",
                                  {"Impersonate-User": "system:serviceaccount:a:b"})
    assert status == 403 and body["message"] == (
        'configmaps "x" is forbidden: User "system:anonymous" cannot impersonate-on:serviceaccount:get resource '
        '"configmaps" in API group "" in the namespace "default"')


RBAC = "/apis/rbac.authorization.k8s.io/v1"


def test_after_a_legacy_impersonation_a_refusal_names_the_impersonate_verb(kube):
    limited = kube.limited_http()
    if limited is None:
        pytest.skip("no limited kubeconfig (set STACKSYNC_TEST_LIMITED_KUBECONFIG)")
    name = "conf-imp-" + uuid.uuid4().hex[:6]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["jane"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}]}
    assert kube.http.request("POST", f"{RBAC}/clusterroles", role)[0] == 201
    assert kube.http.request("POST", f"{RBAC}/clusterrolebindings", binding)[0] == 201
    try:
        # impersonating jane works (jane herself may not list namespaces): the legacy mode is limited's from now on
        deadline = time.time() + 15
        while True:
            status, body, _ = limited.get("/api/v1/namespaces", headers={"Impersonate-User": "jane"})
            if 'User "jane" cannot list' in body.get("message", "") or time.time() > deadline:
                break
            time.sleep(0.2)  # a real server's RBAC cache catches up
        assert status == 403 and 'User "jane" cannot list resource "namespaces"' in body["message"], body
        status, body, _ = limited.get("/api/v1/namespaces", headers={"Impersonate-User": "bob"})
        assert status == 403 and body["message"] == (
            'users "bob" is forbidden: User "limited" cannot impersonate resource "users" in API group "" at the '
            'cluster scope')
        status, body, _ = limited.get("/api/v1/namespaces", headers={"Impersonate-User": "system:serviceaccount:ns1:sa1"})
        assert status == 403 and body["message"] == (
            'serviceaccounts "sa1" is forbidden: User "limited" cannot impersonate resource "serviceaccounts" in API '
            'group "" in the namespace "ns1"')
    finally:
        kube.http.request("DELETE", f"{RBAC}/clusterrolebindings/{name}")
        kube.http.request("DELETE", f"{RBAC}/clusterroles/{name}")
