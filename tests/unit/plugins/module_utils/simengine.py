"""Test-only helpers for the engine's unit tests on the in-process Kubernetes API simulator (``kubesim``).

The verbs that do I/O (observe, apply, prune, the manager) are tested against the simulator over HTTP through
the collection's own client, as the module runs them; each test works in namespaces of its own (:func:`unique`), so
the tests of one file can share the module-scoped simulator.
"""

import uuid

from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import CM_BASE, object_name
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError, quote_name

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def unique(prefix):
    """A fresh name: ``<prefix>-<6 hex digits>`` (a namespace or a stack of one test)."""
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def client_of(kube, **kwargs):
    """The collection's own ``KubeClient`` for the simulator's admin kubeconfig (or ``kubeconfig=`` another)."""
    kwargs.setdefault("kubeconfig", kube.kubeconfig)
    client, _namespace = build_client(kwargs)
    return client


def user_client(kube, tmp_path, name, deny=(), admin=True):
    """A client of a new simulator user ``name`` (admin minus the ``deny`` rules: dicts of verbs, resources,
    namespaces; ``namespaces=[""]`` denies the cluster-wide requests only)."""
    token = kube.sim.add_user(name, admin=admin, deny=list(deny))
    path = kube.sim.write_kubeconfig(str(tmp_path / (name + ".kubeconfig")), name, token)
    return client_of(kube, kubeconfig=path)


def namespace(name, **labels):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": dict({"name": name}, **({"labels": labels} if labels else {}))}


def configmap(name, ns, annotations=None, **data):
    meta = {"name": name, "namespace": ns}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": name}}


def secret(name, ns, **data):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, "type": "Opaque",
            "stringData": data or {"password": "s3cr3t-" + name}}


def cm_path(ns, name):
    return f"/api/v1/namespaces/{ns}/configmaps/{name}"


def record_path(stack, record_namespace="kube-system"):
    return CM_BASE % quote_name(record_namespace) + "/" + object_name(stack)


def manager(client, stack, **options):
    """A ``StackManager`` with short timeouts (the simulator answers at once)."""
    options.setdefault("lock_timeout", 5)
    options.setdefault("poll_interval", 0.05)
    options.setdefault("concurrency", 4)
    return StackManager(client, stack, **options)


def sync(client, stack, resources, **options):
    """The ChangeSet of one sync of ``resources`` (raises StackError)."""
    return manager(client, stack, **options).sync(resources)


def live(client, path):
    """The object at ``path``, or None."""
    return client.get_or_none(path)


def create(client, collection, body):
    """Create ``body`` in ``collection`` (outside any stack, as a person would); its stored object."""
    return client.request("POST", collection, body=body)


def writes(sim, since=0):
    """``[(method, path)]`` of the write requests the simulator logged from index ``since`` on."""
    return [(r["method"], r["path"]) for r in list(sim.requests)[since:] if r["method"] in WRITES]


def requests_since(sim, since=0):
    return list(sim.requests)[since:]


def gone(client, path):
    try:
        client.get(path)
    except ApiError as e:
        return e.is_not_found
    return False


__all__ = [
    "ChangeSet",
    "client_of",
    "cm_path",
    "configmap",
    "create",
    "gone",
    "live",
    "manager",
    "namespace",
    "record_path",
    "requests_since",
    "secret",
    "sync",
    "unique",
    "user_client",
    "writes",
]
