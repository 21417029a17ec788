"""Shared helpers of the reliability suite: in-process engine runs, snapshots, the prune predicate.

The property and fault tests drive the real engine (``StackManager`` from module_utils) in-process
against a cluster (the in-process simulator, or a real API server under
``STACKSYNC_TEST_KUBECONFIG``), over HTTP through the collection's own ``KubeClient``: the same code
path as the module, minus Ansible's process startup.
"""

import base64
import contextlib
import json
import os
import signal
import threading
import time
from pathlib import Path

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    IGNORE_ANNOTATION,
    OWNER_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import is_true, owner_mark
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.validation import valid_label_value  # noqa: F401
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH, ApiError

REPO = Path(__file__).resolve().parents[2]
FIGURES_FILE = REPO / "build" / "reliability-figures.json"
_FIG_LOCK = threading.Lock()

# A custom resource type the property tests use (created once per cluster, outside any stack).
CR_GROUP = "reliability.stacksync.io"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets." + CR_GROUP},
    "spec": {
        "group": CR_GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
        }],
    },
}

#: (group, kind) -> (apiVersion, collection path template, namespaced)
KINDS = {
    ("", "ConfigMap"): ("v1", "/api/v1/namespaces/{ns}/configmaps", True),
    ("", "Secret"): ("v1", "/api/v1/namespaces/{ns}/secrets", True),
    ("", "Namespace"): ("v1", "/api/v1/namespaces", False),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("rbac.authorization.k8s.io/v1",
                                                   "/apis/rbac.authorization.k8s.io/v1/clusterroles", False),
    (CR_GROUP, "Widget"): (CR_GROUP + "/v1", "/apis/" + CR_GROUP + "/v1/namespaces/{ns}/widgets", True),
}


