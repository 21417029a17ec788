"""Faults (issue 9): failing requests, a killed run, concurrent runs, RBAC-limited credentials.

All simulator-only (fault injection, request log, per-token deny rules).
The fault sync uses the issue's 1,000 objects (about 7 s against the simulator);
``STACKSYNC_FAULT_OBJECTS`` sets another size.
"""

import datetime
import json
import os
import subprocess
import sys
import threading
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import object_name

from . import helpers as H

pytestmark = pytest.mark.sim_only

N_FAULT = H.env_int("STACKSYNC_FAULT_OBJECTS", 1000)


@pytest.fixture
def admin(kubesim):
    kubesim.configure_faults()
    c = H.client_for(kubesim.kubeconfig)
    yield c
    kubesim.configure_faults()
    c.close()


@pytest.fixture
def ns(admin):
    name = "rel-" + uuid.uuid4().hex[:6]
    H.create_namespace(admin, name)
    yield name
    # no cleanup: deleting a namespace of 1,000 objects costs the simulator seconds, and this module's
    # simulator is thrown away at the end anyway


def cms(ns, names, version="1"):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": ns}, "data": {"v": version, "n": n}}
            for n in names]


def live_cms(client, ns):
    return {o["metadata"]["name"]: o for o in client.list(f"/api/v1/namespaces/{ns}/configmaps")
            if not o["metadata"]["name"].startswith(("stacksync-", "kube-root-ca"))}


def log_since(sim, mark):
    return list(sim.requests)[mark:]


def deletes_in(entries, ns, resource="configmaps"):
    return [e for e in entries if e["method"] == "DELETE" and e["resource"] == resource and e["namespace"] == ns
            and e["code"] in (200, 202)]


def assert_converged(client, ns, desired):
    live = live_cms(client, ns)
    want = {m["metadata"]["name"]: m["data"] for m in desired}
    assert set(live) == set(want), f"extra {sorted(set(live) - set(want))[:10]}, missing {sorted(set(want) - set(live))[:10]}"
    drift = [n for n, o in live.items() if o.get("data") != want[n]]
    assert not drift, drift[:10]


