"""shared_lists.py: the stacks of one sources task list each kind once; a run takes its own part as its first
observation's answer; any write but a stack's own state drops what is held (issue 32)."""

import copy

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prefetch import Prefetch
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.shared_lists import (
    MAX_SELECTOR,
    SharedListFault,
    SharedLists,
    groups_of,
    part_of,
    shared_selector,
    state_paths,
    written_path,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

STACKS = ("shared-a", "shared-b")


def test_the_selector_names_every_stack_once():
    assert shared_selector(["b", "a", "b"]) == "stacksync.io/stack in (a,b)"


def test_many_stacks_are_listed_in_groups_whose_selector_a_proxy_accepts():
    stacks = [f"stack-of-a-long-name-{i:04d}" for i in range(400)]
    groups = groups_of(stacks)
    assert sorted(s for g in groups for s in g) == sorted(stacks) and len(groups) > 1
    assert all(len(shared_selector(g)) <= MAX_SELECTOR for g in groups)
    assert len(shared_selector(groups[0] + groups[1][:1])) > MAX_SELECTOR  # each group as full as it may be
    shared = SharedLists(stacks)
    client = Recorder([labelled("x", stacks[0]), labelled("y", stacks[-1])])
    assert shared.items(client, "conn", stacks[0], "/api/v1/configmaps", 1000) == [labelled("x", stacks[0])]
    assert shared.items(client, "conn", stacks[-1], "/api/v1/configmaps", 1000) == [labelled("y", stacks[-1])]
    assert len(client.lists) == 2 and client.lists[0][1] != client.lists[1][1]  # one list per group


def test_a_post_writes_the_object_its_body_names():
    assert written_path("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                        {"metadata": {"name": "stacksync-a"}}) == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/stacksync-a"
    assert written_path("PATCH", "/api/v1/namespaces/x/configmaps/c?fieldManager=m", {}) == "/api/v1/namespaces/x/configmaps/c"
    assert written_path("POST", "/api/v1/namespaces", {"metadata": {}}) == "/api/v1/namespaces"


def test_the_state_paths_are_the_stacks_record_key_and_lease():
    paths = state_paths("a", "kube-system")
    assert len(paths) == 3
    assert all("/namespaces/kube-system/" in p for p in paths)
    assert {p.split("/")[-2] for p in paths} == {"configmaps", "secrets", "leases"}


def test_a_stack_gets_only_the_objects_labelled_with_its_name():
    items = [{"metadata": {"name": "x", "labels": {"stacksync.io/stack": "a"}}},
             {"metadata": {"name": "y", "labels": {"stacksync.io/stack": "ab"}}},
             {"metadata": {"name": "z"}}]
    assert [o["metadata"]["name"] for o in part_of(items, "a")] == ["x"]
    assert part_of(items, "b") == []


class Recorder:
    """A client stand-in that answers lists from ``items`` and records them."""

    def __init__(self, items, error=None):
        self.items, self.error, self.lists, self.on_write = items, error, [], None

    def list_now(self, path, selector, limit):
        self.lists.append((path, selector, limit))
        if self.error is not None:
            raise self.error
        return copy.deepcopy(self.items)  # each answer decoded anew


def labelled(name, stack):
    return {"metadata": {"name": name, "labels": {"stacksync.io/stack": stack}}}


def test_one_list_per_kind_and_connection_and_copies_for_a_second_run_of_a_stack():
    shared = SharedLists(STACKS)
    client = Recorder([labelled("x", "shared-a"), labelled("y", "shared-b")])
    first = shared.items(client, "conn", "shared-a", "/api/v1/configmaps", 1000)
    assert shared.items(client, "conn", "shared-b", "/api/v1/configmaps", 1000) == [labelled("y", "shared-b")]
    assert client.lists == [("/api/v1/configmaps", "stacksync.io/stack in (shared-a,shared-b)", 1000)]
    again = shared.items(client, "conn", "shared-a", "/api/v1/configmaps", 1000)
    assert again == first and again[0] is not first[0]  # its apply run may have changed what it was given
    shared.items(client, "other-credentials", "shared-a", "/api/v1/configmaps", 1000)
    shared.items(client, "conn", "shared-a", "/api/v1/secrets", 1000)
    assert len(client.lists) == 3 and shared.listed == 3


def test_a_list_read_while_a_write_is_under_way_is_not_kept():
    shared = SharedLists(STACKS)
    client = Recorder([labelled("x", "shared-a")])
    shared.watch(client, "shared-a", "kube-system")
    client.on_write("PATCH", "/api/v1/namespaces/x/configmaps/x", None, {})  # sent
    shared.items(client, "conn", "shared-b", "/api/v1/configmaps", 1000)  # may not see it yet
    client.on_write("PATCH", "/api/v1/namespaces/x/configmaps/x", None, {})  # done
    shared.items(client, "conn", "shared-b", "/api/v1/configmaps", 1000)
    assert len(client.lists) == 2


def test_a_list_answers_for_max_age_seconds_then_is_read_again():
    now = [100.0]
    shared = SharedLists(STACKS, clock=lambda: now[0], max_age=30)
    client = Recorder([labelled("x", "shared-a")])
    first = shared.items(client, "conn", "shared-a", "/api/v1/configmaps", 1000)
    now[0] += 30
    assert shared.items(client, "conn", "shared-b", "/api/v1/configmaps", 1000) == [] and len(client.lists) == 1
    now[0] += 0.5
    again = shared.items(client, "conn", "shared-a", "/api/v1/configmaps", 1000)
    assert len(client.lists) == 2 and again[0] is not first[0]


def test_a_failed_list_is_not_kept():
    shared = SharedLists(STACKS)
    refused = ApiError(403, "Forbidden", "configmaps is forbidden")
    client = Recorder([], error=refused)
    for stack in STACKS:
        with pytest.raises(ApiError) as e:
            shared.items(client, "conn", stack, "/api/v1/configmaps", 1000)
        assert e.value is refused  # what the run's own list of the kind would be told
    assert len(client.lists) == 2  # each run asked the server: its own answer
    client.error = ApiError(414, "RequestURITooLong", "the request line is too long")
    with pytest.raises(SharedListFault):  # not an answer about the kind: the run lists on its own
        shared.items(client, "conn", STACKS[0], "/api/v1/configmaps", 1000)


def test_a_run_lists_on_its_own_when_the_shared_list_fails(kube):
    run(kube, "shared-a", manifests("shared-a"))
    shared = SharedLists(STACKS)
    asked = []

    def refused_by_a_proxy(*args):
        asked.append(args[3])
        raise SharedListFault("414 RequestURITooLong")

    shared.items = refused_by_a_proxy
    changes, _client = run(kube, "shared-a", manifests("shared-a"), shared)
    assert sorted(asked) == ["/api/v1/configmaps", "/api/v1/namespaces"]
    assert changes.counts["unchanged"] == 4 and not changes.warnings, (changes.counts, changes.warnings)


def test_writes_drop_the_lists_but_a_stacks_own_state_dry_runs_and_reviews():
    shared = SharedLists(STACKS)
    client = Recorder([labelled("x", "shared-a")])
    shared.watch(client, "shared-a", "kube-system")
    shared.items(client, "conn", "shared-a", "/api/v1/configmaps", 1000)
    for path in sorted(state_paths("shared-a", "kube-system")):
        client.on_write("PATCH", path, {"fieldManager": "m"}, {})
    client.on_write("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", None,
                    {"metadata": {"name": sorted(state_paths("shared-a", "kube-system"))[0].split("/")[-1]}})
    client.on_write("PATCH", "/api/v1/namespaces/x/configmaps/x", {"dryRun": "All"}, {})
    client.on_write("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", None,
                    {"kind": "SelfSubjectAccessReview"})  # a question, not a write
    shared.items(client, "conn", "shared-a", "/api/v1/configmaps", 1000)
    assert len(client.lists) == 1 and shared.dropped == 0
    client.on_write("PATCH", sorted(state_paths("shared-b", "kube-system"))[0], None, {})  # another stack's state
    shared.items(client, "conn", "shared-a", "/api/v1/configmaps", 1000)
    assert len(client.lists) == 2 and shared.dropped == 1
    client.on_write("DELETE", "/api/v1/namespaces/x", None, {})
    shared.items(client, "conn", "shared-a", "/api/v1/configmaps", 1000)
    assert len(client.lists) == 3 and shared.dropped == 2


# -- runs of the engine on the simulator ------------------------------------------------------------------------

def manifests(stack, value="v", n=3):
    ns = f"{stack}-ns"
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}] + [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": ns},
         "data": {"k": value}} for i in range(n)]


