"""``stacksync.k8s.stack_info`` through ansible-playbook, on the simulator and on a real control plane (issue 19).

* Asked exactly like the sync: the same ``src`` / ``render`` as ``stacksync.k8s.stack``, rendered by the
  same action code, in the controller's process or as a module process on the same decision; what
  ``stack_info`` reports as OutOfSync / Missing / Extraneous is exactly what the ``stack`` task that
  follows it then configures, creates and prunes.
* Health of a custom resource whose controller (this test, writing the status subresource as a
  controller does, with ``observedGeneration``) reports ``Ready=False``: ``stack_info`` says Degraded with
  the condition's reason and message; ``stack`` with ``wait`` fails fast when the controller also says
  ``Stalled=True`` (kstatus' "will not recover"), and names the object and why at the timeout when not.
"""

import contextlib
import json
import threading
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH, ApiError

try:
    from .test_sync_helpers import client_fixture, localhost_play, run_play
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import client_fixture, localhost_play, run_play

COMMON = """
        name: "{{ stack }}"
        kubeconfig: "{{ kc }}"
        record_namespace: "{{ ns }}"
        namespace: "{{ ns }}"
"""

#: stack_info, then stack, with the same desired set (src and render, or resources); both results saved
PLAYBOOK = localhost_play("""
    - name: what would the sync do
      stacksync.k8s.stack_info:""" + COMMON + """        src: "{{ src | default(omit) }}"
        render: "{{ render | default(omit) }}"
        resources: "{{ resources | default(omit) }}"
      register: info
      when: info_too | default(true)
    - name: sync
      stacksync.k8s.stack:""" + COMMON + """        src: "{{ src | default(omit) }}"
        render: "{{ render | default(omit) }}"
        resources: "{{ resources | default(omit) }}"
        wait: "{{ wait | default(false) }}"
        wait_timeout: "{{ wait_timeout | default(300) }}"
        report_unchanged: true
      register: sync
      ignore_errors: true
      when: sync_too | default(true)
""", saved="{'info': info, 'sync': sync}")

#: stack_info with arbitrary arguments (validation), result saved even when it fails
ARGS_PLAYBOOK = localhost_play("""
    - name: info
      stacksync.k8s.stack_info: "{{ args }}"
      register: info
      ignore_errors: true
""", saved="{'info': info}")

IN_PROCESS = "stacksync.k8s.stack_info: running in the controller's process"
MODULE_PROCESS = "stacksync.k8s.stack_info: running as a module process"


NS_PREFIX = "ss-info"  # tests/conftest.py's ns fixture
client = client_fixture()


def run(tmp_path, kube, variables, playbook=PLAYBOOK):
    """Run ``playbook`` on localhost (``-c local``, this Python, ``-vvv``); the saved results and the output."""
    played = run_play(tmp_path, playbook, dict(variables, kc=kube.kubeconfig), "-vvv")
    return played.result, played.log


def names(objects, **where):
    """Sorted names of the result entries whose fields have the values in ``where``."""
    return sorted(o["name"] for o in objects if all(o.get(k) == v for k, v in where.items()))


def write_tree(root, files):
    """Write ``{relative path: text}`` under ``root``, removing the files whose text is None."""
    for rel, text in files.items():
        path = root / rel
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def cm(name, **data):
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {json.dumps(data)}\n"


