"""Fenced deletes (issue 28, items 10 and 11): a DELETE never acts on a stale view, nor after the lock is lost.

A validating admission webhook on 127.0.0.1 (:mod:`.webhook`) holds one request of the run to open the race
window: another stack takes an object over while our DELETE (or our apply) waits, a run is stopped
(SIGSTOP) past its Lease while its DELETE waits and a newer run takes the lock. On the simulator the same
webhook configuration is run by ``tests/kubesim/webhooks.py``; on a real kube-apiserver
(``STACKSYNC_TEST_KUBECONFIG``) by the server itself.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import object_name

from . import helpers as H
from .webhook import LABEL, Webhook

NS_PREFIX = "fd"
REPO = H.REPO


def uid():
    return uuid.uuid4().hex[:6]


def cm(name, ns, held=False, **data):
    meta = {"name": name, "namespace": ns}
    if held:
        meta["labels"] = {LABEL: "x"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": "v"}}


def sync(client, stack, resources, ns, **kw):
    kw.setdefault("lock_timeout", 30)
    kw.setdefault("poll_interval", 0.2)
    return StackManager(client, stack, namespace=ns, record_namespace=ns, **kw).sync(resources)


def in_thread(fn):
    """Run ``fn`` in a thread: ``(thread, outcome)`` where outcome gets ``result`` or ``error``."""
    outcome = {}

    def run():
        try:
            outcome["result"] = fn()
        except StackError as e:
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def path(ns, name):
    return f"/api/v1/namespaces/{ns}/configmaps/{name}"


# -- item 10: an object taken over after the observation is not deleted --------------------------------------
def test_a_delete_held_while_another_stack_takes_the_object_over_deletes_nothing(admin, ns):
    a, b = "fda-" + uid(), "fdb-" + uid()
    sync(admin, a, [cm("keep", ns), cm("moving", ns, held=True)], ns)
    with Webhook(hold=lambda r: r["operation"] == "DELETE" and r["name"] == "moving") as hook:
        hook.install(admin, ns, ["DELETE"])
        thread, outcome = in_thread(lambda: sync(admin, a, [cm("keep", ns)], ns))
        hook.wait_held()  # a's DELETE of "moving" waits in admission ...
        sync(admin, b, [cm("moving", ns, held=True)], ns)  # ... while stack b takes the object over
        hook.release()
        thread.join(60)
    cs = outcome["result"]
    live = admin.get(path(ns, "moving"))
    assert live["metadata"]["labels"][STACK_LABEL] == b, live["metadata"]
    assert not cs.pruned, cs.pruned
    (kept,) = [e for e in cs.skipped if e["name"] == "moving"]
    assert kept["code"] == "not-owned" and "changed since the run observed it" in kept["reason"], kept


def test_an_object_taken_over_while_the_run_applies_is_not_deleted(admin, ns):
    # the run observed "moving" as its own, then applies "slow" (held by the webhook) before it prunes
    a, b = "fda-" + uid(), "fdb-" + uid()
    sync(admin, a, [cm("slow", ns, held=True), cm("moving", ns)], ns)
    with Webhook(hold=lambda r: r["operation"] == "UPDATE" and r["name"] == "slow") as hook:
        hook.install(admin, ns, ["UPDATE"])
        thread, outcome = in_thread(lambda: sync(admin, a, [cm("slow", ns, held=True, k="changed")], ns))
        hook.wait_held()
        sync(admin, b, [cm("moving", ns, k="b's now")], ns)
        hook.release()
        thread.join(60)
    cs = outcome["result"]
    live = admin.get(path(ns, "moving"))
    assert live["metadata"]["labels"][STACK_LABEL] == b and live["data"] == {"k": "b's now"}
    assert not cs.pruned and [(e["name"], e["code"]) for e in cs.skipped] == [("moving", "not-owned")], cs.skipped


def test_an_object_edited_after_the_observation_is_decided_again_and_deleted_if_still_prunable(admin, ns):
    # someone edits the object (a label of their own): it is still the stack's and not desired, so it goes
    stack = "fde-" + uid()
    sync(admin, stack, [cm("keep", ns), cm("old", ns, held=True)], ns)
    with Webhook(hold=lambda r: r["operation"] == "DELETE" and r["name"] == "old") as hook:
        hook.install(admin, ns, ["DELETE"])
        thread, outcome = in_thread(lambda: sync(admin, stack, [cm("keep", ns)], ns))
        hook.wait_held()
        H.merge_patch(admin, H.oid_of(admin.get(path(ns, "old"))), {"metadata": {"labels": {"team": "x"}}})
        hook.release()
        thread.join(60)
    cs = outcome["result"]
    assert [e["name"] for e in cs.pruned] == ["old"] and admin.get_or_none(path(ns, "old")) is None


# -- item 11: a run proves it holds its lock, by a Lease write, before it deletes ------------------------------
def test_a_lease_written_by_another_run_just_before_the_deletes_stops_them(admin, ns):
    # a long lease: neither the renewal thread nor the clock would notice before the deletes
    stack = "fdl-" + uid()
    sync(admin, stack, [cm("keep", ns), cm("old", ns)], ns)
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{object_name(stack)}"
    deletes, real = [], admin.request

    def request(method, p, *a, **kw):
        if method == "DELETE" and "/leases/" not in p:
            deletes.append(p)
        if method == "PATCH" and p.endswith("/configmaps/new"):  # the apply, before the prune: another run takes over
            lease = real("GET", lease_path)
            lease["spec"]["holderIdentity"] = "another-run"
            real("PUT", lease_path, body=lease)
        return real(method, p, *a, **kw)

    admin.request = request
    try:
        with pytest.raises(StackError, match="lost the lock") as info:
            sync(admin, stack, [cm("keep", ns), cm("new", ns)], ns, lease_duration=600)
    finally:
        admin.__dict__.pop("request", None)
        H.delete_quietly(admin, lease_path)
    assert not deletes and admin.get_or_none(path(ns, "old")) is not None
    assert "changed by someone else" in str(info.value)


RUNNER = """
import json, sys
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
args = json.load(open(sys.argv[1]))
client, _ns = build_client({"kubeconfig": args["kubeconfig"]})
try:
    cs = StackManager(client, args["stack"], namespace=args["ns"], record_namespace=args["ns"], concurrency=1,
                      lease_duration=args["lease"], lock_timeout=30).sync(args["resources"])
    print(json.dumps({"pruned": [e["name"] for e in cs.pruned]}))
