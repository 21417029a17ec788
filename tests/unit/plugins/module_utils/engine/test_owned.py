"""What of a manifest our manager no longer owns, with empty values (``[]``, ``{}``, ``null``): from what a real
kube-apiserver v1.36 recorded (``tests/unit/fixtures/empty_values/recorded_v1_36.json``, pinned on both servers by
``tests/conformance/test_empty_values.py``)."""

import copy
import json
import os

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.drift import lost

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "empty_values", "recorded_v1_36.json")
with open(FIXTURE) as f:
    RECORDED = {o["name"]: o for o in json.load(f)["objects"]}


def entry(manager, fields, operation="Apply"):
    return {"manager": manager, "operation": operation, "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields}


def live_of(case, fields=None, *others, **changes):
    """The recorded object as the server holds it, with our entry ``fields`` (default: as recorded) and ``others``."""
    out = copy.deepcopy(case["live"])
    out.update(changes)
    out["metadata"] = {"managedFields": [entry("stacksync", case["fieldsV1"] if fields is None else fields), *others]}
    return out


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_nothing_is_lost_right_after_an_apply_of_empty_values(name):
    case = RECORDED[name]
    assert lost(case["manifest"], live_of(case), "stacksync") == []


def test_an_empty_set_list_a_custom_resource_holds_is_not_lost_though_unrecorded():
    # kube-prometheus's Prometheus.spec.enableFeatures: [] (x-kubernetes-list-type: set): never in managedFields
    case = RECORDED["custom"]
    assert "f:set" not in case["fieldsV1"]["f:spec"] and case["live"]["spec"]["set"] == []
    assert lost(case["manifest"], live_of(case), "stacksync") == []


def test_an_empty_set_or_map_list_no_longer_held_is_not_lost():
    # server-side apply drops such a list itself when an apply removes its last item (a takeover's revert): to it,
    # no list and a list without items are the same
    case = RECORDED["custom"]
    spec = {k: v for k, v in case["live"]["spec"].items() if k != "set"}
    maplist = copy.deepcopy(spec["maplist"])
    del maplist[1]["inner"][0]["s"]
    assert lost(case["manifest"], live_of(case, None, spec=dict(spec, maplist=maplist)), "stacksync") == []


def test_an_empty_set_list_of_a_built_in_kind_is_never_held_and_never_lost():
    case = RECORDED["pod"]
    assert "imagePullSecrets" not in case["live"]["spec"] and "ports" not in case["live"]["spec"]["containers"][0]
    assert lost(case["manifest"], live_of(case), "stacksync") == []


def test_items_another_manager_adds_to_an_empty_set_list_are_theirs():
    case = RECORDED["custom"]
    spec = dict(case["live"]["spec"], set=["x"])
    controller = entry("controller", {"f:spec": {"f:set": {'v:"x"': {}}}}, "Update")
    assert lost(case["manifest"], live_of(case, None, controller, spec=spec), "stacksync") == []


def test_an_empty_atomic_list_someone_replaced_is_lost():
    case = RECORDED["custom"]
    fields = copy.deepcopy(case["fieldsV1"])
    del fields["f:spec"]["f:atomic"]  # an Update took the list: it owns it whole now
    spec = dict(case["live"]["spec"], atomic=["y"])
    controller = entry("controller", {"f:spec": {"f:atomic": {}}}, "Update")
    assert lost(case["manifest"], live_of(case, fields, controller, spec=spec), "stacksync") == ["spec.atomic"]
    pod = RECORDED["pod"]
    fields = copy.deepcopy(pod["fieldsV1"])
    del fields["f:spec"]["f:tolerations"]
    tolerations = entry("kubectl-edit", {"f:spec": {"f:tolerations": {}}}, "Update")
    assert lost(pod["manifest"], live_of(pod, fields, tolerations), "stacksync") == ["spec.tolerations"]


@pytest.mark.parametrize("path,expected", [
    (("f:spec", "f:securityContext"), "spec.securityContext"),
    (("f:spec", "f:nodeSelector"), "spec.nodeSelector"),
    (("f:spec", "f:volumes", 'k:{"name":"scratch"}', "f:emptyDir"), "spec.volumes[name=scratch].emptyDir"),
    (("f:spec", "f:containers", 'k:{"name":"app"}', "f:resources"), "spec.containers[name=app].resources"),
    (("f:spec", "f:containers", 'k:{"name":"app"}', "f:securityContext", "f:capabilities"),
     "spec.containers[name=app].securityContext.capabilities"),
    (("f:spec", "f:hostAliases"), "spec.hostAliases"),  # null
    (("f:spec", "f:containers", 'k:{"name":"app"}', "f:command"), "spec.containers[name=app].command"),  # null
    (("f:metadata", "f:labels"), "metadata.labels"),
])
def test_an_empty_map_or_null_someone_removed_is_lost(path, expected):
    case = RECORDED["pod"]
    fields = copy.deepcopy(case["fieldsV1"])
    nodes = [fields]
    for key in path[:-1]:
        nodes.append(nodes[-1][key])
    del nodes[-1][path[-1]]
    for parent, key in zip(reversed(nodes[:-1]), reversed(path[:-1])):  # a node left without fields is no field
        if not parent[key]:
            del parent[key]
    assert lost(case["manifest"], live_of(case, fields), "stacksync") == [expected]


def test_metadata_the_server_never_records_is_never_lost():
    case = RECORDED["deployment"]
    assert case["manifest"]["metadata"]["creationTimestamp"] is None
    assert lost(case["manifest"], live_of(case), "stacksync") == []
    manifest = copy.deepcopy(case["manifest"])
    manifest["metadata"].update(uid=None, resourceVersion="1", generation=2, managedFields=None, selfLink=None)
    assert lost(manifest, live_of(case), "stacksync") == []


def test_a_value_of_a_set_list_our_tree_lacks_is_lost():
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "finalizers": ["a.io/x", "b.io/y"]}}
    fields = {"f:metadata": {"f:finalizers": {'v:"a.io/x"': {}}}}
    assert lost(manifest, {"metadata": {"managedFields": [entry("stacksync", fields)]}}, "stacksync") == [
        'metadata.finalizers["b.io/y"]']
    fields["f:metadata"]["f:finalizers"]['v:"b.io/y"'] = {}
    assert lost(manifest, {"metadata": {"managedFields": [entry("stacksync", fields)]}}, "stacksync") == []


