"""Never delete the wrong thing on stale or forged knowledge (issue 14).

Each test drives the real engine against ``kube``: the simulator, or a real kube-apiserver under
``STACKSYNC_TEST_KUBECONFIG`` (``make test-real``).
"""

import contextlib
import json
import os
import socket
import threading
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    CHECKSUM_ANNOTATION,
    OWNER_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import owner_mark
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import object_name
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH, ApiError

from . import helpers as H

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SECRET_VALUE = "SuperSecretValue-7b2f0c9e41d3"
#: the ``ns`` fixture (tests/conftest.py) names its namespaces wd-<random>
NS_PREFIX = "wd"


def uid():
    return uuid.uuid4().hex[:6]


def cm(name, ns, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data or {"k": "v"}}


def crd_manifest(group, plural, kind, scope="Namespaced"):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def wait_served(client, group, plural, timeout=60):
    deadline = time.time() + timeout
    while True:
        try:
            client.list(f"/apis/{group}/v1/{plural}", limit=1)
            return
        except ApiError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def cache_without(cache_dir, group):
    """Make the discovery cache in ``cache_dir`` look as if written before ``group`` existed (fresh time)."""
    (path,) = [os.path.join(cache_dir, f) for f in os.listdir(cache_dir) if f.startswith("stacksync-discovery-")]
    with open(path) as f:
        data = json.load(f)
    data["resources"] = [r for r in data["resources"] if r[0] != group]
    data["time"] = time.time()
    with open(path, "w") as f:
        json.dump(data, f)


def sync(client, stack, resources, **kw):
    kw.setdefault("lock_timeout", 30)
    kw.setdefault("poll_interval", 0.2)
    return StackManager(client, stack, **kw).sync(resources)


def reasons(cs):
    return {(e["kind"], e["name"]): e.get("reason") for e in cs.skipped}


def deletes_of(client):
    """Wrap ``client.request`` to record the paths of DELETE requests; returns the list."""
    seen = []
    real = client.request

    def request(method, path, *a, **kw):
        if method == "DELETE":
            seen.append(path)
        return real(method, path, *a, **kw)

    client.request = request
    return seen


# -- stale discovery cache ----------------------------------------------------------------------------
def test_crd_removed_from_git_is_kept_while_objects_of_its_kind_exist_despite_a_stale_cache(admin, ns, tmp_path):
    group = f"g{uid()}.stacksync.io"
    stack = "crd-" + uid()
    cache = str(tmp_path / "cache")
    crd = crd_manifest(group, "gizmos", "Gizmo")
    try:
        sync(admin, stack, [crd, cm("a", ns)], namespace=ns, record_namespace=ns, discovery_cache_dir=cache)
        wait_served(admin, group, "gizmos")
        foreign = {"apiVersion": group + "/v1", "kind": "Gizmo", "metadata": {"name": "theirs", "namespace": ns}, "spec": {}}
        admin.create(f"/apis/{group}/v1/namespaces/{ns}/gizmos", foreign)
        cache_without(cache, group)  # the cache was written before the kind existed
        cs = sync(admin, stack, [cm("a", ns)], namespace=ns, record_namespace=ns, discovery_cache_dir=cache)
        assert not cs.pruned
        assert "Gizmo." + group + " " + ns + "/theirs" in reasons(cs)[("CustomResourceDefinition", f"gizmos.{group}")]
        assert admin.get_or_none(f"/apis/{group}/v1/namespaces/{ns}/gizmos/theirs") is not None
        # once the foreign object is gone, the CRD is pruned
        admin.delete(f"/apis/{group}/v1/namespaces/{ns}/gizmos/theirs")
        cs = sync(admin, stack, [cm("a", ns)], namespace=ns, record_namespace=ns, discovery_cache_dir=cache)
        assert [(e["kind"], e["name"]) for e in cs.pruned] == [("CustomResourceDefinition", f"gizmos.{group}")]
    finally:
        H.delete_quietly(admin, f"{CRDS}/gizmos.{group}")


