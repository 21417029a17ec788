"""marks.py: prune marks written on what left git and removed from what came back, on the simulator."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import PRUNE_MARK_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import grace as G
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import RunContext
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.marks import CHANGED, Marker
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import StackOptions
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import Discovery

from ..simengine import client_of, cm_path, configmap, create, live, namespace, unique, user_client


@pytest.fixture(scope="module")
def client(kubesim):
    c = client_of(kubesim)
    yield c
    c.close()


class Locks:
    """``ensure_lock`` of a run: counts the proofs asked for."""

    def __init__(self):
        self.calls = []

    def ensure(self, prove=False):
        self.calls.append(prove)


def run_of(client, locks, map_fn=lambda fn, items: [fn(i) for i in items]):
    run = RunContext(client, StackOptions("marks"), map_fn=map_fn)
    run.lock = locks
    return run


def marker(client, locks=None):
    return Marker(run_of(client, locks or Locks()))


def a_configmap(client, name="old"):
    ns = unique("marks")
    create(client, "/api/v1/namespaces", namespace(ns))
    obj = create(client, f"/api/v1/namespaces/{ns}/configmaps", configmap(name, ns))
    info = Discovery(client).index.lookup("", "ConfigMap", "v1")
    return ObjectId("", "ConfigMap", ns, name), info, obj


def annotation(client, oid):
    return ((live(client, cm_path(oid.namespace, oid.name)) or {}).get("metadata", {}).get("annotations") or {}).get(
        PRUNE_MARK_ANNOTATION)


def test_a_mark_is_the_servers_time_of_its_first_write_and_the_prune_time_follows_from_it(client):
    oid, info, obj = a_configmap(client)
    locks, cs = Locks(), ChangeSet()
    marker(client, locks).mark([(oid, info, obj, None)], 60, cs, dry_run=False)
    (entry,) = cs.entries
    stamped = annotation(client, oid)
    assert entry.action == C.MARKED and stamped not in (None, G.PENDING)
    assert entry.extra["prune_after"] == G.format_time(G.parse_time(stamped) + 60)
    assert locks.calls == [True]  # a write to the Lease the server accepted, before the marks


def test_check_mode_marks_nothing_and_reports_what_would_be_marked(client):
    oid, info, obj = a_configmap(client)
    locks, cs = Locks(), ChangeSet()
    marker(client, locks).mark([(oid, info, obj, 1000.0)], 60, cs, dry_run=True)
    assert [(e.action, e.extra["prune_after"]) for e in cs.entries] == [(C.MARKED, G.format_time(1000.0))]
    assert annotation(client, oid) is None and locks.calls == []


def test_an_object_changed_since_the_observation_is_not_marked(client):
    oid, info, obj = a_configmap(client)
    client.request("PATCH", cm_path(oid.namespace, oid.name), body={"data": {"k": "edited"}}, content_type=MERGE_PATCH)
    cs = ChangeSet()
    marker(client).mark([(oid, info, obj, None)], 60, cs, dry_run=False)  # obj: the stale observation
    (entry,) = cs.entries
    assert (entry.action, entry.code) == (C.SKIPPED, CHANGED) and annotation(client, oid) is None


def test_a_refused_mark_is_skipped_with_a_warning(kubesim, client, tmp_path):
    oid, info, obj = a_configmap(client)
    user = user_client(kubesim, tmp_path, unique("no-patch"), deny=[{"verbs": ["patch"], "resources": ["configmaps"]}])
    cs = ChangeSet()
    marker(user).mark([(oid, info, obj, None)], 60, cs, dry_run=False)
    (entry,) = cs.entries
    assert (entry.action, entry.code) == (C.SKIPPED, G.GRACE) and "refused" in entry.reason
    assert cs.warnings and "the next run retries" in cs.warnings[0]
    user.close()


class Back:
    """A desired object back in git, as ``unmark`` reads it."""

    def __init__(self, oid, info):
        self.oid, self.info, self.api_version = oid, info, "v1"

    def named(self):
        return str(self.oid)


def test_an_object_back_in_git_loses_its_mark_and_a_gone_one_counts_as_unmarked(client):
    oid, info, obj = a_configmap(client)
    marker(client).mark([(oid, info, obj, None)], 60, ChangeSet(), dry_run=False)
    assert annotation(client, oid) is not None
    gone_oid = ObjectId("", "ConfigMap", oid.namespace, "never-existed")
    cs = ChangeSet()
    marker(client).unmark([(Back(oid, info), info, None), (Back(gone_oid, info), None, None)], cs, dry_run=False)
    assert [(e.action, e.oid.name) for e in cs.entries] == [(C.UNMARKED, "old"), (C.UNMARKED, "never-existed")]
    assert annotation(client, oid) is None


def test_an_unmark_that_fails_fails_the_object_and_check_mode_writes_nothing(kubesim, client, tmp_path):
    oid, info, obj = a_configmap(client)
    marker(client).mark([(oid, info, obj, None)], 60, ChangeSet(), dry_run=False)
    cs = ChangeSet()
    marker(client).unmark([(Back(oid, info), info, None)], cs, dry_run=True)
    assert [e.action for e in cs.entries] == [C.UNMARKED] and annotation(client, oid) is not None
    user = user_client(kubesim, tmp_path, unique("no-unmark"), deny=[{"verbs": ["patch"], "resources": ["configmaps"]}])
    cs = ChangeSet()
    marker(user).unmark([(Back(oid, info), info, None)], cs, dry_run=False)
    (entry,) = cs.entries
    assert entry.action == C.FAILED and "its prune mark could not be removed" in entry.reason
    user.close()


def test_nothing_to_mark_or_unmark_asks_for_no_lock():
    locks = Locks()
    m = Marker(run_of(None, locks, map_fn=None))
    m.mark([], 60, ChangeSet(), dry_run=False)
    m.unmark([], ChangeSet(), dry_run=False)
    assert locks.calls == []
