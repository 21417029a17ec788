"""Empty values in server-side apply, pinned to a real kube-apiserver: what ``metadata.managedFields`` records
for ``[]``, ``{}`` and ``null`` of every list and map type (atomic, set and map lists; structs, maps, atomic
maps; built-in kinds and a custom resource), and what an apply does with them.

The drift check (``plugins/module_utils/engine/owned.py``) decides from these records whether a value of git is
lost; ``tests/unit/fixtures/empty_values/recorded_v1_36.json`` holds what kube-apiserver v1.36 recorded for
each manifest (``tests/unit/plugins/module_utils/engine/test_owned.py`` reads it too). Runs against the simulator by
default and against a real server when STACKSYNC_TEST_KUBECONFIG is set; both must record exactly this.
"""

import copy
import json
import os
import secrets
import time

import pytest

NS_PREFIX = "empty"
FIXTURE = os.path.join(os.path.dirname(__file__), "..", "unit", "fixtures", "empty_values", "recorded_v1_36.json")
with open(FIXTURE) as f:
    RECORDED = json.load(f)
GROUP = RECORDED["crd"]["spec"]["group"]


def ours(body, manager="stacksync"):
    """Our Apply entry's ``fieldsV1``."""
    found = [e["fieldsV1"] for e in body["metadata"].get("managedFields") or [] if e["manager"] == manager and e["operation"] == "Apply"]
    assert len(found) == 1, body["metadata"].get("managedFields")
    return found[0]


@pytest.fixture(scope="module")
def crd(kube):
    """The recorded CRD (its group is the fixture's: one per server, removed afterwards)."""
    api = kube.http
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + RECORDED["crd"]["metadata"]["name"]
    status, body, _ = api.apply(path, RECORDED["crd"], force=True)
    assert status in (200, 201), body
    api.wait_for(lambda: api.get(f"/apis/{GROUP}/v1/probes")[0] == 200)
    yield
    api.request("DELETE", path)


@pytest.mark.parametrize("case", RECORDED["objects"], ids=[o["name"] for o in RECORDED["objects"]])
def test_empty_values_are_recorded_as_the_real_server_records_them(api, ns, crd, case):
    status, body, _ = api.apply(case["path"].format(ns=ns), case["manifest"])
    assert status == 201, body
    assert ours(body) == case["fieldsV1"]


def test_a_custom_resource_stores_empty_values_as_sent(api, ns, crd):
    case = next(o for o in RECORDED["objects"] if o["name"] == "custom")
    status, body, _ = api.apply(case["path"].format(ns=ns), case["manifest"])
    assert status == 201, body
    assert body["spec"] == case["live"]["spec"]
    assert body["spec"]["set"] == [] and body["spec"]["nullableSet"] is None