def test_namespace_removed_from_git_is_kept_while_it_holds_a_resource_of_a_kind_newer_than_the_cache(admin, tmp_path):
    group = f"g{uid()}.stacksync.io"
    stack, name = "nsc-" + uid(), "wd-nsc-" + uid()
    cache = str(tmp_path / "cache")
    try:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        sync(admin, stack, [namespace, cm("mine", name)], namespace=name, record_namespace="default",
             discovery_cache_dir=cache)
        # someone else installs a CRD (after our cache was written) and puts one of its objects in our namespace
        admin.create(CRDS, crd_manifest(group, "widgets", "Widget"))
        wait_served(admin, group, "widgets")
        admin.create(f"/apis/{group}/v1/namespaces/{name}/widgets",
                     {"apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "theirs", "namespace": name}})
        cache_without(cache, group)
        cs = sync(admin, stack, [], allow_empty=True, namespace=name, record_namespace="default",
                  discovery_cache_dir=cache)
        assert [(e["kind"], e["name"]) for e in cs.pruned] == [("ConfigMap", "mine")]
        assert f"Widget.{group} {name}/theirs" in reasons(cs)[("Namespace", name)]
        live = admin.get_or_none("/api/v1/namespaces/" + name)
        assert live is not None and not live["metadata"].get("deletionTimestamp")
        assert admin.get_or_none(f"/apis/{group}/v1/namespaces/{name}/widgets/theirs") is not None
    finally:
        H.delete_quietly(admin, "/api/v1/namespaces/" + name)
        H.delete_quietly(admin, f"{CRDS}/widgets.{group}")


# -- foreign owners -------------------------------------------------------------------------------------
def test_namespace_holding_an_object_owned_by_a_foreign_owner_outside_it_is_kept(admin):
    stack, name = "own-" + uid(), "wd-own-" + uid()
    owner_name = "wd-foreign-owner-" + uid()
    rbac = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    try:
        sync(admin, stack, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}],
             namespace=name, record_namespace="default")
        owner = admin.create(rbac, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                    "metadata": {"name": owner_name}, "rules": []})
        child = cm("owned-by-someone-else", name)
        child["metadata"]["ownerReferences"] = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                                 "name": owner_name, "uid": owner["metadata"]["uid"]}]
        admin.create(f"/api/v1/namespaces/{name}/configmaps", child)
        cs = sync(admin, stack, [], allow_empty=True, namespace=name, record_namespace="default")
        assert not cs.pruned and "owned-by-someone-else" in reasons(cs)[("Namespace", name)]
        assert admin.get_or_none(f"/api/v1/namespaces/{name}/configmaps/owned-by-someone-else") is not None
    finally:
        H.delete_quietly(admin, "/api/v1/namespaces/" + name)
        H.delete_quietly(admin, f"{rbac}/{owner_name}")


def test_namespace_whose_contents_are_owned_by_what_we_prune_is_pruned(admin):
    stack, name = "chain-" + uid(), "wd-chain-" + uid()
    try:
        owner = cm("parent", name)
        sync(admin, stack, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, owner],
             namespace=name, record_namespace="default")
        parent = admin.get(f"/api/v1/namespaces/{name}/configmaps/parent")
        # a "controller" makes a child of our object and a grandchild of the child
        child = cm("child", name)
        child["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "parent",
                                                 "uid": parent["metadata"]["uid"]}]
        child = admin.create(f"/api/v1/namespaces/{name}/configmaps", child)
        grandchild = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "grandchild", "namespace": name,
                      "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "child",
                                           "uid": child["metadata"]["uid"]}]}}
        admin.create(f"/api/v1/namespaces/{name}/secrets", grandchild)
        cs = sync(admin, stack, [], allow_empty=True, namespace=name, record_namespace="default")
        assert sorted((e["kind"], e["name"]) for e in cs.pruned) == [("ConfigMap", "parent"), ("Namespace", name)]
    finally:
        H.delete_quietly(admin, "/api/v1/namespaces/" + name)


# -- the stack's own state ------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["record", "key", "lease", "own-record", "labelled"])
def test_manifests_may_not_touch_any_stacks_state(admin, ns, target):
    victim, stack = "victim-" + uid(), "attacker-" + uid()
    sync(admin, victim, [cm("v", ns)], namespace=ns, record_namespace=ns)
    record_path = f"/api/v1/namespaces/{ns}/configmaps/{object_name(victim)}"
    before = admin.get(record_path)
    m = {
        "record": cm(object_name(victim), ns, stack=victim, groupKinds=""),
        "own-record": cm(object_name(stack), ns, stack=stack),
        "key": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": object_name(victim, "-key"), "namespace": ns},
                "stringData": {"key": "x"}},
        "lease": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                  "metadata": {"name": object_name(victim), "namespace": ns},
                  "spec": {"holderIdentity": "attacker", "leaseDurationSeconds": 86400}},
        "labelled": cm("innocent-name", ns),
    }[target]
    if target == "labelled":
        m["metadata"]["labels"] = {"stacksync.io/record-of": victim}
    calls = []
    real = admin.request
    admin.request = lambda method, path, *a, **kw: (calls.append(method), real(method, path, *a, **kw))[1]
    try:
        with pytest.raises(StackError, match="state of a stack") as info:
            sync(admin, stack, [cm("mine", ns), m], namespace=ns, record_namespace=ns)
    finally:
        admin.__dict__.pop("request", None)
    assert m["metadata"]["name"] in str(info.value)
    assert not [c for c in calls if c in ("PATCH", "POST", "PUT", "DELETE")]
    assert admin.get(record_path)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    # the victim still syncs and prunes normally
    cs = sync(admin, victim, [cm("w", ns)], namespace=ns, record_namespace=ns)
    assert [e["name"] for e in cs.pruned] == ["v"]


