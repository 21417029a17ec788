"""A custom resource's status subresource, as its controller and the health rules use it, pinned to a real server.

What ``stack_info``'s health of a custom resource and ``wait`` rely on (issue 19): the controller
writes ``status`` (conditions, ``observedGeneration``) through the ``status`` subresource; writes of
the main resource (applies by the stack included) never change ``status``; ``metadata.generation``
moves with ``spec`` only, so ``observedGeneration`` tells whether the controller has seen the latest
spec. Runs against the simulator by default and against a real kube-apiserver when
STACKSYNC_TEST_KUBECONFIG is set; both must pass.
"""

import secrets

import pytest

NS_PREFIX = "crstatus"
MERGE = "application/merge-patch+json"


def crd(group):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"databases.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": "Database", "listKind": "DatabaseList", "plural": "databases", "singular": "database"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                       "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}}


@pytest.fixture
def databases(api, ns):
    """The collection path of Databases in ``ns`` (a fresh CRD with a status subresource, deleted afterwards)."""
    group = f"{secrets.token_hex(3)}.conf.example.com"
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/databases.{group}"
    status, body, _ = api.apply(crd_path, crd(group))
    assert status == 201, body
    path = f"/apis/{group}/v1/namespaces/{ns}/databases"
    try:
        api.wait_for(lambda: api.get(path)[0] == 200)
        yield path
    finally:
        api.request("DELETE", crd_path)


def managers(obj):
    """``{(manager, operation, subresource): top-level fields}`` of an object's managedFields."""
    return {(e["manager"], e["operation"], e.get("subresource")): sorted(e["fieldsV1"])
            for e in obj["metadata"].get("managedFields") or []}


def test_status_subresource_of_a_custom_resource(api, databases):
    orders = f"{databases}/orders"
    db = {"apiVersion": databases.split("/")[2] + "/v1", "kind": "Database", "metadata": {"name": "orders"},
          "spec": {"size": 20}}

    # an apply with a status: the status is dropped, as for every kind with a status subresource
    status, body, _ = api.apply(orders, dict(db, status={"observedGeneration": 7}))
    assert status == 201, body
    assert "status" not in body and body["metadata"]["generation"] == 1
    assert managers(body) == {("stacksync", "Apply", None): ["f:spec"]}

    # the controller writes the status subresource: status only, generation unchanged, its own managedFields entry
    ready_false = {"observedGeneration": 1, "conditions": [
        {"type": "Ready", "status": "False", "reason": "QuotaExceeded", "message": "size 20 is over the quota of 10",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    status, body, _ = api.request("PATCH", f"{orders}/status", {"spec": {"size": 1}, "status": ready_false}, MERGE,
                                  fieldManager="database-controller")
    assert status == 200, body
    assert body["status"] == ready_false and body["spec"] == {"size": 20} and body["metadata"]["generation"] == 1
    assert managers(body) == {("stacksync", "Apply", None): ["f:spec"],
                              ("database-controller", "Update", "status"): ["f:status"]}
    rv = body["metadata"]["resourceVersion"]

    # the GET of the subresource returns the whole object
    status, body, _ = api.get(f"{orders}/status")
    assert status == 200 and body["kind"] == "Database" and body["status"] == ready_false and body["spec"] == {"size": 20}

    # a write of the main resource never changes the status (nor the generation, when the spec is the same)
    status, body, _ = api.request("PATCH", orders, {"status": {"observedGeneration": 9}}, MERGE, fieldManager="kubectl-patch")
    assert status == 200 and body["status"] == ready_false and body["metadata"]["generation"] == 1
    status, body, _ = api.request("PATCH", orders, {"metadata": {"labels": {"team": "db"}}}, MERGE, fieldManager="kubectl-label")
    assert status == 200 and body["metadata"]["generation"] == 1 and body["metadata"]["resourceVersion"] != rv

    # a new spec: a new generation, the status still the controller's last one (not observed yet)
    status, body, _ = api.apply(orders, dict(db, spec={"size": 30}))
    assert status == 200 and body["metadata"]["generation"] == 2
    assert body["status"] == ready_false

    # a write of the subresource that changes nothing keeps the resourceVersion; a PUT needs the whole object
    status, same, _ = api.request("PATCH", f"{orders}/status", {"status": ready_false}, MERGE, fieldManager="database-controller")
    assert status == 200 and same["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    observed = dict(ready_false, observedGeneration=2)
    status, body, _ = api.request("PUT", f"{orders}/status", dict(same, status=observed, spec={"size": 99}),
                                  fieldManager="database-controller")
    assert status == 200, body
    assert body["status"] == observed and body["spec"] == {"size": 30} and body["metadata"]["generation"] == 2