# -- owned.py's own functions ---------------------------------------------------------------------------------
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import owned  # noqa: E402


def test_what_a_manifest_sets_leaves_out_what_the_server_never_records():
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "status": {"x": 1},
                "metadata": {"name": "c", "namespace": "n", "labels": {"a": "b"}, "annotations": {}},
                "data": {"k": None}, "spec": {"ports": [{"port": 80}], "empty": {}}}
    assert owned.wanted(manifest) == [("metadata", "labels", "a"), ("metadata", "annotations"), ("data", "k"),
                                      ("spec", "ports"), ("spec", "empty")]
    assert owned.tracked((), "data") and not owned.tracked((), "status")
    assert not owned.tracked(("metadata",), "resourceVersion") and owned.tracked(("spec",), "name")


def test_a_walk_finds_the_fields_our_tree_lacks_and_the_items_of_lists_someone_else_took():
    manifest = {"spec": {"containers": [{"name": "app", "image": "nginx"}], "finalizers": ["a", "b"],
                         "replicas": 2, "paused": None}}
    ours = {"f:spec": {"f:containers": {'k:{"name":"app"}': {".": {}, "f:name": {}}},
                       "f:finalizers": {'v:"a"': {}}, "f:replicas": {}}}
    assert owned.Walk([]).unowned(manifest, ours) == [("spec", "containers[name=app]", "image"),
                                                      ("spec", 'finalizers["b"]'), ("spec", "paused")]
    # an empty list our tree lacks is lost only when another manager owns it whole (an atomic list)
    other = {"manager": "kubectl-edit", "fieldsV1": {"f:spec": {"f:args": {}}}}
    ours = {"f:spec": {"f:replicas": {}}}
    assert owned.Walk([other]).unowned({"spec": {"args": [], "replicas": 1}}, ours) == [("spec", "args")]
    assert owned.Walk([]).unowned({"spec": {"args": [], "replicas": 1}}, ours) == []
    assert owned.Walk([]).unowned({"spec": {"args": ["x"]}}, {"f:spec": {}}) == []  # spec owned as a whole


def test_an_item_is_keyed_by_the_one_entry_whose_key_fields_it_has():
    node = {'k:{"port":80,"protocol":"TCP"}': {}, 'k:{"port":443,"protocol":"TCP"}': {}, "k:bad": {}, "f:x": {}}
    assert owned._item_key(node, {"port": 80}) == 'k:{"port":80,"protocol":"TCP"}'  # protocol defaulted by the server
    assert owned._item_key(node, {"port": "80"}) is None  # a string is not the number the server keyed it by
    assert owned._item_key(node, {"name": "x"}) is None
    assert owned._set_values({'v:"a"': {}, "v:1": {}, "v:{bad": {}, "f:x": {}}) == ["a", 1]