def test_stack_names_that_collided_before_have_their_own_records(admin, ns):
    upper = "Foo" + uid()
    colliding = upper.lower() + "-" + object_name(upper).rsplit("-", 1)[1][:8]
    sync(admin, upper, [cm("a", ns)], namespace=ns, record_namespace=ns)
    sync(admin, colliding, [cm("b", ns)], namespace=ns, record_namespace=ns)
    assert object_name(upper) != object_name(colliding)
    for stack, name in ((upper, "a"), (colliding, "b")):
        rec = admin.get(f"/api/v1/namespaces/{ns}/configmaps/{object_name(stack)}")
        assert rec["data"]["stack"] == stack
        # each prunes only its own
        cs = sync(admin, stack, [cm(name + "2", ns)], namespace=ns, record_namespace=ns)
        assert [e["name"] for e in cs.pruned] == [name]


def test_stack_name_with_a_trailing_newline_is_refused(admin):
    with pytest.raises(StackError, match="not a valid label value"):
        StackManager(admin, "apps\n")


# -- Secret values in errors ---------------------------------------------------------------------------
@pytest.mark.parametrize("check_mode", [False, True])
@pytest.mark.parametrize("data", [SECRET_VALUE, [SECRET_VALUE], {"k": [SECRET_VALUE]}, {"k": "not base64 " + SECRET_VALUE}],
                         ids=["string", "list", "list-value", "not-base64"])
def test_a_secret_of_the_wrong_shape_fails_without_its_value(admin, ns, data, check_mode):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad", "namespace": ns}, "data": data}
    with pytest.raises(StackError) as info:
        sync(admin, "sec-" + uid(), [cm("a", ns), secret], namespace=ns, record_namespace=ns, check_mode=check_mode)
    assert "bad" in str(info.value) and SECRET_VALUE not in str(info.value)
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/a") is None  # refused before any write


def test_an_api_error_about_a_secret_is_redacted(admin, ns):
    # a value the API server itself refuses (a key that is not a valid Secret key): its message is filtered
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad", "namespace": ns},
              "stringData": {"bad key " + SECRET_VALUE: SECRET_VALUE}}
    with pytest.raises(StackError) as info:
        sync(admin, "sec-" + uid(), [secret], namespace=ns, record_namespace=ns)
    assert "Secret" in str(info.value) and SECRET_VALUE not in str(info.value)


# -- lock loss -------------------------------------------------------------------------------------------
def test_a_run_that_loses_its_lock_stops_before_pruning(admin, ns):
    stack = "lost-" + uid()
    sync(admin, stack, [cm("keep", ns), cm("old", ns)], namespace=ns, record_namespace=ns)
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{object_name(stack)}"
    deletes = []
    real = admin.request
    stolen = threading.Event()

    def request(method, path, *a, **kw):
        if method == "DELETE" and "/leases/" not in path:
            deletes.append(path)
        if method == "PATCH" and path.endswith("/configmaps/new") and not stolen.is_set():
            stolen.set()
            # a second run takes the Lease over (as after this run stalled past its lease duration)
            lease = real("GET", lease_path)
            lease["spec"]["holderIdentity"] = "another-run"
            real("PUT", lease_path, body=lease)
            time.sleep(1.5)  # this run's renewal (every 2/3 s) meets the changed Lease
        return real(method, path, *a, **kw)

    admin.request = request
    try:
        with pytest.raises(StackError, match="lost the lock") as info:
            sync(admin, stack, [cm("keep", ns), cm("new", ns)], namespace=ns, record_namespace=ns, lease_duration=2)
    finally:
        admin.__dict__.pop("request", None)
        H.delete_quietly(admin, lease_path)
    assert stolen.is_set() and not deletes, deletes
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/old") is not None
    assert "another run may hold it" in str(info.value)


