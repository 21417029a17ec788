"""observe.py: what one run reads of its stack (the record, one label-selected list per kind), on the simulator.

Kinds that cannot be listed are unverified (warned about, never guessed); objects of a namesake stack whose
record lives elsewhere are not ours; desired objects that are some stack's state are refused.
"""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    RECORD_LABEL,
    RECORD_NAMESPACE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import RunContext
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Observer
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import StackOptions
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import prepare, stamp_all
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import RecordError
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import Discovery

from ..simengine import client_of, configmap, create, namespace, sync, unique, user_client

CM = ("", "ConfigMap")
CMS = "/api/v1/namespaces/%s/configmaps"


@pytest.fixture(scope="module")
def client(kubesim):
    c = client_of(kubesim)
    yield c
    c.close()


def observer(client, stack, **options):
    opts = StackOptions(stack, **options)
    return Observer(RunContext(client, opts, Discovery(client), map_fn=map))


def observe(obs, resources):
    """``(Snapshot, ChangeSet)`` of observing the stack with desired ``resources``."""
    desired = prepare(resources, obs.discovery, obs.opts, lambda message: None)
    stamp_all(desired, obs.opts.stack, None)
    changeset = ChangeSet()
    return obs.observe(desired, changeset), changeset


def cm_id(ns, name):
    return ObjectId("", "ConfigMap", ns, name)


def labelled(name, ns, stack, **annotations):
    body = configmap(name, ns, annotations=annotations or None)
    body["metadata"]["labels"] = {STACK_LABEL: stack}
    return body


def test_the_snapshot_holds_the_stacks_objects_of_recorded_and_desired_kinds(client):
    ns, stack = unique("o-ours"), unique("s")
    sync(client, stack, [namespace(ns), configmap("a", ns), configmap("b", ns)])
    create(client, CMS % ns, configmap("not-ours", ns))
    # only the Namespace is desired now: the ConfigMaps are still listed (their kind is recorded)
    snap, cs = observe(observer(client, stack), [namespace(ns)])
    assert sorted(snap.ours) == [cm_id(ns, "a"), cm_id(ns, "b"), ObjectId("", "Namespace", "", ns)]
    info, obj = snap.ours[cm_id(ns, "a")]
    assert info.plural == "configmaps" and obj["metadata"]["labels"][STACK_LABEL] == stack
    assert snap.unverified == set() and snap.others == {} and cs.warnings == []


def test_a_kind_never_recorded_nor_desired_is_only_read_by_a_full_prune_scan(client):
    ns, stack = unique("o-full"), unique("s")
    sync(client, stack, [namespace(ns)])
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot", "namespace": ns,
                                                                     "labels": {STACK_LABEL: stack}}}
    create(client, f"/api/v1/namespaces/{ns}/serviceaccounts", sa)
    sa_id = ObjectId("", "ServiceAccount", ns, "robot")
    assert sa_id not in observe(observer(client, stack), [namespace(ns)])[0].ours
    assert sa_id in observe(observer(client, stack, full_prune_scan=True), [namespace(ns)])[0].ours


def test_a_desired_object_another_stack_labelled_is_claimed_by_it(client):
    ns, stack = unique("o-claim"), unique("s")
    create(client, "/api/v1/namespaces", namespace(ns))
    create(client, CMS % ns, labelled("theirs", ns, "other-stack"))
    snap, _cs = observe(observer(client, stack), [configmap("theirs", ns), configmap("free", ns)])
    assert snap.others == {cm_id(ns, "theirs"): "other-stack"} and snap.ours == {}


def test_an_object_of_a_namesake_stack_with_its_record_elsewhere_is_not_ours(client):
    ns, stack = unique("o-namesake"), unique("s")
    create(client, "/api/v1/namespaces", namespace(ns))
    create(client, CMS % ns, labelled("mine", ns, stack, **{RECORD_NAMESPACE_ANNOTATION: "kube-system"}))
    create(client, CMS % ns, labelled("twin", ns, stack, **{RECORD_NAMESPACE_ANNOTATION: "team-b"}))
    obs = observer(client, stack)
    snap, _cs = observe(obs, [configmap("mine", ns), configmap("twin", ns)])
    assert list(snap.ours) == [cm_id(ns, "mine")]
    assert snap.others == {cm_id(ns, "twin"): f"{stack} (record in namespace team-b)"}
    assert obs.record.related_namespaces == {"team-b"}  # its records are read before anything is pruned