def run(kube, stack, resources, shared=None, **options):
    """One run of ``stack`` as the runner makes it in a sources task: reads ahead, from ``shared`` if given."""
    client = build_client({"kubeconfig": kube.kubeconfig}, maxsize=4)[0]
    if shared is not None:
        shared.watch(client, stack, "kube-system")
    prefetch = Prefetch(client, stack, concurrency=4, shared=shared, connection="conn")
    try:
        assert prefetch.ready(30)
        manager = StackManager(client, stack, discovery=prefetch.discovery, concurrency=4, **options)
        changes = manager.sync(copy.deepcopy(resources))
    finally:
        prefetch.close()
    return changes, client


def lists_sent(client):
    return client.counts.get("GET", 0)


def test_the_stacks_of_a_task_list_each_kind_once_and_see_their_own_objects(kube):
    for stack in STACKS:
        run(kube, stack, manifests(stack))
    alone = [run(kube, stack, manifests(stack))[1] for stack in STACKS]  # each run lists its kinds
    shared = SharedLists(STACKS)
    together = []
    for stack in STACKS:
        changes, client = run(kube, stack, manifests(stack), shared)
        assert changes.counts["unchanged"] == 4 and not changes.pruned, changes.counts
        together.append(client)
    assert shared.listed == 2 and shared.dropped == 0  # ConfigMap and Namespace, once for both stacks
    assert lists_sent(together[0]) == lists_sent(alone[0])  # the first run asks as many (the whole kinds)
    assert lists_sent(together[1]) == lists_sent(alone[1]) - 2  # the second takes its part of them
    # a new commit of the same files writes only the stacks' records: the lists stay
    for stack in STACKS:
        changes, _client = run(kube, stack, manifests(stack), shared, commit="c2")
        assert changes.counts["unchanged"] == 4
    assert shared.listed == 2 and shared.dropped == 0