# -- shared objects --------------------------------------------------------------------------------------
def test_an_object_dropped_by_one_stack_but_declared_by_another_is_released_not_deleted(admin, ns):
    a, b = "sha-" + uid(), "shb-" + uid()
    sync(admin, a, [cm("shared", ns, v="a"), cm("a-only", ns)], namespace=ns, record_namespace=ns)
    sync(admin, b, [cm("shared", ns, v="a"), cm("b-only", ns)], namespace=ns, record_namespace=ns)  # takes it over
    live = admin.get(f"/api/v1/namespaces/{ns}/configmaps/shared")
    assert live["metadata"]["labels"][STACK_LABEL] == b
    cs = sync(admin, b, [cm("b-only", ns)], namespace=ns, record_namespace=ns)
    assert not cs.pruned and [(e["name"], e["stack"]) for e in cs.released] == [("shared", a)] and cs.changed
    assert any("still declares it" in w for w in cs.warnings)
    live = admin.get(f"/api/v1/namespaces/{ns}/configmaps/shared")
    oid = ObjectId("", "ConfigMap", ns, "shared")
    assert live["metadata"]["labels"][STACK_LABEL] == a
    assert live["metadata"]["annotations"][OWNER_ANNOTATION] == owner_mark(a, oid)
    assert CHECKSUM_ANNOTATION not in live["metadata"]["annotations"]
    # stack a applies it again on its next run, and then it is in sync
    cs = sync(admin, a, [cm("shared", ns, v="a"), cm("a-only", ns)], namespace=ns, record_namespace=ns)
    assert {e["name"]: e["action"] for e in cs.applied}["shared"] == "configured"
    cs = sync(admin, a, [cm("shared", ns, v="a"), cm("a-only", ns)], namespace=ns, record_namespace=ns)
    assert not cs.changed


def test_a_deleted_stack_whose_objects_were_all_released_leaves_no_record_behind(admin, ns):
    # state=absent hands the shared object to the stack that still declares it; the deleted stack must not
    # go on declaring it, or that stack could never prune it (it would be released back to a stack that is gone)
    a, b = "rla-" + uid(), "rlb-" + uid()
    sync(admin, a, [cm("shared", ns, v="a"), cm("a-only", ns)], namespace=ns, record_namespace=ns)
    sync(admin, b, [cm("shared", ns, v="a")], namespace=ns, record_namespace=ns)  # takes it over
    cs = StackManager(admin, b, namespace=ns, record_namespace=ns).delete_all()
    assert [(e["name"], e["stack"]) for e in cs.released] == [("shared", a)] and not cs.pruned
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/stacksync-{b}") is None
    cs = sync(admin, a, [cm("a-only", ns)], namespace=ns, record_namespace=ns)
    assert [e["name"] for e in cs.pruned] == ["shared"] and not cs.released, (cs.released, cs.warnings)
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/shared") is None


def test_a_stack_deleted_with_something_left_behind_no_longer_declares_what_it_deleted(admin, ns):
    # its Namespace holds an object no stack owns, so state=absent keeps it (and the record, to find it again);
    # the record must not go on declaring the stack's other objects, or another stack could never prune them
    a, b, kept = "lba-" + uid(), "lbb-" + uid(), "wd-lb-" + uid()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": kept}}
    try:
        sync(admin, a, [namespace, cm("shared", ns, v="a")], namespace=ns, record_namespace=ns)
        admin.create(f"/api/v1/namespaces/{kept}/configmaps", cm("foreign", kept))
        sync(admin, b, [cm("shared", ns, v="a")], namespace=ns, record_namespace=ns)  # takes it over
        cs = StackManager(admin, a, namespace=ns, record_namespace=ns).delete_all()
        assert [(e["kind"], e["name"]) for e in cs.skipped] == [("Namespace", kept)], cs.skipped
        record = admin.get(f"/api/v1/namespaces/{ns}/configmaps/stacksync-{a}")["data"]
        assert (record["groupKinds"], record["objects"], record["objectCount"]) == ("Namespace", "", "0"), record
        cs = sync(admin, b, [cm("other", ns)], namespace=ns, record_namespace=ns)
        assert [e["name"] for e in cs.pruned] == ["shared"] and not cs.released, (cs.released, cs.warnings)
    finally:
        H.delete_quietly(admin, f"/api/v1/namespaces/{kept}")


