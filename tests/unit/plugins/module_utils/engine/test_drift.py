"""Check mode's view of a takeover: what only people's tools own, and the object without it."""

from ansible_collections.stacksync.k8s.plugins.module_utils.engine.drift import compile_patterns, lost, strip, subtract, taken_only

PATTERNS = compile_patterns(None)


def entry(manager, operation, fields, **extra):
    return dict({"manager": manager, "operation": operation, "apiVersion": "v1", "fieldsType": "FieldsV1",
                 "fieldsV1": fields}, **extra)


def adopted_configmap():
    """A ConfigMap made with ``kubectl create`` (labels team + app, data a + b) after a dry-run apply of git's
    ``{labels: {app}, data: {a}}`` by ``stacksync``: both own what git says, kubectl-create alone the rest."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "ns", "labels": {"app": "web", "team": "x", "stacksync.io/stack": "s"},
                     "managedFields": [
                         entry("kubectl-create", "Update", {"f:data": {".": {}, "f:a": {}, "f:b": {}},
                                                            "f:metadata": {"f:labels": {".": {}, "f:app": {},
                                                                                        "f:team": {}}}}),
                         entry("stacksync", "Apply", {"f:data": {"f:a": {}},
                                                      "f:metadata": {"f:labels": {"f:app": {},
                                                                                  "f:stacksync.io/stack": {}}}}),
                     ]},
        "data": {"a": "1", "b": "2"},
    }


def test_subtract_keeps_what_the_other_tree_lacks_and_never_a_node_it_holds_whole():
    a = {"f:data": {".": {}, "f:a": {}, "f:b": {}}, "f:spec": {"f:x": {}}}
    assert subtract(a, {"f:data": {"f:a": {}}}) == {"f:data": {"f:b": {}}, "f:spec": {"f:x": {}}}
    assert subtract(a, a) == {}
    assert subtract(a, {}) == a
    # a list item both own: only the fields below it the other lacks
    item = {'k:{"name":"c"}': {".": {}, "f:name": {}, "f:image": {}, "f:env": {}}}
    assert subtract(item, {'k:{"name":"c"}': {".": {}, "f:name": {}, "f:image": {}}}) == {'k:{"name":"c"}': {"f:env": {}}}


def test_strip_removes_fields_map_keys_keyed_items_and_set_values():
    obj = {"metadata": {"labels": {"app": "web", "team": "x"}},
           "spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                                    "image": "i"}],
                    "finalizers": ["a", "b"], "replicas": 3}}
    fields = {"f:metadata": {"f:labels": {"f:team": {}}},
              "f:spec": {"f:containers": {'k:{"name":"c"}': {"f:env": {'k:{"name":"B"}': {".": {}, "f:name": {},
                                                                                             "f:value": {}}}}},
                         "f:finalizers": {'v:"b"': {}}, "f:replicas": {}}}
    out = strip(obj, fields)
    assert out == {"metadata": {"labels": {"app": "web"}},
                   "spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}], "image": "i"}],
                            "finalizers": ["a"]}}
    assert obj["metadata"]["labels"] == {"app": "web", "team": "x"} and len(obj["spec"]["containers"][0]["env"]) == 2
    assert strip(obj, {}) is obj


def test_taken_only_is_what_people_tools_alone_own_with_their_drift():
    obj = adopted_configmap()
    fields, drift = taken_only(obj, "stacksync", PATTERNS)
    assert fields == {"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {"f:team": {}}}}
    assert drift == [{"manager": "kubectl-create", "operation": "Update",
                      "fields": ["data.a", "data.b", "metadata.labels.app", "metadata.labels.team"]}]
    after = strip(obj, fields)
    assert after["data"] == {"a": "1"} and after["metadata"]["labels"] == {"app": "web", "stacksync.io/stack": "s"}


def test_taken_only_leaves_controllers_fields_and_nothing_when_no_people_tool_owns_any():
    obj = adopted_configmap()
    obj["metadata"]["managedFields"].append(entry("some-operator", "Update", {"f:data": {"f:b": {}}}))
    fields, _drift = taken_only(obj, "stacksync", PATTERNS)
    assert fields == {"f:metadata": {"f:labels": {"f:team": {}}}}  # b is the operator's too: kept
    assert taken_only(obj, "stacksync", compile_patterns([])) == ({}, [])
    obj["metadata"]["managedFields"] = obj["metadata"]["managedFields"][1:]
    assert taken_only(obj, "stacksync", PATTERNS) == ({}, [])


def ours(fields):
    return {"metadata": {"managedFields": [entry("stacksync", "Apply", fields)]}}


WEBHOOK = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
           "metadata": {"name": "hook"},
           "webhooks": [{"name": "v.example.com", "clientConfig": {"caBundle": "Cg==", "service": {"name": "svc"}},
                         "rules": [{"operations": ["CREATE"]}]}]}


def test_a_field_of_a_list_item_another_manager_took_is_lost():
    # the stack's entry after cainjector's Update took the caBundle git sets (recorded on a real server)
    item = {".": {}, "f:name": {}, "f:clientConfig": {"f:service": {"f:name": {}}}, "f:rules": {}}
    assert lost(WEBHOOK, ours({"f:webhooks": {'k:{"name":"v.example.com"}': item}}), "stacksync") == [
        "webhooks[name=v.example.com].clientConfig.caBundle"]
    item["f:clientConfig"]["f:caBundle"] = {}
    assert lost(WEBHOOK, ours({"f:webhooks": {'k:{"name":"v.example.com"}': item}}), "stacksync") == []


def test_a_list_item_is_matched_on_the_key_fields_it_sets_and_never_guessed():
    ports = {"spec": {"ports": [{"port": 80}], "containers": [{"name": "app", "image": "i", "env": [], "resources": {}}]}}
    fields = {"f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}},  # protocol defaulted
                         "f:containers": {'k:{"name":"app"}': {".": {}, "f:name": {}}}}}
    # the port matches without its defaulted protocol; an empty env (a map list) records nothing, an empty
    # resources (a struct) is recorded like any value
    assert lost(ports, ours(fields), "stacksync") == ["spec.containers[name=app].image", "spec.containers[name=app].resources"]
    two = {"f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}}, 'k:{"port":80,"protocol":"UDP"}': {".": {}}},
                      "f:containers": {'k:{"name":"other"}': {".": {}}}}}
    assert lost({"spec": {"ports": [{"port": 80, "name": "x"}], "containers": [{"name": "app", "image": "i"}]}},
                ours(two), "stacksync") == []  # several match / none matches: left alone
    assert lost({"spec": {"ports": [{"port": "80", "name": "x"}]}},
                ours({"f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}}}}}), "stacksync") == []