def test_what_a_run_wrote_is_never_answered_from_before_it(kube):
    for stack in STACKS:
        run(kube, stack, manifests(stack))
    shared = SharedLists(STACKS)
    run(kube, "shared-a", manifests("shared-a"), shared)  # the lists are taken
    changes, _client = run(kube, "shared-a", manifests("shared-a", value="new"), shared)  # writes: drops them
    assert changes.counts["configured"] == 3 and shared.dropped == 1
    again, _client = run(kube, "shared-a", manifests("shared-a", value="new"), shared)
    assert again.counts["unchanged"] == 4, again.counts  # not "configured" again from the lists before its write
    # a run that deletes: stack b's objects of a deleted namespace are seen gone by the next run of b
    run(kube, "shared-b", manifests("shared-b"), shared)
    assert kube.http.request("DELETE", "/api/v1/namespaces/shared-b-ns/configmaps/cm-0")[0] == 200  # not the task's
    pruned, _client = run(kube, "shared-a", manifests("shared-a", value="new", n=2), shared)
    assert [e.oid.name for e in pruned.entries if e.action == "pruned"] == ["cm-2"]
    b, _client = run(kube, "shared-b", manifests("shared-b"), shared)
    assert b.counts["created"] == 1, b.counts  # cm-0, listed after stack a's prune