# -- finalizers -------------------------------------------------------------------------------------------
def test_a_pruned_object_held_by_a_finalizer_is_reported_terminating_not_pruned_again(admin, ns):
    stack = "fin-" + uid()
    held = cm("held", ns)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    sync(admin, stack, [held, cm("keep", ns)], namespace=ns, record_namespace=ns)
    path = f"/api/v1/namespaces/{ns}/configmaps/held"
    try:
        cs = sync(admin, stack, [cm("keep", ns)], namespace=ns, record_namespace=ns)
        assert [e["name"] for e in cs.pruned] == ["held"] and cs.changed
        deletes = deletes_of(admin)
        cs = sync(admin, stack, [cm("keep", ns)], namespace=ns, record_namespace=ns)
        assert not cs.pruned and [e["name"] for e in cs.terminating] == ["held"] and not cs.changed
        assert cs.counts["terminating"] == 1 and not [d for d in deletes if "/leases/" not in d]
    finally:
        admin.__dict__.pop("request", None)
        with contextlib.suppress(ApiError):
            admin.request("PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH)
    # with the finalizer gone the object is gone, and the record no longer lists it
    deadline = time.time() + 30
    while admin.get_or_none(path) is not None and time.time() < deadline:
        time.sleep(0.2)
    cs = sync(admin, stack, [cm("keep", ns)], namespace=ns, record_namespace=ns)
    assert not cs.changed and not cs.terminating


# -- prune budget ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("check_mode", [False, True])
def test_a_run_over_the_prune_budget_fails_before_any_write(admin, ns, check_mode):
    stack = "bud-" + uid()
    names = [f"c{i:02d}" for i in range(24)]
    sync(admin, stack, [cm(n, ns) for n in names], namespace=ns, record_namespace=ns)
    calls = []
    real = admin.request
    admin.request = lambda method, path, *a, **kw: (calls.append((method, path)), real(method, path, *a, **kw))[1]
    try:
        with pytest.raises(StackError, match="refusing to prune 20 of the stack's 24 objects") as info:
            sync(admin, stack, [cm(n, ns, k="changed") for n in names[:4]], namespace=ns, record_namespace=ns,
                 check_mode=check_mode)
    finally:
        admin.__dict__.pop("request", None)
    assert "ConfigMap " + ns + "/c04" in str(info.value) and "max_prune" in str(info.value)
    assert not [c for c in calls if c[0] in ("PATCH", "POST", "PUT", "DELETE")], calls
    assert len(admin.list(f"/api/v1/namespaces/{ns}/configmaps", label_selector=f"{STACK_LABEL}={stack}")) == 24
    # within the budget it goes through
    cs = sync(admin, stack, [cm(n, ns) for n in names[:4]], namespace=ns, record_namespace=ns, max_prune="20",
              check_mode=check_mode)
    assert len(cs.pruned) == 20


# -- a server that never answers ------------------------------------------------------------------------------
def test_a_server_that_never_answers_fails_the_run_quickly():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        client, _ns = build_client({"host": f"http://127.0.0.1:{sock.getsockname()[1]}", "api_key": "t", "request_timeout": 1})
        started = time.monotonic()
        with pytest.raises(StackError):
            StackManager(client, "dead", discovery_cache_dir="").sync([cm("a", "default")])
        assert time.monotonic() - started < 25
    finally:
        sock.close()


# -- through Ansible: nothing leaks into the [ERROR] line, -vvv, the result or check mode -----------------------
LEAK_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ interpreter }}"
  tasks:
    - name: a Secret of the wrong shape, with a kubeconfig given as a mapping
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kubeconfig_dict }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        resources:
          - {apiVersion: v1, kind: Secret, metadata: {name: bad}, data: "{{ secret_value }}"}
      register: bad
      ignore_errors: true
    - name: the same in check mode
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kubeconfig_dict }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        resources:
          - {apiVersion: v1, kind: Secret, metadata: {name: bad}, data: {k: ["{{ secret_value }}"]}}
      check_mode: true
      register: bad_check
      ignore_errors: true
    - name: a good run with the same kubeconfig mapping
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kubeconfig_dict }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: ok}, data: {a: "1"}}]
      register: good
    - name: save
      ansible.builtin.copy:
        content: "{{ [bad, bad_check, good] | to_json }}"
        dest: "{{ out }}"