def probe(ns, name, spec):
    return {"apiVersion": f"{GROUP}/v1", "kind": "Probe", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_an_apply_puts_back_an_empty_set_list_someone_removed(api, ns, crd):
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/probes/removed"
    applied = probe(ns, "removed", {"set": [], "atomic": [], "map": {}})
    assert api.apply(path, applied)[0] == 201
    status, body, _ = api.request("PATCH", path, {"spec": {"set": None, "atomic": None, "map": None}}, "application/merge-patch+json",
                                  fieldManager="editor")
    assert status == 200 and body.get("spec", {}) == {}, body
    # removing them took away what we owned of them: our entry is gone (it owned nothing else)
    assert not [e for e in body["metadata"].get("managedFields") or [] if e["manager"] == "stacksync"]
    status, body, _ = api.apply(path, applied)
    assert status == 200 and body["spec"] == {"set": [], "atomic": [], "map": {}}
    assert ours(body) == {"f:spec": {"f:atomic": {}, "f:map": {}}}


def test_items_another_manager_adds_to_an_empty_set_list_stay_and_an_atomic_list_is_taken(api, ns, crd):
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/probes/added"
    applied = probe(ns, "added", {"set": [], "atomic": []})
    assert api.apply(path, applied)[0] == 201
    status, body, _ = api.request("PATCH", path, {"spec": {"set": ["x"], "atomic": ["y"]}}, "application/merge-patch+json",
                                  fieldManager="controller")
    assert status == 200, body
    theirs = next(e["fieldsV1"] for e in body["metadata"]["managedFields"] if e["manager"] == "controller")
    assert theirs == {"f:spec": {"f:atomic": {}, "f:set": {'v:"x"': {}}}}  # the list was there: only its item is new
    assert not [e for e in body["metadata"].get("managedFields") or [] if e["manager"] == "stacksync"]  # atomic taken
    status, body, _ = api.apply(path, applied)
    assert status == 409, body  # the atomic list is theirs now
    status, body, _ = api.apply(path, applied, force=True)
    assert status == 200 and body["spec"] == {"set": ["x"], "atomic": []}  # their set item stays, the atomic list is ours again


def test_null_is_owned_and_resets_the_field(api, ns):
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/nulls"
    deploy = copy.deepcopy(next(o for o in RECORDED["objects"] if o["name"] == "deployment")["manifest"])
    deploy["metadata"]["name"] = "nulls"
    deploy["spec"]["replicas"] = 3
    assert api.apply(path, deploy)[0] == 201
    deploy["spec"]["replicas"] = None
    status, body, _ = api.apply(path, deploy)
    assert status == 200 and body["spec"]["replicas"] == 1  # removed, then defaulted
    assert "f:replicas" in ours(body)["f:spec"]
    status, body, _ = api.request("PATCH", f"{path}/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json", fieldManager="scaler")
    assert status == 200, body
    status, body, _ = api.apply(path, deploy)
    assert status == 409, body  # null is a value someone else's change conflicts with


def test_the_recorded_fixture_is_of_this_group():
    assert GROUP == "emptyvalues.conformance.stacksync.io" and secrets  # one fixed group: the CRD is removed afterwards


def _ref(schema):
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    return next((a["$ref"].rsplit("/", 1)[-1] for a in schema.get("allOf") or [] if "$ref" in a), None)


def _type_mismatches(schemas, name, ctx, path, seen, out):
    """Where the simulator's schema (``ctx``) types a list or map unlike the server's OpenAPI definition ``name``."""
    for prop, sub in (schemas.get(name) or {}).get("properties", {}).items():
        if "." not in path and prop == "status":
            continue  # written by controllers only: never applied by a stack
        child, where, ref = ctx.child(prop), f"{path}.{prop}", _ref(sub)
        if sub.get("type") == "array":
            kind = sub.get("x-kubernetes-list-type", "atomic")
            real = (kind, tuple(sub.get("x-kubernetes-list-map-keys") or ()) if kind == "map" else None)
            sim = child.list_type()
            if (sim[0], tuple(sim[1]) if sim[1] else None) != real:
                out.append((where, sim, real))
            item = _ref(sub.get("items") or {})
            if item and kind != "atomic" and sim[0] != "atomic" and item not in seen:
                _type_mismatches(schemas, item, child.item(), where + "[]", seen | {item}, out)
        elif ref and "properties" in (schemas.get(ref) or {}):
            atomic = (schemas[ref].get("x-kubernetes-map-type") or sub.get("x-kubernetes-map-type")) == "atomic"
            if atomic != child.map_atomic():
                out.append((where, "atomic" if child.map_atomic() else "granular", "atomic" if atomic else "granular"))
            elif not atomic and ref not in seen:
                _type_mismatches(schemas, ref, child, where, seen | {ref}, out)


def test_the_simulator_types_built_in_lists_and_maps_as_the_servers_openapi_does(kube, api):
    """Every list (atomic / set / map and its keys) and struct (atomic or not) of the built-in kinds the simulator
    serves, below their roots, is typed by the simulator's rule table (``tests/kubesim/schema.py``) as the real
    server's OpenAPI v3 documents say (what its managedFields follow)."""
    if kube.is_sim:
        pytest.skip("compares the simulator's rule table with a real server's OpenAPI documents")
    from tests.kubesim.resources import BUILTINS
    from tests.kubesim.schema import Root

    status, index, _ = api.get("/openapi/v3")
    assert status == 200, index
    served = {(t.group, t.version, t.kind) for t in BUILTINS}
    builtin_paths = {"api/v1" if not g else f"apis/{g}/{v}" for g, v, _k in served}
    schemas = {}
    for gv in index["paths"]:
        if gv.startswith("api"):
            # a custom resource's group-version another test of the same server deletes meanwhile answers 200 with
            # no document; the built-in ones are always there (asked again while the server rebuilds them)
            for _attempt in range(5):
                status, doc, _ = api.get("/openapi/v3/" + gv)
                if isinstance(doc, dict) or gv not in builtin_paths:
                    break
                time.sleep(0.5)
            assert status == 200, doc
            if not isinstance(doc, dict):
                assert gv not in builtin_paths, (gv, doc)
                continue
            schemas.update((doc.get("components") or {}).get("schemas") or {})
    out = []
    for name, schema in sorted(schemas.items()):
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            # the table is one per field name, for every version: autoscaling/v1's scaleTargetRef (atomic there,
            # not in v2) is the one exception, as the simulator serves HorizontalPodAutoscalers in v2 first
            if (gvk["group"], gvk["version"], gvk["kind"]) in served and (gvk["group"], gvk["version"]) != ("autoscaling", "v1"):
                _type_mismatches(schemas, name, Root(), gvk["kind"], frozenset((name,)), out)
    assert sorted(set(out)) == [], "\n".join(map(str, sorted(set(out))))