@pytest.mark.parametrize("in_process", [True, False], ids=["controller-process", "module-process"])
def test_stack_info_with_src_reports_exactly_what_the_sync_then_does(tmp_path, kube, client, ns, in_process):
    tree = tmp_path / "checkout"
    write_tree(tree, {
        "apps/kept.yaml": cm("kept", a="1"),
        "apps/edited.yaml": cm("edited", a="1"),
        "apps/changed.yaml": cm("changed", a="1"),
        "apps/gone.yaml": cm("gone", a="1") + "---\n" + cm("gone-too", a="1"),
        # a template: task variables and render.template_vars reach it in both tasks alike
        "apps/tpl.yaml.j2": cm("templated", stack="{{ stack }}", replicas="{{ replicas }}"),
        "apps/legacy/skipped.yaml": cm("legacy"),
    })
    stack = "info-" + uuid.uuid4().hex[:6]
    variables = dict(stack=stack, ns=ns, src=str(tree / "apps"), stacksync_in_process=in_process,
                     render=dict(root=str(tree), exclude=["legacy"], template_vars=dict(replicas=3), trusted=True))
    # trusted: this repository's templates get the task's variables (``stack``), as the playbook's own would
    r, _log = run(tmp_path, kube, variables)
    assert not r["sync"].get("failed"), r["sync"]
    assert names(r["sync"]["applied"], action="created") == ["changed", "edited", "gone", "gone-too", "kept", "templated"]
    # before the first sync's writes, the report saw none of it
    assert r["info"]["counts"]["sync"] == {"Missing": 6} and not r["info"]["changed"]

    # git changes: one object changed, two removed, one added, a template variable changed;
    # someone edits another object on the cluster (drift)
    write_tree(tree, {"apps/changed.yaml": cm("changed", a="2"), "apps/gone.yaml": None,
                      "apps/new.yaml": cm("new", a="1")})
    variables["render"]["template_vars"]["replicas"] = 4
    client.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/edited", params={"fieldManager": "kubectl-edit"},
                   body={"data": {"a": "edited"}}, content_type=MERGE_PATCH)

    r, log = run(tmp_path, kube, variables)
    info, sync = r["info"], r["sync"]
    assert (IN_PROCESS if in_process else MODULE_PROCESS + " (stacksync_in_process is false)") in log
    assert log.count("stacksync.k8s.stack_info: running") == 1 and log.count("stacksync.k8s.stack: running") == 1
    assert not info["changed"] and sync["changed"], r
    objects = info["objects"]
    assert names(objects, status="would_prune") == names(sync["pruned"]) == ["gone", "gone-too"]
    assert names(objects, sync="Extraneous") == ["gone", "gone-too"]
    assert names(objects, sync="OutOfSync") == names(sync["applied"], action="configured") == ["changed", "edited", "templated"]
    assert names(objects, status="drifted") == names([a for a in sync["applied"] if a.get("drift")]) == ["edited"]
    assert names(objects, sync="Missing") == names(sync["applied"], action="created") == ["new"]
    assert names(objects, sync="Synced") == names(sync["applied"], action="unchanged") == ["kept"]
    assert info["checksum"] == sync["checksum"]
    assert info["counts"]["sync"] == {"Synced": 1, "OutOfSync": 3, "Missing": 1, "Extraneous": 2}
    assert info["counts"]["health"] == {"Healthy": 6, "Missing": 1}
    # the invocation lists the rendered manifests by identity, as the module does with resources
    assert '"v1 ConfigMap new"' in log

    # after the sync, the same question: everything in sync, nothing to prune; the legacy file was never read
    variables["sync_too"] = False
    r, _log = run(tmp_path, kube, variables)
    assert r["info"]["counts"]["sync"] == {"Synced": 5}, r["info"]
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/templated")["data"] == {"stack": stack, "replicas": "4"}
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/edited")["data"] == {"a": "1"}
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/legacy") is None


def test_stack_info_arguments_are_validated_and_rendered_like_the_syncs(tmp_path, kube, ns):
    """Validation and rendering happen in the action plugin, before it decides where the module runs."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bad.yaml").write_text("kind: ConfigMap\nmetadata: {name: [oops\n")
    base = dict(name="x", kubeconfig=kube.kubeconfig, record_namespace=ns)
    for args, message in (
        (dict(base, src=str(tmp_path / "src"), resources=[]), "parameters are mutually exclusive: resources|src"),
        (dict(base, src=str(tmp_path / "src"), render={"bogus": 1}), "bogus"),
        (dict(base, resources=[], max_prune=3), "Unsupported parameters for (stacksync.k8s.stack_info) module: max_prune"),
        (dict(base, src=str(tmp_path / "src")), "bad.yaml"),
        (dict(base, src=str(tmp_path / "missing")), "does not exist"),
    ):
        r, _log = run(tmp_path, kube, dict(args=args), playbook=ARGS_PLAYBOOK)
        assert r["info"]["failed"] and message in r["info"]["msg"], (args, r["info"])


# --- a custom resource and its controller --------------------------------------------------------------------------

GROUP = "infotest.stacksync.io"
QUOTA = 10
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "databases." + GROUP},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "databases", "singular": "database", "kind": "Database", "listKind": "DatabaseList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"size": {"type": "integer"},
                                                                          "giveUp": {"type": "boolean"}}},
                               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}


def database(name, size, give_up=False):
    spec = {"size": size, "giveUp": True} if give_up else {"size": size}
    return {"apiVersion": GROUP + "/v1", "kind": "Database", "metadata": {"name": name}, "spec": spec}


def reconciled_status(db):
    """The status the Database controller writes: Ready, or Ready=False (and Stalled=True when told to give up)
    with why, for the generation it observed."""
    spec = db.get("spec") or {}
    generation = db["metadata"]["generation"]
    if spec.get("size", 0) <= QUOTA:
        conditions = [{"type": "Ready", "status": "True", "reason": "Provisioned", "message": "database is up",
                       "observedGeneration": generation}]
    else:
        why = {"reason": "QuotaExceeded", "message": f"size {spec['size']} is over the quota of {QUOTA}",
               "observedGeneration": generation}
        conditions = [dict(why, type="Ready", status="False")]
        if spec.get("giveUp"):
            conditions.append(dict(why, type="Stalled", status="True"))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"observedGeneration": generation,
            "conditions": [dict(c, lastTransitionTime=stamp) for c in conditions]}


class DatabaseController(threading.Thread):
    """Reconciles the Databases of a namespace: writes the status subresource whenever a generation is unobserved."""

    def __init__(self, kubeconfig, namespace):
        super().__init__(daemon=True)
        self.client = build_client({"kubeconfig": kubeconfig})[0]
        self.path = f"/apis/{GROUP}/v1/namespaces/{namespace}/databases"
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(0.2):
            for db in self.client.list(self.path):
                if (db.get("status") or {}).get("observedGeneration") != db["metadata"]["generation"]:
                    with contextlib.suppress(ApiError):  # changed or deleted meanwhile: the next round sees it
                        self.client.request("PATCH", f"{self.path}/{db['metadata']['name']}/status",
                                            params={"fieldManager": "database-controller"},
                                            body={"status": reconciled_status(db)}, content_type=MERGE_PATCH)

    def stop(self):
        self.stopped.set()
        self.join(10)
        self.client.close()


@pytest.fixture(scope="module")
def databases(kube, client):
    """The Database CRD, served; deleted at the end."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    with contextlib.suppress(ApiError):
        client.create(path, CRD)
    deadline = time.monotonic() + 60
    while True:
        try:
            client.list(f"/apis/{GROUP}/v1/databases", limit=1)
            break
        except ApiError:
            assert time.monotonic() < deadline, "the Database CRD was not served within 60s"
            time.sleep(0.2)
    yield
    with contextlib.suppress(ApiError):
        client.delete(path + "/databases." + GROUP)