"""


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "module-process"])
def test_no_secret_value_or_kubeconfig_token_in_any_output(kube, admin, ns, tmp_path, in_process):
    import subprocess
    import sys

    import yaml

    with open(kube.kubeconfig) as f:
        kubeconfig = yaml.safe_load(f)
    token = kube.token
    assert token and token in json.dumps(kubeconfig)
    out = tmp_path / "out.json"
    variables = dict(stack="leak-" + uid(), ns=ns, kubeconfig_dict=kubeconfig, secret_value=SECRET_VALUE, out=str(out),
                     interpreter=sys.executable, stacksync_in_process=in_process)
    (tmp_path / "play.yml").write_text(LEAK_PLAYBOOK)
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "@" + str(tmp_path / "vars.json"), str(tmp_path / "play.yml"), "-vvv", "--diff"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-3000:]
    bad, bad_check, good = json.loads(out.read_text())
    assert bad.get("failed") and "bad" in bad["msg"] and bad_check.get("failed") and not good.get("failed")
    assert "[ERROR]" in text or "fatal:" in text  # the failure was printed ...
    everything = text + out.read_text()
    assert SECRET_VALUE not in everything  # ... without the value
    assert token not in everything  # and the kubeconfig mapping's token is masked everywhere
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/ok") is not None


# -- an unavailable aggregated API ---------------------------------------------------------------------
def test_an_unavailable_api_group_is_warned_about_and_keeps_namespaces(kube, admin):
    group = f"g{uid()}.example.com"
    path = "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1." + group
    stack, name = "agg-" + uid(), "wd-agg-" + uid()
    try:
        sync(admin, stack, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}],
             namespace=name, record_namespace="default")
        admin.create("/apis/apiregistration.k8s.io/v1/apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1beta1." + group},
            "spec": {"group": group, "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                     "insecureSkipTLSVerify": True, "service": {"name": "nothere", "namespace": "default", "port": 443}}})
        deadline = time.time() + 30
        while True:  # discovery lists the group as stale once the aggregator found its backend missing
            cs = sync(admin, stack, [], allow_empty=True, namespace=name, record_namespace="default")
            if any(group in w for w in cs.warnings) or time.time() > deadline:
                break
            time.sleep(1)
        assert any(group + "/v1beta1 is unavailable" in w for w in cs.warnings), cs.warnings
        assert not cs.pruned and "discovery of " in reasons(cs)[("Namespace", name)]
        assert admin.get_or_none("/api/v1/namespaces/" + name) is not None
    finally:
        H.delete_quietly(admin, path)
        H.delete_quietly(admin, "/api/v1/namespaces/" + name)


# -- record namespaces (issue 28, items 7 and 8) ------------------------------------------------------------
@pytest.fixture
def record_nss(admin):
    """Two record namespaces (wd-rec-*), deleted afterwards."""
    names = [f"wd-rec-{uid()}" for _ in range(2)]
    for name in names:
        H.create_namespace(admin, name)
    yield names
    for name in names:
        H.delete_quietly(admin, "/api/v1/namespaces/" + name)


def cm_path(ns, name):
    return f"/api/v1/namespaces/{ns}/configmaps/{name}"


def codes(cs):
    return {(e["kind"], e["name"]): e.get("code") for e in cs.skipped}


def test_an_object_declared_by_a_stack_whose_record_is_in_another_namespace_is_released_not_deleted(admin, ns, record_nss):
    ra, rb = record_nss  # each job lists the other's record namespace (records elsewhere are not believed)
    a, b = "rna-" + uid(), "rnb-" + uid()
    sync(admin, a, [cm("shared", ns, v="a"), cm("a-only", ns)], namespace=ns, record_namespace=ra, record_namespaces=[rb])
    sync(admin, b, [cm("shared", ns, v="a"), cm("b-only", ns)], namespace=ns, record_namespace=rb, record_namespaces=[ra])  # takes it over
    cs = sync(admin, b, [cm("b-only", ns)], namespace=ns, record_namespace=rb, record_namespaces=[ra])
    assert not cs.pruned and [(e["name"], e["stack"]) for e in cs.released] == [("shared", a)], (cs.pruned, cs.warnings)
    assert any(f"(record in namespace {ra})" in w for w in cs.warnings)
    live = admin.get(cm_path(ns, "shared"))["metadata"]
    assert live["labels"][STACK_LABEL] == a and live["annotations"]["stacksync.io/record-namespace"] == ra
    cs = sync(admin, a, [cm("shared", ns, v="a"), cm("a-only", ns)], namespace=ns, record_namespace=ra, record_namespaces=[rb])
    assert not cs.pruned and admin.get_or_none(cm_path(ns, "b-only")) is not None


def test_a_stack_of_the_same_name_whose_record_is_elsewhere_keeps_its_objects(admin, ns, record_nss):
    ra, rb = record_nss
    name = "same-" + uid()
    sync(admin, name, [cm("a1", ns), cm("a2", ns)], namespace=ns, record_namespace=ra)
    cs = sync(admin, name, [cm("b1", ns)], namespace=ns, record_namespace=rb)
    assert not cs.pruned, cs.pruned  # a1 and a2 carry its label and owner mark, but name the other record namespace
    cs = sync(admin, name, [cm("a1", ns)], namespace=ns, record_namespace=ra)
    assert [e["name"] for e in cs.pruned] == ["a2"] and admin.get_or_none(cm_path(ns, "b1")) is not None
    cs = sync(admin, name, [cm("b2", ns)], namespace=ns, record_namespace=rb)
    assert [e["name"] for e in cs.pruned] == ["b1"] and admin.get_or_none(cm_path(ns, "a1")) is not None
    # stack_info agrees: it reports only its own objects
    report = StackManager(admin, name, namespace=ns, record_namespace=ra).inspect([cm("a1", ns)])
    assert sorted(o["name"] for o in report["objects"]) == ["a1"], report["objects"]


def test_objects_applied_before_record_namespaces_were_named_are_kept_while_a_namesake_exists(admin, ns, record_nss):
    ra, rb = record_nss
    name = "old-" + uid()
    sync(admin, name, [cm("a1", ns), cm("a2", ns)], namespace=ns, record_namespace=ra, record_namespaces=[rb])
    sync(admin, name, [cm("b1", ns)], namespace=ns, record_namespace=rb, record_namespaces=[ra])
    for obj in ("a1", "a2", "b1"):  # as an older version of the collection applied them
        H.merge_patch(admin, ObjectId("", "ConfigMap", ns, obj), {"metadata": {"annotations": {"stacksync.io/record-namespace": None}}})
    cs = sync(admin, name, [cm("a1", ns)], namespace=ns, record_namespace=ra, record_namespaces=[rb])
    assert not cs.pruned, cs.pruned
    assert codes(cs) == {("ConfigMap", "a2"): "record-unknown"}, cs.skipped  # nobody declares it: whose is it?
    # b1 is declared by the record of the namesake: handed back to it, not deleted
    assert [(e["name"], e["stack"]) for e in cs.released] == [("b1", name)], cs.released
    assert admin.get(cm_path(ns, "b1"))["metadata"]["annotations"]["stacksync.io/record-namespace"] == rb
    # the upgrade re-stamps what it declares, deleting nothing
    assert {e["name"]: e["action"] for e in cs.applied} == {"a1": "configured"}
    assert admin.get(cm_path(ns, "a1"))["metadata"]["annotations"]["stacksync.io/record-namespace"] == ra
    # once it is the only stack of its name, the unbound objects of that name are its own
    admin.delete(f"/api/v1/namespaces/{rb}/configmaps/{object_name(name)}")
    cs = sync(admin, name, [cm("a1", ns)], namespace=ns, record_namespace=ra, record_namespaces=[rb])
    assert [e["name"] for e in cs.pruned] == ["a2"] and admin.get_or_none(cm_path(ns, "b1")) is not None


def _grant(admin, namespace, user, resources, verbs, group=""):
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + namespace
    role = f"wd-{uid()}"
    admin.create(rbac + "/roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": role},
                                   "rules": [{"apiGroups": [group], "resources": resources, "verbs": verbs}]})
    admin.create(rbac + "/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})


ALL = ["get", "list", "watch", "create", "update", "patch", "delete"]


def test_confined_credentials_that_cannot_read_a_record_namespace_prune_nothing_and_say_which_right_is_missing(
        kube, admin, ns, record_nss):
    if not kube.limited_kubeconfig:
        pytest.skip("no limited kubeconfig (STACKSYNC_TEST_LIMITED_KUBECONFIG)")
    other_records, own_records = record_nss
    _grant(admin, ns, "limited", ["configmaps"], ALL)
    _grant(admin, own_records, "limited", ["configmaps", "secrets"], ALL)
    _grant(admin, own_records, "limited", ["leases"], ALL, group="coordination.k8s.io")
    tenant, other = "rnt-" + uid(), "rno-" + uid()
    sync(admin, other, [cm("theirs", ns)], namespace=ns, record_namespace=other_records)
    limited = H.client_for(kube.limited_kubeconfig)
    opts = dict(namespace=ns, record_namespace=own_records, record_namespaces=[other_records, own_records])
    deadline = time.time() + 30
    while True:  # a real server's RBAC authorizer sees new bindings after a moment
        try:
            sync(limited, tenant, [cm("t1", ns), cm("t2", ns)], **opts)
            break
        except StackError:
            if time.time() > deadline:
                raise
            time.sleep(0.5)
    cs = sync(limited, tenant, [cm("t1", ns)], **opts)
    assert not cs.pruned and codes(cs) == {("ConfigMap", "t2"): "records-unreadable"}, cs.skipped
    (kept,) = cs.skipped
    assert f"list configmaps in namespace {other_records}" in kept["reason"], kept
    assert admin.get_or_none(cm_path(ns, "t2")) is not None
    # with the right to read the other record namespace, it proves t2 undeclared and prunes it
    _grant(admin, other_records, "limited", ["configmaps"], ["get", "list"])
    deadline = time.time() + 30
    while True:
        cs = sync(limited, tenant, [cm("t1", ns)], **opts)
        if cs.pruned or time.time() > deadline:
            break
        time.sleep(0.5)
    assert [e["name"] for e in cs.pruned] == ["t2"] and admin.get_or_none(cm_path(ns, "theirs")) is not None


@pytest.mark.parametrize("known", [True, False], ids=["known-record-namespace", "found-on-the-cluster"])
@pytest.mark.parametrize("target", ["record", "key", "lease"])
def test_manifests_may_not_touch_the_state_of_a_stack_whose_record_is_in_another_namespace(admin, ns, record_nss, target,
                                                                                             known):
    victims, attackers = record_nss
    victim, stack = "victim-" + uid(), "attacker-" + uid()
    sync(admin, victim, [cm("v", ns)], namespace=ns, record_namespace=victims)
    record_path = cm_path(victims, object_name(victim))
    before = admin.get(record_path)["metadata"]["resourceVersion"]
    m = {
        "record": cm(object_name(victim), victims, stack=stack),
        "key": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": object_name(victim, "-key"), "namespace": victims},
                "stringData": {"key": "x"}},
        "lease": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",  # no Lease exists between runs
                  "metadata": {"name": object_name(victim), "namespace": victims},
                  "spec": {"holderIdentity": "attacker", "leaseDurationSeconds": 86400}},
    }[target]
    extra = dict(record_namespaces=[attackers, victims]) if known else {}
    calls = []
    real = admin.request
    admin.request = lambda method, path, *a, **kw: (calls.append(method), real(method, path, *a, **kw))[1]
    try:
        with pytest.raises(StackError, match="state of") as info:
            sync(admin, stack, [cm("mine", ns), m], namespace=ns, record_namespace=attackers, **extra)
    finally:
        admin.__dict__.pop("request", None)
    assert m["metadata"]["name"] in str(info.value)
    assert not [c for c in calls if c in ("PATCH", "POST", "PUT", "DELETE")]
    assert admin.get(record_path)["metadata"]["resourceVersion"] == before
    assert [e["name"] for e in sync(admin, victim, [cm("w", ns)], namespace=ns, record_namespace=victims).pruned] == ["v"]


# -- namespace contents (issue 28, item 14) -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["x-openshift-service-ca.crt", "openshift-service-ca.crt"])
def test_a_namespace_holding_a_foreign_configmap_named_like_the_clusters_own_is_kept(admin, name):
    stack, namespace = "occ-" + uid(), "wd-occ-" + uid()
    try:
        sync(admin, stack, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}],
             namespace=namespace, record_namespace="default")
        if admin.get_or_none(cm_path(namespace, name)) is not None:
            # this cluster makes it itself (OpenShift's kube-controller-manager): somebody edits it instead
            H.merge_patch(admin, ObjectId("", "ConfigMap", namespace, name), {"data": {"mine": "yes"}})
        else:  # somebody's, made by their own tool
            admin.create(f"/api/v1/namespaces/{namespace}/configmaps", cm(name, namespace))
        cs = sync(admin, stack, [], allow_empty=True, namespace=namespace, record_namespace="default")
        assert not cs.pruned and name in reasons(cs)[("Namespace", namespace)], cs.skipped
        assert admin.get_or_none(cm_path(namespace, name)) is not None
    finally:
        H.delete_quietly(admin, "/api/v1/namespaces/" + namespace)
