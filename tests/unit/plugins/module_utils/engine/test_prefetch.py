"""prefetch.py and the client's offers: the reads ahead are the observation's own requests, taken once; a sync that
writes plans again on fresh reads; a failure fails the run once (issue 32)."""

import copy
from concurrent.futures import Future

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prefetch import Prefetch, answered, recorded_kinds
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError, KubeClient
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import Discovery

from tests.tools.net import closed_port

STACK = "prefetch-test"
NS = "prefetch-test-ns"



def dead_client():
    """A client of a server that refuses connections, retrying fast."""
    return KubeClient(f"https://127.0.0.1:{closed_port()}", max_attempts=2, backoff=0.001, retry_budget=5)


def test_an_offered_answer_is_taken_once_then_the_server_is_asked():
    client = dead_client()
    client.offer(("list", "/api/v1/configmaps", "a=b", 1000), answered([{"kind": "ConfigMap"}]))
    client.offer(("get", "/api/v1/namespaces/x/configmaps/r"), answered(None))
    assert client.list("/api/v1/configmaps", label_selector="a=b", limit=1000) == [{"kind": "ConfigMap"}]
    assert client.get_or_none("/api/v1/namespaces/x/configmaps/r") is None  # "no such object" is an answer too
    assert client.counts == {}
    with pytest.raises(ApiError):  # taken: the same call now goes to the server
        client.list("/api/v1/configmaps", label_selector="a=b", limit=1000)
    assert client.counts == {"GET": 2}


def test_an_offer_answers_only_the_same_request():
    client = dead_client()
    client.offer(("list", "/api/v1/configmaps", "a=b", 1000), answered([]))
    with pytest.raises(ApiError):
        client.list("/api/v1/configmaps", label_selector="a=c", limit=1000)  # another selector
    with pytest.raises(ApiError):
        client.list("/api/v1/configmaps", label_selector="a=b", limit=500)  # another page size
    assert client.list("/api/v1/configmaps", label_selector="a=b", limit=1000) == []


def test_a_failed_read_ahead_fails_the_call_with_its_error_and_anything_else_is_asked_again():
    client = dead_client()
    refused = ApiError(403, "Forbidden", "configmaps is forbidden")
    client.offer(("list", "/api/v1/configmaps", None, 500), answered(error=refused))
    with pytest.raises(ApiError) as e:
        client.list("/api/v1/configmaps")
    assert e.value is refused and client.counts == {}
    broken = Future()
    broken.set_exception(KeyError("a bug of the read ahead"))
    client.offer(("get", "/api/v1/namespaces/x/configmaps/r"), broken)
    with pytest.raises(ApiError) as e:  # asked again: the server's own answer
        client.get_or_none("/api/v1/namespaces/x/configmaps/r")
    assert e.value.status == 0 and client.counts == {"GET": 2}


def test_a_discovery_that_failed_ahead_fails_the_run_once():
    client = dead_client()
    prefetch = Prefetch(client, STACK)
    assert prefetch.ready(30)
    tried = client.counts["GET"]
    assert tried == 2  # the first discovery request, with its retries, then nothing more
    with pytest.raises(ApiError):
        _ = prefetch.discovery.index  # the engine's first read raises the same error, without asking again
    assert client.counts["GET"] == tried
    with pytest.raises(ApiError):
        _ = prefetch.discovery.index  # raised once: a later read asks again
    assert client.counts["GET"] > tried
    prefetch.close()


def test_failed_with_raises_once():
    discovery = Discovery(dead_client())
    error = ApiError(0, "ConnectionError", "cannot reach")
    discovery.failed_with(error)
    with pytest.raises(ApiError) as e:
        _ = discovery.index
    assert e.value is error and discovery.client.counts == {}


def record(stack, groups, owner=None):
    return {"metadata": {"labels": {"stacksync.io/record-of": owner or stack}},
            "data": {"stack": stack, "groupKinds": groups}}


def test_recorded_kinds_are_those_of_the_stacks_own_record():
    assert recorded_kinds(record(STACK, "ConfigMap,Deployment.apps"), STACK) == {("", "ConfigMap"), ("apps", "Deployment")}
    assert recorded_kinds(record(STACK, "ConfigMap", owner="other"), STACK) == set()
    assert recorded_kinds(record("other", "ConfigMap"), STACK) == set()
    assert recorded_kinds(None, STACK) == set()


def manifests(n, value="v"):
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    cms = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": NS},
            "data": {"k": value}} for i in range(n)]
    return [ns, *cms]


def client_of(kube):
    return build_client({"kubeconfig": kube.kubeconfig}, maxsize=4)[0]


def sync(client, resources, discovery=None):
    return StackManager(client, STACK, discovery=discovery, concurrency=4).sync(copy.deepcopy(resources))


def test_the_reads_ahead_are_the_observations_own(kube):
    sync(client_of(kube), manifests(5))
    plain = client_of(kube)
    assert sync(plain, manifests(5)).counts["unchanged"] == 6
    ahead = client_of(kube)
    prefetch = Prefetch(ahead, STACK, concurrency=4)
    assert prefetch.ready(30)
    assert sorted(info.kind for info in prefetch.listed) == ["ConfigMap", "Namespace"]
    assert sync(ahead, manifests(5), prefetch.discovery).counts["unchanged"] == 6
    assert ahead._offers == {}  # every answer read ahead was taken by the run
    assert ahead.counts == plain.counts  # and the run asked nothing twice
    prefetch.close()


def test_a_sync_that_writes_plans_again_on_fresh_reads(kube):
    sync(client_of(kube), manifests(3))
    ahead = client_of(kube)
    prefetch = Prefetch(ahead, STACK, concurrency=4)
    assert prefetch.ready(30)
    for future in list(ahead._offers.values()):
        future.result()  # the reads ahead are done: they still see cm-0
    assert kube.http.request("DELETE", f"/api/v1/namespaces/{NS}/configmaps/cm-0")[0] == 200
    changes = sync(ahead, manifests(3, value="changed"), prefetch.discovery)  # writes: plans again under the Lease
    actions = {e.oid.name: e.action for e in changes.entries}
    assert actions["cm-0"] == "created", actions  # seen gone by the fresh reads, not "configured" from the stale ones
    assert actions["cm-1"] == "configured"
    assert kube.http.get(f"/api/v1/namespaces/{NS}/configmaps/cm-0")[1]["data"] == {"k": "changed"}
    prefetch.close()