def record_figures(section, **values):
    """Add ``values`` to ``section`` of build/reliability-figures.json (counts are summed)."""
    with _FIG_LOCK:
        FIGURES_FILE.parent.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(FIGURES_FILE.read_text())
        except (OSError, ValueError):
            data = {}
        sec = data.setdefault(section, {})
        for k, v in values.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k.endswith(("_count", "_total")):
                sec[k] = sec.get(k, 0) + v
            else:
                sec[k] = v
        sec["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        FIGURES_FILE.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


@contextlib.contextmanager
def recording(client, methods=WRITE_METHODS):
    """Record ``(method, path)`` of the requests ``client`` sends with one of ``methods`` while inside."""
    seen = []
    real = client.request

    def request(method, path, *args, **kwargs):
        if method in methods:
            seen.append((method, path))
        return real(method, path, *args, **kwargs)

    client.request = request
    try:
        yield seen
    finally:
        client.__dict__.pop("request", None)


def client_for(kubeconfig, **kwargs):
    """A ``KubeClient`` for ``kubeconfig`` (the module's own credential loading)."""
    client, _ns = build_client({"kubeconfig": str(kubeconfig)})
    for k, v in kwargs.items():
        setattr(client, k, v)
    return client


def manager(client, stack, **kwargs):
    kwargs.setdefault("lock_timeout", 30)
    kwargs.setdefault("poll_interval", 0.2)
    kwargs.setdefault("concurrency", int(os.environ.get("STACKSYNC_RELIABILITY_CONCURRENCY", "4")))
    return StackManager(client, stack, **kwargs)


def sync(client, stack, resources, **kwargs):
    """``(changeset, error_or_None)`` of one engine run."""
    try:
        return manager(client, stack, **kwargs).sync(resources), None
    except StackError as e:
        return e.changeset, e


# -- object paths ------------------------------------------------------------------------------
def collection_path(group, kind, namespace=""):
    _av, tmpl, namespaced = KINDS[(group, kind)]
    return tmpl.format(ns=namespace) if namespaced else tmpl


def object_path(oid):
    return collection_path(oid.group, oid.kind, oid.namespace) + "/" + oid.name


def oid_of(obj, group=None):
    av = obj.get("apiVersion") or "v1"
    g = group if group is not None else (av.split("/", 1)[0] if "/" in av else "")
    namespaced = KINDS.get((g, obj.get("kind")), (None, None, True))[2]
    meta = obj.get("metadata") or {}
    return ObjectId(g, obj.get("kind"), (meta.get("namespace") or "") if namespaced else "", meta.get("name"))


def ensure_crd(client, timeout=60):
    """Create the Widget CRD if needed and wait until it is served."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    with contextlib.suppress(ApiError):
        client.create(path, CRD)
    deadline = time.time() + timeout
    while True:
        try:
            client.list(f"/apis/{CR_GROUP}/v1/widgets", limit=1)
            return
        except ApiError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def create_namespace(client, name):
    with contextlib.suppress(ApiError):
        client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def delete_quietly(client, path):
    with contextlib.suppress(ApiError):
        client.delete(path, propagation_policy="Background")


def wait_namespaces_gone(client, names, timeout=120):
    deadline = time.time() + timeout
    for name in names:
        while client.get_or_none("/api/v1/namespaces/" + name) is not None:
            if time.time() > deadline:
                raise AssertionError(f"namespace {name} still terminating after {timeout}s")
            time.sleep(0.3)


def merge_patch(client, oid, body, field_manager="kubectl-edit"):
    return client.request("PATCH", object_path(oid), params={"fieldManager": field_manager}, body=body,
                          content_type=MERGE_PATCH)


# -- ownership predicate (what the README promises) ----------------------------------------------
def labels_of(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def annotations_of(obj):
    return (obj.get("metadata") or {}).get("annotations") or {}


def owned(obj, stack, oid):
    return labels_of(obj).get(STACK_LABEL) == stack and annotations_of(obj).get(OWNER_ANNOTATION) == owner_mark(stack, oid)


def protected(obj):
    meta = obj.get("metadata") or {}
    return bool(meta.get("ownerReferences")) or is_true(annotations_of(obj).get(IGNORE_ANNOTATION) or "")


def may_prune(obj, oid, stack, desired_ids):
    """The README's rule: this stack's label and owner mark, not desired, not protected."""
    return owned(obj, stack, oid) and oid not in desired_ids and not protected(obj)


def deletion_violations(before, after, stack, desired_ids, namespaces_kept=(), prunable=None):
    """Objects that vanished (or were replaced) between two snapshots without being prunable.

    ``before``/``after``: ``{ObjectId: obj}``. A child removed by the garbage collector because its
    owner was legitimately deleted is fine; anything else that vanished must satisfy
    :func:`may_prune` for ``stack`` in the ``before`` state (or ``prunable(oid, obj)``, when given).
    """
    after_uids = {(o.get("metadata") or {}).get("uid") for o in after.values()}
    gone = []
    for oid, obj in before.items():
        now = after.get(oid)
        if now is not None and (now.get("metadata") or {}).get("uid") == (obj.get("metadata") or {}).get("uid"):
            continue
        gone.append((oid, obj))
    bad = []
    for oid, obj in gone:
        if prunable(oid, obj) if prunable is not None else may_prune(obj, oid, stack, desired_ids):
            continue
        refs = (obj.get("metadata") or {}).get("ownerReferences") or []
        if refs and any(r.get("uid") not in after_uids for r in refs):
            continue  # garbage-collected child of an owner that is gone (its deletion is checked itself)
        bad.append((oid, obj))
    return bad


def b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def env_int(name, default):
    try:
        return int(os.environ.get(name) or default)
    except ValueError:
        return default


def descendants(pid):
    """pids of every process below ``pid`` (ansible workers call setsid, so a process group is not enough)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree(pid):
    """SIGKILL ``pid`` and everything it started (controller, forked worker, module process)."""
    victims = [pid, *descendants(pid)]
    for p in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGSTOP)  # freeze first so nobody forks or finishes in between
    for p in victims + descendants(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    return len(victims)