# -- 5% failing requests ----------------------------------------------------------------------------
def test_five_percent_faults_converge_or_fail_clearly_and_never_prune_after_failed_apply(kubesim, admin, ns):
    """N-object sync with 5% of requests failing (500, 429 + Retry-After, dropped connections) plus
    latency spikes: converges within retries or fails clearly; a run with a failed apply prunes
    nothing; the next fault-free run converges."""
    stack = "faults-" + ns
    n = N_FAULT
    v1 = cms(ns, [f"o{i:04d}" for i in range(n)])
    cs, err = H.sync(admin, stack, v1, namespace=ns, record_namespace=ns, concurrency=8)
    assert err is None, err
    # v2: a tenth removed, the rest changed, a tenth added: every object is written
    keep = [f"o{i:04d}" for i in range(n // 10, n)]
    v2 = cms(ns, keep, "2") + cms(ns, [f"n{i:04d}" for i in range(n // 10)])

    # 5% of requests fail: 2.5% answer 500, 1% start a 429 (Retry-After: 1), 1.5% drop the connection
    kubesim.configure_faults(error_rate={"*": 0.025}, throttle_rate=0.01, retry_after=1, drop_rate={"*": 0.015},
                             spike_rate=0.01, spike_ms=300, seed=9)
    mark = len(kubesim.requests)
    started = time.time()
    cs, err = H.sync(admin, stack, v2, namespace=ns, record_namespace=ns, concurrency=8)
    elapsed = time.time() - started
    entries = log_since(kubesim.sim, mark)
    injected = sum(1 for e in entries if e["code"] in (500, 429, -1))
    kubesim.configure_faults()
    failed_applies = len(cs.errors) if cs is not None else 0
    if err is not None:
        # a clear message: names the stack and says what failed
        assert stack in str(err) or "cannot reach" in str(err) or "500" in str(err) or "429" in str(err), str(err)
    if err is not None or failed_applies:
        assert not deletes_in(entries, ns), f"pruned in a run that failed: {err}"
    else:
        assert_converged(admin, ns, v2)
    H.record_figures("faults_5pct", objects=n, requests=len(entries), faults_injected=injected,
                     converged_under_faults=err is None, failed_applies=failed_applies, seconds=round(elapsed, 1))
    assert injected >= len(entries) * 0.03, (injected, len(entries))

    # the next fault-free run converges, the one after is a no-op
    cs, err = H.sync(admin, stack, v2, namespace=ns, record_namespace=ns, concurrency=8)
    assert err is None, err
    assert_converged(admin, ns, v2)
    mark = len(kubesim.requests)
    cs, err = H.sync(admin, stack, v2, namespace=ns, record_namespace=ns, concurrency=8)
    assert err is None and not cs.changed
    assert not [e for e in log_since(kubesim.sim, mark) if e["method"] in ("POST", "PUT", "PATCH", "DELETE")]


def test_failed_apply_means_no_prune(kubesim, admin, ns):
    """One apply refused (403, not retried): the run fails naming it, and nothing is pruned."""
    stack = "noprune-" + ns
    v1 = cms(ns, ["a", "b", "c", "d"])
    assert H.sync(admin, stack, v1, namespace=ns, record_namespace=ns)[1] is None
    v2 = cms(ns, ["a", "b"], "2")  # c and d would be pruned
    mark = len(kubesim.requests)
    kubesim.fail_next(1, code=403, verb="patch")
    cs, err = H.sync(admin, stack, v2, namespace=ns, record_namespace=ns, concurrency=1)
    entries = log_since(kubesim.sim, mark)
    assert err is not None and "apply failed" in str(err) and "403" in str(err), err
    assert not deletes_in(entries, ns)
    assert {"c", "d"} <= set(live_cms(admin, ns))
    assert any("nothing was pruned" in w for w in cs.warnings), cs.warnings
    assert H.sync(admin, stack, v2, namespace=ns, record_namespace=ns)[1] is None
    assert_converged(admin, ns, v2)


# -- SIGKILL halfway ---------------------------------------------------------------------------------
PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: sync the repo
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kc }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        concurrency: 2
        resources: "{{ query('stacksync.k8s.manifests', repo) }}"
"""


def ansible_playbook():
    return os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def write_repo(path, manifests):
    import yaml

    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.yaml"):
        old.unlink()
    for i in range(0, len(manifests), 20):
        (path / f"part{i:03d}.yaml").write_text(yaml.safe_dump_all(manifests[i:i + 20]))


@pytest.mark.parametrize("in_process", [True, False], ids=["controller-process", "module-process"])
def test_sigkill_halfway_deletes_nothing_and_next_run_converges(kubesim, admin, ns, tmp_path, in_process):
    stack = "kill-" + ns
    names = [f"k{i:03d}" for i in range(200)]
    v1 = cms(ns, names)
    assert H.sync(admin, stack, v1, namespace=ns, record_namespace=ns)[1] is None
    uids = {n: o["metadata"]["uid"] for n, o in live_cms(admin, ns).items()}
    v2 = cms(ns, names[:100], "2") + cms(ns, [f"new{i:03d}" for i in range(50)])  # 100 to prune
    repo = tmp_path / "repo"
    write_repo(repo, [{k: v for k, v in m.items() if k != "metadata"} | {"metadata": {"name": m["metadata"]["name"]}}
                      for m in v2])
    play = tmp_path / "play.yml"
    play.write_text(PLAYBOOK)
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({"stack": stack, "kc": kubesim.kubeconfig, "ns": ns, "repo": str(repo),
                                 "stacksync_in_process": in_process}))
    kubesim.configure_faults(latency_ms=25)  # slow writes so the run is still applying when killed
    mark = len(kubesim.requests)
    proc = subprocess.Popen([ansible_playbook(), "-i", "localhost,", "-c", "local", "-e",
                             "ansible_python_interpreter=" + sys.executable, "-e", "@" + str(extra), str(play)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 120
    killed_after = None
    try:
        while time.time() < deadline and proc.poll() is None:
            writes = [e for e in log_since(kubesim.sim, mark) if e["method"] == "PATCH" and e["resource"] == "configmaps"
                      and e["namespace"] == ns and not (e["name"] or "").startswith("stacksync-")]
            if len(writes) >= 5:
                # controller and worker (which runs the engine itself, or its module process): a crash, mid-apply
                killed_procs = H.kill_tree(proc.pid)
                killed_after = len(writes)
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None and killed_after is None:
            H.kill_tree(proc.pid)
        proc.wait(30)
    output = proc.stdout.read().decode("utf-8", "replace")
    assert killed_after is not None, "the run ended before it could be killed: " + output[-2000:]
    expected = 2 if in_process else 3
    assert killed_procs >= expected, f"expected ansible-playbook, its worker (and its module process): {killed_procs}"
    time.sleep(0.5)  # requests in flight finish
    kubesim.configure_faults()
    entries = log_since(kubesim.sim, mark)
    applied = sum(1 for e in entries if e["method"] == "PATCH" and e["resource"] == "configmaps" and e["namespace"] == ns)
    assert applied < len(v2), f"the run was not interrupted halfway ({applied} applies)"
    assert not deletes_in(entries, ns), "the interrupted run deleted objects"
    live = live_cms(admin, ns)
    assert all(n in live and live[n]["metadata"]["uid"] == uid for n, uid in uids.items()), "an object was lost"

    # the killed run's Lease is still held: a run right now waits and gives up
    leases = admin.list(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases")
    _cs, err = H.sync(admin, stack, v2, namespace=ns, record_namespace=ns, lock_timeout=1)
    assert err is not None and "locked" in str(err), (err, leases)
    # ... until it expires (simulate its 60 s passing), then the next run converges
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{object_name(stack)}"
    lease = admin.get(lease_path)
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=600)
    lease["spec"]["renewTime"] = lease["spec"]["acquireTime"] = old.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    admin.replace(lease_path, lease)
    _cs, err = H.sync(admin, stack, v2, namespace=ns, record_namespace=ns)
    assert err is None, err
    assert_converged(admin, ns, v2)
    H.record_figures("sigkill", objects=len(v2), applies_before_kill=applied, deleted_by_interruption=0)


# -- two syncs at once -------------------------------------------------------------------------------
def _user_client(kubesim, tmp_path, name):
    token = kubesim.add_user(name, groups=["system:masters"], admin=True)
    path = kubesim.write_kubeconfig(str(tmp_path / (name + ".kubeconfig")), name, token)
    return H.client_for(path)


def _write_windows(entries, ns, user):
    times = [e["time"] for e in entries if e["user"] == user and e["namespace"] == ns and e["method"] in ("PATCH", "DELETE")
             and e["resource"] == "configmaps"]
    return (min(times), max(times)) if times else None


def test_concurrent_syncs_are_serialized_by_the_lease(kubesim, admin, ns, tmp_path):
    """Two runs of one stack at once: the second waits for the Lease; their writes never interleave."""
    stack = "conc-" + ns
    c1 = _user_client(kubesim, tmp_path, "runner-one-" + ns)
    c2 = _user_client(kubesim, tmp_path, "runner-two-" + ns)
    assert H.sync(admin, stack, cms(ns, [f"x{i:02d}" for i in range(40)]), namespace=ns, record_namespace=ns)[1] is None
    d1 = cms(ns, [f"x{i:02d}" for i in range(0, 30)], "one")  # prunes 30..39
    d2 = cms(ns, [f"x{i:02d}" for i in range(10, 40)], "two")  # prunes 0..9
    kubesim.configure_faults(latency_ms=10)
    mark = len(kubesim.requests)
    results = {}

    def run(key, client, desired):
        results[key] = H.sync(client, stack, desired, namespace=ns, record_namespace=ns, lock_timeout=60, concurrency=2)

    t1 = threading.Thread(target=run, args=("one", c1, d1))
    t2 = threading.Thread(target=run, args=("two", c2, d2))
    t1.start()
    time.sleep(0.05)
    t2.start()
    t1.join(120)
    t2.join(120)
    kubesim.configure_faults()
    entries = log_since(kubesim.sim, mark)
    assert results["one"][1] is None and results["two"][1] is None, (results["one"][1], results["two"][1])
    w1 = _write_windows(entries, ns, "runner-one-" + ns)
    w2 = _write_windows(entries, ns, "runner-two-" + ns)
    assert w1 and w2
    assert w1[1] < w2[0] or w2[1] < w1[0], f"the two runs wrote at the same time: {w1} {w2}"
    last = d2 if w2[0] > w1[0] else d1
    assert_converged(admin, ns, last)
    c1.close()
    c2.close()


def test_concurrent_sync_fails_on_held_lease_without_writing(kubesim, admin, ns, tmp_path):
    stack = "lock-" + ns
    c2 = _user_client(kubesim, tmp_path, "runner-late-" + ns)
    assert H.sync(admin, stack, cms(ns, [f"y{i:02d}" for i in range(100)]), namespace=ns, record_namespace=ns)[1] is None
    kubesim.configure_faults(latency_ms=30)  # the holder writes for ~3 s
    holder = {}
    t = threading.Thread(target=lambda: holder.update(r=H.sync(admin, stack, cms(ns, [f"y{i:02d}" for i in range(100)], "2"),
                                                               namespace=ns, record_namespace=ns, concurrency=1)))
    mark = len(kubesim.requests)
    t.start()
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{object_name(stack)}"
    deadline = time.time() + 30
    while admin.get_or_none(lease_path) is None and time.time() < deadline:
        time.sleep(0.01)
    # the late run replaces the whole stack (an intended prune of every object: past the default prune budget)
    _cs, err = H.sync(c2, stack, cms(ns, [f"z{i:02d}" for i in range(5)]), namespace=ns, record_namespace=ns, lock_timeout=0.3,
                      max_prune="100%")
    t.join(120)
    kubesim.configure_faults()
    assert err is not None and "locked by another run" in str(err), err
    late_writes = [e for e in log_since(kubesim.sim, mark) if e["user"] == "runner-late-" + ns
                   and e["method"] in ("PATCH", "DELETE", "PUT") and e["resource"] != "coordination.k8s.io/leases"]
    assert not late_writes, late_writes
    assert holder["r"][1] is None, holder["r"][1]
    c2.close()


# -- RBAC-limited credentials ------------------------------------------------------------------------
def test_rbac_limited_applies_what_it_may_and_deletes_nothing_unverified(kubesim, admin, ns, tmp_path):
    """A token that may not list Secrets cluster-wide, nor list Widgets-like kinds at all, nor delete
    ClusterRoles: applies, warns, prunes only what it could verify."""
    stack = "rbac-" + ns
    other_ns = ns + "-o"
    H.create_namespace(admin, other_ns)
    cr = f"rel-{ns}-cr"

    def desired(with_removed):
        out = cms(ns, ["keep"] + (["gone"] if with_removed else []))
        out += [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s-keep", "namespace": ns}, "stringData": {"a": "1"}}]
        if with_removed:
            out += [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s-gone", "namespace": other_ns},
                     "stringData": {"a": "1"}},
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": cr}, "rules": []},
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa-gone", "namespace": ns}}]
        return out

    assert H.sync(admin, stack, desired(True), namespace=ns, record_namespace=ns)[1] is None
    token = kubesim.add_user("limited-" + ns, groups=["system:masters"], admin=True, deny=[
        {"verbs": ["list", "watch"], "resources": ["secrets"], "namespaces": [""]},  # not cluster-wide
        {"verbs": ["list", "watch"], "resources": ["serviceaccounts"]},  # not at all
        {"verbs": ["delete"], "resources": ["rbac.authorization.k8s.io/clusterroles"]},
    ])
    limited = H.client_for(kubesim.write_kubeconfig(str(tmp_path / "limited.kubeconfig"), "limited-" + ns, token))
    mark = len(kubesim.requests)
    cs, err = H.sync(limited, stack, desired(False), namespace=ns, record_namespace=ns)
    entries = log_since(kubesim.sim, mark)
    # applied what it may
    assert err is None, err
    # verified and pruned: the ConfigMap it could list everywhere
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/gone") is None
    # could not verify: not deleted, and said so
    assert admin.get_or_none(f"/api/v1/namespaces/{other_ns}/secrets/s-gone") is not None
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/serviceaccounts/sa-gone") is not None
    assert admin.get_or_none("/apis/rbac.authorization.k8s.io/v1/clusterroles/" + cr) is not None
    text = " ".join(cs.warnings)
    assert "Secret" in text and "ServiceAccount" in text and "ClusterRole" in text, cs.warnings
    # it never tried to delete what it could not list
    assert not [e for e in entries if e["method"] == "DELETE" and e["resource"] in ("secrets", "serviceaccounts")]
    limited.close()
    # what it could not verify or delete stays recorded as the stack's: a run with full rights prunes it
    cs, err = H.sync(admin, stack, desired(False), namespace=ns, record_namespace=ns)
    assert err is None, err
    assert admin.get_or_none(f"/api/v1/namespaces/{other_ns}/secrets/s-gone") is None
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/serviceaccounts/sa-gone") is None
    assert admin.get_or_none("/apis/rbac.authorization.k8s.io/v1/clusterroles/" + cr) is None
    assert admin.get_or_none(f"/api/v1/namespaces/{ns}/secrets/s-keep") is not None
    H.delete_quietly(admin, "/api/v1/namespaces/" + other_ns)
    H.delete_quietly(admin, "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + cr)


def test_lease_create_whose_response_is_lost_does_not_lock_out_its_own_run(kubesim, admin, ns):
    """The Lease POST reaches the server but the answer is lost (connection reset after the write, a
    case the simulator's dropped connections -- which drop before handling -- do not cover): the
    client retries, gets 409, and the run must recognise the Lease as its own instead of waiting for
    itself until lock_timeout."""
    import urllib3

    stack = "lostresp-" + ns
    real = admin.exchange
    lost = []

    def exchange(method, target, *args, **kwargs):
        answer = real(method, target, *args, **kwargs)
        if method == "POST" and "/leases" in target and not lost:
            lost.append(target)
            raise urllib3.exceptions.ProtocolError("Connection aborted (response lost after the write)")
        return answer

    admin.exchange = exchange
    try:
        started = time.time()
        _cs, err = H.sync(admin, stack, cms(ns, ["l0"]), namespace=ns, record_namespace=ns, lock_timeout=5)
    finally:
        del admin.exchange
    assert lost, "the Lease was never created"
    assert err is None, f"{err} (after {time.time() - started:.1f} s)"