def test_without_the_right_to_list_a_kind_cluster_wide_it_is_read_per_desired_namespace_and_unverified(
        kubesim, client, tmp_path):
    ns, stack = unique("o-partial"), unique("s")
    sync(client, stack, [namespace(ns), configmap("a", ns)])
    user = user_client(kubesim, tmp_path, unique("ns-reader"),
                       deny=[{"verbs": ["list"], "resources": ["configmaps"], "namespaces": [""]}])
    snap, cs = observe(observer(user, stack), [namespace(ns), configmap("a", ns)])
    assert cm_id(ns, "a") in snap.ours  # read in its namespace
    assert snap.unverified == {CM} and snap.partial_namespaces == {CM: [ns]}
    assert cs.warnings == [f"cannot list ConfigMap in all namespaces (only in {ns}): its objects elsewhere are not "
                           "checked or pruned"]


def test_a_kind_that_cannot_be_listed_is_unverified_with_a_warning_and_nothing_of_it_is_ours(kubesim, client, tmp_path):
    ns, stack = unique("o-denied"), unique("s")
    sync(client, stack, [namespace(ns), configmap("a", ns)])
    user = user_client(kubesim, tmp_path, unique("no-cm"), deny=[{"verbs": ["list"], "resources": ["configmaps"]}])
    snap, cs = observe(observer(user, stack), [namespace(ns), configmap("a", ns)])
    assert snap.unverified == {CM} and list(snap.ours) == [ObjectId("", "Namespace", "", ns)]
    assert len(cs.warnings) == 1 and cs.warnings[0].startswith("cannot list ConfigMap (")
    assert cs.warnings[0].endswith("): its objects are not checked or pruned")


def test_a_desired_object_labelled_as_a_stacks_state_is_refused(client):
    ns, stack = unique("o-state"), unique("s")
    create(client, "/api/v1/namespaces", namespace(ns))
    record_like = configmap("stacksync-other", ns)
    record_like["metadata"]["labels"] = {RECORD_LABEL: "other"}
    create(client, CMS % ns, record_like)
    with pytest.raises(RecordError, match=r"this is the state of stack 'other' \(labelled stacksync.io/record-of\)"):
        observe(observer(client, stack), [configmap("stacksync-other", ns)])


def test_a_state_name_in_a_namespace_that_holds_records_is_refused_even_if_it_does_not_exist(client):
    ns, stack = unique("o-holds"), unique("s")
    create(client, "/api/v1/namespaces", namespace(ns))
    sync(client, unique("keeper"), [configmap("a", ns)], record_namespace=ns)  # ns now holds a stack's record
    with pytest.raises(RecordError, match=f"namespace {ns} holds stack records"):
        observe(observer(client, stack), [configmap("stacksync-new", ns)])
    # elsewhere the same name is an ordinary ConfigMap
    other = unique("o-free")
    snap, _cs = observe(observer(client, stack), [namespace(other), configmap("stacksync-new", other)])
    assert snap.ours == {}


def test_an_unavailable_aggregated_api_is_warned_about(kubesim_factory):
    sim = kubesim_factory(tls=True)
    client = client_of(sim)
    try:
        create(client, "/apis/apiregistration.k8s.io/v1/apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1beta1.metrics.example.io"},
            "spec": {"group": "metrics.example.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                     "versionPriority": 100, "service": {"namespace": "kube-system", "name": "metrics"}}})
        snap, cs = observe(observer(client, "s"), [namespace("apps")])
        assert cs.warnings == ["API metrics.example.io/v1beta1 is unavailable (its aggregated API server did not answer "
                               "discovery): its kinds cannot be applied, checked or pruned, and no Namespace is pruned "
                               "while it is"]
        assert snap.unverified == set()
    finally:
        client.close()
