"""fieldsv1.py: ``fieldsV1`` trees (managedFields): union, difference, readable paths, and an object without a tree."""

from ansible_collections.stacksync.k8s.plugins.module_utils.engine import fieldsv1 as F

LABELS = {"f:metadata": {"f:labels": {"f:app": {}, "f:team": {}}}}
CONTAINERS = {"f:spec": {"f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}}}}


def test_union_merges_subtrees_and_keeps_a_field_owned_whole():
    assert F.union(LABELS, {"f:metadata": {"f:labels": {"f:tier": {}}}}) == {
        "f:metadata": {"f:labels": {"f:app": {}, "f:team": {}, "f:tier": {}}}}
    assert F.union({"f:data": {}}, {"f:data": {"f:a": {}}}) == {"f:data": {"f:a": {}}}
    assert F.union({"f:data": {"f:a": {}}}, {"f:data": {}}) == {"f:data": {"f:a": {}}}  # a leaf adds nothing to a tree
    assert F.union(None, LABELS) == LABELS and F.union(LABELS, None) == LABELS


def test_segments_and_paths_read_as_people_write_them():
    assert F.segment("f:image") == ".image"
    assert F.segment('k:{"port":80,"protocol":"TCP"}') == "[port=80,protocol=TCP]"
    assert F.segment("k:not-json") == "[not-json]"
    assert F.segment('v:"a"') == '["a"]'
    assert F.paths(LABELS) == ["metadata.labels.app", "metadata.labels.team"]
    assert F.paths(CONTAINERS) == ["spec.containers[name=app].image", "spec.containers[name=app].name"]
    assert F.paths({"f:spec": {"f:finalizers": {'v:"kubernetes"': {}}}}) == ['spec.finalizers["kubernetes"]']
    assert F.paths({}) == [] and F.paths(None) == []


def test_subtract_leaves_what_the_second_tree_does_not_hold():
    assert F.subtract(LABELS, {"f:metadata": {"f:labels": {"f:app": {}}}}) == {"f:metadata": {"f:labels": {"f:team": {}}}}
    assert F.subtract(LABELS, LABELS) == {}
    assert F.subtract(LABELS, None) == LABELS
    # a member node the other tree holds is never whole in the result: only its missing fields are
    assert F.subtract(CONTAINERS, {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:name": {}}}}}) == {
        "f:spec": {"f:containers": {'k:{"name":"app"}': {"f:image": {}}}}}


def test_strip_removes_fields_map_keys_and_list_items():
    obj = {"metadata": {"labels": {"app": "web", "team": "a"}, "name": "x"},
           "spec": {"containers": [{"name": "app", "image": "nginx", "args": ["-v"]}, {"name": "side", "image": "b"}],
                    "finalizers": ["kubernetes", "other"]}}
    assert F.strip(obj, {"f:metadata": {"f:labels": {"f:team": {}}}})["metadata"]["labels"] == {"app": "web"}
    assert F.strip(obj, {"f:spec": {"f:containers": {'k:{"name":"app"}': {}}}})["spec"]["containers"] == [
        {"name": "side", "image": "b"}]
    assert F.strip(obj, {"f:spec": {"f:containers": {'k:{"name":"app"}': {"f:args": {}}}}})["spec"]["containers"][0] == {
        "name": "app", "image": "nginx"}
    assert F.strip(obj, {"f:spec": {"f:finalizers": {'v:"other"': {}}}})["spec"]["finalizers"] == ["kubernetes"]
    assert F.strip(obj, {"f:metadata": {".": {}}}) == {"spec": obj["spec"]}  # a member node goes whole
    assert F.strip(obj, {"f:missing": {}, "k:bad": {}}) == obj and F.strip(obj, {}) is obj
    assert F.strip(obj, {"f:spec": {"f:finalizers": {"v:not json": {}}}})["spec"]["finalizers"] == ["kubernetes", "other"]
    assert obj["metadata"]["labels"] == {"app": "web", "team": "a"}  # the original is left as it was


def test_a_map_list_item_matches_on_its_key_fields():
    assert F.matches({"name": "app", "image": "x"}, {"name": "app"})
    assert not F.matches({"name": "side"}, {"name": "app"}) and not F.matches("app", {"name": "app"})