except StackError as e:
    print(json.dumps({"error": str(e), "pruned": [x["name"] for x in (e.changeset.pruned if e.changeset else [])]}))
"""


def test_a_run_stopped_past_its_lease_mid_prune_deletes_nothing_once_resumed(kube, admin, ns, tmp_path):
    stack, lease = "fds-" + uid(), 3
    names = ["a1", "a2", "a3"]
    declared = [cm("keep", ns)] + [cm(n, ns, held=n == "a1") for n in names]
    sync(admin, stack, declared, ns)
    uids = {n: admin.get(path(ns, n))["metadata"]["uid"] for n in names[1:]}
    (tmp_path / "args.json").write_text(json.dumps(dict(kubeconfig=str(kube.kubeconfig), stack=stack, ns=ns, lease=lease,
                                                        resources=[cm("keep", ns)])))
    # the collection as this test session imports it (the installed tarball in make test, else the dev symlink)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.environ["ANSIBLE_COLLECTIONS_PATH"], str(REPO)]))
    with Webhook(hold=lambda r: r["operation"] == "DELETE" and r["name"] == "a1") as hook:
        hook.install(admin, ns, ["DELETE"])
        proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path / "args.json")], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        try:
            hook.wait_held(60)  # the old run is mid-prune: its first DELETE waits in admission
            os.kill(proc.pid, signal.SIGSTOP)
            hook.release()  # that DELETE goes through; the old run, stopped, does not see the answer yet
            time.sleep(lease + 1.5)
            # a newer run takes the expired lock over and declares the objects again
            cs = sync(admin, stack, declared, ns)
            assert {e["name"]: e["action"] for e in cs.applied if e["action"] != "unchanged"} == {"a1": "created"}, cs.applied
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=120)
    result = json.loads(out.strip().splitlines()[-1])
    assert "lost the lock" in result.get("error", ""), (out, err[-2000:])
    assert result["pruned"] == ["a1"]  # the DELETE sent before it was stopped; nothing after it resumed
    for n in names[1:]:
        assert admin.get(path(ns, n))["metadata"]["uid"] == uids[n], n
    assert admin.get_or_none(path(ns, "a1")) is not None


def test_the_window_between_a_lease_proof_and_a_delete_is_bounded_and_measured(admin, ns):
    """Every DELETE reaches the server's admission at most ``proof_age`` (a tenth of the lease) after a Lease write
    of the run that the server accepted (measured: build/reliability-figures.json, section fenced_deletes)."""
    stack, count, lease = "fdw-" + uid(), 40, 10
    sync(admin, stack, [cm("keep", ns)] + [cm(f"c{i:02d}", ns, held=True) for i in range(count)], ns)
    accepted, real = [], admin.request

    def request(method, p, *a, **kw):
        answer = real(method, p, *a, **kw)
        if method == "PUT" and "/leases/" in p:
            accepted.append(time.time())  # the server accepted this Lease write: a proof from here on
        return answer

    with Webhook() as hook:
        hook.install(admin, ns, ["DELETE"])
        admin.request = request
        try:
            cs = sync(admin, stack, [cm("keep", ns)], ns, lease_duration=lease, max_prune="100%", concurrency=4)
        finally:
            admin.__dict__.pop("request", None)
        arrivals = [t for t, op, _ns, name in hook.calls if op == "DELETE" and name.startswith("c")]
    assert len(cs.pruned) == count and len(arrivals) == count
    windows = sorted(t - max(a for a in accepted if a <= t) for t in arrivals)
    proof_age = lease * 0.1
    H.record_figures("fenced_deletes", deletes=count, lease_duration_s=lease, proof_age_s=proof_age,
                     lease_writes=len(accepted), window_max_s=round(windows[-1], 3),
                     window_median_s=round(windows[len(windows) // 2], 3))
    assert windows[-1] <= proof_age + 0.5, windows
