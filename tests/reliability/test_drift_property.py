"""Drift, proven by a property test (issue 16).

Hypothesis generates sequences of git edits (data keys, labels and annotations added, changed,
removed) interleaved with out-of-band edits by several field managers: people's tools
(``kubectl-label``, ``kubectl-annotate``, ``kubectl-patch``, ``kubectl-edit``, the Python client's
``OpenAPI-Generator``) and a controller (``acme-controller``). After every sync:

* what git says and what people's tools did equals git: data, labels and annotations are exactly
  git's (plus the stack's stamps), whoever wrote them before;
* the controller's fields are untouched (its own keys, which git never sets, keep its values);
* the next sync is a no-op: not changed, not one write request.

``STACKSYNC_DRIFT_EXAMPLES`` (default 100) sequences against ``kube`` (the simulator, or a real
cluster under ``STACKSYNC_TEST_KUBECONFIG``: ``STACKSYNC_DRIFT_EXAMPLES_REAL``, default 10).
"""

import itertools
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from . import helpers as H

NAMES = ("c0", "c1", "c2")
KEYS = ("a", "b", "c")
PEOPLE = ("kubectl-label", "kubectl-annotate", "kubectl-patch", "kubectl-edit", "OpenAPI-Generator")
CONTROLLER = "acme-controller"

obj_state = st.fixed_dictionaries({
    "data": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(("1", "2", "x y")), max_size=3),
    "labels": st.dictionaries(st.sampled_from(("team", "tier")), st.sampled_from(("a", "b")), max_size=2),
    "annotations": st.dictionaries(st.sampled_from(("note", "owner")), st.sampled_from(("n", "m")), max_size=2),
})
edit = st.tuples(st.sampled_from((*PEOPLE, CONTROLLER)), st.sampled_from(NAMES),
                 st.sampled_from(("data", "labels", "annotations")), st.sampled_from((*KEYS, "team", "note", "z")),
                 st.sampled_from(("v", "w")))
step = st.fixed_dictionaries({"git": st.fixed_dictionaries(dict((n, obj_state) for n in NAMES)),
                              "oob": st.lists(edit, max_size=4)})
sequence = st.lists(step, min_size=1, max_size=3)
EXAMPLES = H.env_int("STACKSYNC_DRIFT_EXAMPLES", 100)
EXAMPLES_REAL = H.env_int("STACKSYNC_DRIFT_EXAMPLES_REAL", 10)
_counter = itertools.count()


def _settings(n):
    return settings(max_examples=n, derandomize=True, database=None, deadline=None,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=list(HealthCheck))


def manifests(ns, git):
    out = []
    for name, state in sorted(git.items()):
        meta = {"name": name, "namespace": ns}
        if state["labels"]:
            meta["labels"] = dict(state["labels"])
        if state["annotations"]:
            meta["annotations"] = dict(state["annotations"])
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(state["data"])})
    return out


def oob(client, ns, manager, name, field, key, value):
    """One out-of-band edit; a controller writes only its own keys (``ctl-*``), which git never sets."""
    if manager == CONTROLLER:
        key = "ctl-" + key
    body = {"data": {key: value}} if field == "data" else {"metadata": {field: {key: value}}}
    client.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/{name}", params={"fieldManager": manager},
                   body=body, content_type=MERGE_PATCH)
    return (name, field, key, value) if manager == CONTROLLER else None


def run_sequence(kube, steps):
    client = H.client_for(kube.kubeconfig)
    ns = f"dp-{uuid.uuid4().hex[:5]}{next(_counter)}"
    H.create_namespace(client, ns)
    stack = "drift-" + ns
    controller = {}  # (name, field, key) -> value the controller wrote
    try:
        for st_ in steps:
            want = manifests(ns, st_["git"])
            H.sync(client, stack, want, namespace=ns, record_namespace=ns, max_prune="100%")
            for manager, name, field, key, value in st_["oob"]:
                done = oob(client, ns, manager, name, field, key, value)
                if done:
                    controller[done[:3]] = done[3]
            cs, err = H.sync(client, stack, want, namespace=ns, record_namespace=ns, max_prune="100%")
            assert err is None, err
            check(client, ns, want, controller)
            cs, err, seen = sync_counting_writes(client, stack, want, ns)
            assert err is None and not cs.changed and not seen, (err, seen, cs.result())
    finally:
        H.delete_quietly(client, "/api/v1/namespaces/" + ns)
        client.close()


def sync_counting_writes(client, stack, want, ns):
    """``(changeset, error, [(method, path)] written)`` of one sync."""
    with H.recording(client) as seen:
        cs, err = H.sync(client, stack, want, namespace=ns, record_namespace=ns, max_prune="100%")
    return cs, err, seen


def check(client, ns, want, controller):
    for m in want:
        name = m["metadata"]["name"]
        live = client.get(f"/api/v1/namespaces/{ns}/configmaps/{name}")
        meta = live["metadata"]
        ctl = dict(((f, k), v) for (n, f, k), v in controller.items() if n == name)
        data = dict(live.get("data") or {})
        labels = dict(meta.get("labels") or {})
        annotations = dict((k, v) for k, v in (meta.get("annotations") or {}).items() if not k.startswith("stacksync.io/"))
        labels.pop(STACK_LABEL, None)
        for field, have in (("data", data), ("labels", labels), ("annotations", annotations)):
            mine = dict((k, v) for k, v in have.items() if not k.startswith("ctl-"))
            git = (m.get("data") if field == "data" else m["metadata"].get(field)) or {}
            assert mine == git, f"{name}.{field}: live {mine}, git {git}"
            theirs = dict((k, v) for k, v in have.items() if k.startswith("ctl-"))
            assert theirs == dict((k, v) for (f, k), v in ctl.items() if f == field), f"{name}.{field}: controller's {theirs}"


@pytest.mark.sim_only
@_settings(EXAMPLES)
@given(steps=sequence)
def test_drift_converges_to_git_and_leaves_controllers_alone(kubesim, steps):
    run_sequence(kubesim, steps)


@_settings(EXAMPLES_REAL)
@given(steps=sequence)
def test_drift_on_the_target_cluster(kube, steps):
    """The smaller batch (meant for a real cluster under STACKSYNC_TEST_KUBECONFIG)."""
    run_sequence(kube, steps)