@pytest.fixture
def controller(kube, ns, databases):
    c = DatabaseController(kube.kubeconfig, ns)
    c.start()
    yield c
    c.stop()


def wait_observed(client, ns, names, timeout=30):
    """Wait until the controller has written the status of the current generation of every named Database."""
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            db = client.get(f"/apis/{GROUP}/v1/namespaces/{ns}/databases/{name}")
            if (db.get("status") or {}).get("observedGeneration") == db["metadata"]["generation"]:
                break
            assert time.monotonic() < deadline, f"the controller did not observe {name}: {db.get('status')}"
            time.sleep(0.2)


WAIT_TIMEOUT = 120  # far above what failing fast takes: reaching it would mean wait did not fail fast
FAST = 60  # seconds, for the whole playbook run on a loaded machine


def test_a_custom_resource_its_controller_reports_not_ready_is_degraded_and_fails_a_wait(tmp_path, kube, client, ns,
                                                                                        controller):
    stack = "cr-" + uuid.uuid4().hex[:6]
    variables = dict(stack=stack, ns=ns, info_too=False, resources=[database("orders", 20), database("billing", 1)])
    r, _log = run(tmp_path, kube, variables)
    assert not r["sync"].get("failed"), r["sync"]
    assert names(r["sync"]["applied"], action="created") == ["billing", "orders"]
    wait_observed(client, ns, ["orders", "billing"])

    # stack_info: Ready=False is Degraded, with the condition's reason and message; the status is not drift
    r, _log = run(tmp_path, kube, dict(variables, info_too=True, sync_too=False))
    by_name = dict((o["name"], o) for o in r["info"]["objects"])
    assert by_name["orders"]["health"] == "Degraded", by_name["orders"]
    assert by_name["orders"]["health_reason"] == f"QuotaExceeded: size 20 is over the quota of {QUOTA}"
    assert by_name["billing"]["health"] == "Healthy" and by_name["billing"]["health_reason"] == "Provisioned: database is up"
    assert by_name["orders"]["sync"] == by_name["billing"]["sync"] == "Synced"
    assert r["info"]["counts"] == {"sync": {"Synced": 2}, "health": {"Healthy": 1, "Degraded": 1}}

    # a change the controller gives up on (Stalled=True): the waiting sync fails as soon as it says so, naming it
    variables.update(info_too=False, wait=True, wait_timeout=WAIT_TIMEOUT,
                     resources=[database("orders", 30, give_up=True), database("billing", 1)])
    started = time.monotonic()
    r, _log = run(tmp_path, kube, variables)
    elapsed = time.monotonic() - started
    sync = r["sync"]
    assert sync["failed"], sync
    assert f"Database.{GROUP} {ns}/orders: QuotaExceeded: size 30 is over the quota of {QUOTA}" in sync["msg"], sync["msg"]
    assert "billing" not in sync["msg"] and "timed out" not in sync["msg"]
    assert elapsed < FAST, f"the sync took {elapsed:.1f}s: it ran into the timeout instead of failing fast"
    assert names(sync["applied"], action="configured") == ["orders"]  # applied; the failure is the object's health

    # Ready=False alone may still recover: the sync waits, and at the timeout names the object and why (orders, back
    # within the quota, is ready again: a wait covers every object of the stack, and a Stalled one fails it at once)
    variables.update(wait_timeout=3, resources=[database("orders", 5), database("billing", 12)])
    r, _log = run(tmp_path, kube, variables)
    assert r["sync"]["failed"] and "timed out after 3s waiting for: " in r["sync"]["msg"], r["sync"]
    assert f"Database.{GROUP} {ns}/billing: Degraded (QuotaExceeded): size 12 is over the quota of {QUOTA}" in r["sync"]["msg"]
