"""The benchmark's desired state: N objects over namespaces and kinds, and the scenario edits.

Objects are plain dicts written one per file. The mix follows the measurement quoted in issue 7
(mostly ConfigMaps, then Services, Deployments and Secrets over 10 namespaces, 20 from 10,000
objects on) plus ServiceAccounts, RBAC objects and a CRD with custom resources: 12 kinds. Every object carries ``PART_OF_LABEL`` so that the peers have a
selector for their prune step.
"""

import base64
import hashlib

PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF = "stacksync-bench"
CRD_GROUP = "bench.stacksync.io"
CRD_NAME = "widgets." + CRD_GROUP

# One slot of the repeating mix per object in a namespace (20 slots).
MIX = (["ConfigMap"] * 9 + ["Service"] * 3 + ["Deployment"] * 2 + ["Secret"] * 2
       + ["Widget", "ServiceAccount", "Role", "RoleBinding"])

# kind -> apiVersion, and the allow-list kubectl's --prune needs (group/version/kind).
API_VERSIONS = {
    "Namespace": "v1",
    "CustomResourceDefinition": "apiextensions.k8s.io/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1",
    "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "ConfigMap": "v1",
    "Service": "v1",
    "Deployment": "apps/v1",
    "Secret": "v1",
    "ServiceAccount": "v1",
    "Widget": CRD_GROUP + "/v1",
    "Role": "rbac.authorization.k8s.io/v1",
    "RoleBinding": "rbac.authorization.k8s.io/v1",
}


def _meta(kind, name, namespace=None):
    meta = {"name": name, "labels": {PART_OF_LABEL: PART_OF, "bench.stacksync.io/kind": kind.lower()}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": API_VERSIONS[kind], "kind": kind, "metadata": meta}


def _configmap(name, ns, rev):
    obj = _meta("ConfigMap", name, ns)
    obj["data"] = {"app.properties": f"name={name}\nrevision={rev}\nfeature.enabled=true\n", "revision": str(rev)}
    return obj


def _service(name, ns, rev):
    obj = _meta("Service", name, ns)
    obj["spec"] = {
        "selector": {"app": name},
        "ports": [{"name": "http", "port": 80, "targetPort": 8080 + rev % 10}],
    }
    return obj


def _deployment(name, ns, rev):
    obj = _meta("Deployment", name, ns)
    container = {
        "name": "app",
        "image": f"registry.example.com/bench/app:1.{rev}",
        "ports": [{"containerPort": 8080}],
        "env": [{"name": "REVISION", "value": str(rev)}],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    # No replicas: on a real cluster (--real) the Deployment controller would create a Pod per
    # Deployment (never scheduled there: no scheduler, no kubelet) and churn on every rollout,
    # CPU taken from the tools on a small machine; with 0 it still makes a ReplicaSet each. The
    # simulator's controllers then also make a ReplicaSet and no Pod, the same work on both.
    obj["spec"] = {
        "replicas": 0,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
    }
    return obj


def _secret(name, ns, rev):
    obj = _meta("Secret", name, ns)
    obj["type"] = "Opaque"
    obj["data"] = {"password": base64.b64encode(f"secret-{name}-{rev}".encode()).decode()}
    return obj


def _widget(name, ns, rev):
    obj = _meta("Widget", name, ns)
    obj["spec"] = {"size": rev, "color": "blue"}
    return obj


def _serviceaccount(name, ns, rev):
    obj = _meta("ServiceAccount", name, ns)
    obj["metadata"]["annotations"] = {"bench.stacksync.io/revision": str(rev)}
    obj["automountServiceAccountToken"] = rev % 2 == 0
    return obj


def _role(name, ns, rev):
    obj = _meta("Role", name, ns)
    verbs = ["get", "list", "watch"] if rev % 2 == 0 else ["get", "list"]
    obj["rules"] = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]
    return obj


def _rolebinding(name, ns, rev):
    obj = _meta("RoleBinding", name, ns)
    obj["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-reader"}
    obj["subjects"] = [{"kind": "ServiceAccount", "name": f"app-{rev}", "namespace": ns}]
    return obj


BUILDERS = {
    "ConfigMap": _configmap,
    "Service": _service,
    "Deployment": _deployment,
    "Secret": _secret,
    "Widget": _widget,
    "ServiceAccount": _serviceaccount,
    "Role": _role,
    "RoleBinding": _rolebinding,
}


def _crd():
    obj = _meta("CustomResourceDefinition", CRD_NAME)
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    obj["spec"] = {
        "group": CRD_GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
    }
    return obj


def _cluster_rbac():
    role = _meta("ClusterRole", "bench-reader")
    role["rules"] = [{"apiGroups": [""], "resources": ["configmaps", "services"], "verbs": ["get", "list", "watch"]}]
    binding = _meta("ClusterRoleBinding", "bench-reader")
    binding["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-reader"}
    binding["subjects"] = [{"kind": "Group", "name": "bench-readers", "apiGroup": "rbac.authorization.k8s.io"}]
    return [role, binding]


class Entry:
    """One object of the generated repo: its file, its builder inputs, its revision (and its stack, with
    :func:`split_stacks`)."""

    __slots__ = ("build", "kind", "name", "namespace", "path", "rev", "stack")

    def __init__(self, path, kind, name, namespace, build):
        self.path = path
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.build = build
        self.rev = 0
        self.stack = None

    def manifest(self):
        return self.build(self.name, self.namespace, self.rev)

    @property
    def mutable(self):
        """Workload objects are the ones scenarios change and remove; prerequisites stay."""
        return self.namespace is not None


def namespaces_for(n):
    """10 namespaces (fewer for tiny repositories), one more per 500 objects from 10,000 on (20 at 10,000)."""
    return [f"bench-{i:02d}" for i in range(max(1, min(n // 20, max(10, n // 500))))]


def generate(n):
    """``[Entry]`` for N objects (at least the prerequisites: namespaces, the CRD, cluster RBAC)."""
    namespaces = namespaces_for(n)
    entries = [Entry(f"00-cluster/namespace-{ns}.yaml", "Namespace", ns, None, lambda name, _ns, _rev: _meta("Namespace", name))
               for ns in namespaces]
    entries.append(Entry("00-cluster/crd-widgets.yaml", "CustomResourceDefinition", CRD_NAME, None, lambda *_a: _crd()))
    for obj in _cluster_rbac():
        entries.append(Entry(f"00-cluster/{obj['kind'].lower()}-{obj['metadata']['name']}.yaml", obj["kind"],
                             obj["metadata"]["name"], None, lambda *_a, _obj=obj: _obj))
    for i in range(max(n - len(entries), 0)):
        ns = namespaces[i % len(namespaces)]
        kind = MIX[(i // len(namespaces)) % len(MIX)]
        name = f"{kind.lower()}-{i:05d}"
        entries.append(Entry(f"{ns}/{name}.yaml", kind, name, ns, BUILDERS[kind]))
    return entries


def stack_dir(index):
    """The directory of stack ``index`` in a repository split by :func:`split_stacks`."""
    return f"stack-{index:03d}"


def split_stacks(entries, stacks):
    """Spread ``entries`` over ``stacks`` directories of (nearly) equal size, in order: the cluster-wide
    prerequisites (namespaces, the CRD, cluster RBAC) come first, so they are in the first stack, which the
    sources sync applies first. Each entry's file moves to ``stack-NNN/``; returns the entries."""
    if stacks < 1 or stacks > len(entries):
        raise ValueError(f"cannot split {len(entries)} objects into {stacks} stacks")
    for i, entry in enumerate(entries):
        entry.stack = i * stacks // len(entries)
        entry.path = f"{stack_dir(entry.stack)}/{entry.path}"
    return entries


def kinds(entries):
    return sorted(set(e.kind for e in entries))


def change_tenth(entries):
    """Change one workload object in ten (a new revision); returns how many changed."""
    picked = [e for e in entries if e.mutable][::10]
    for e in picked:
        e.rev += 1
    return len(picked)


def remove_tenth(entries):
    """Remove one workload object in ten (a different tenth than ``change_tenth``); returns the rest."""
    workload = [e for e in entries if e.mutable]
    removed = set(id(e) for e in workload[5::10])
    return [e for e in entries if id(e) not in removed]


def applyset_parent(name, tooling):
    """kubectl's ApplySet parent for objects in many namespaces: a cluster-scoped custom resource
    (its CRD labelled as a parent type), with the id label and annotations kubectl insists on."""
    group = CRD_GROUP
    crd = _crd()
    crd["metadata"] = {"name": "applysets." + group, "labels": {"applyset.kubernetes.io/is-parent-type": "true"}}
    crd["spec"].update(scope="Cluster", names={"kind": "ApplySet", "listKind": "ApplySetList", "plural": "applysets",
                                               "singular": "applyset"})
    digest = hashlib.sha256(f"{name}..ApplySet.{group}".encode()).digest()
    applyset_id = "applyset-" + base64.urlsafe_b64encode(digest).decode().rstrip("=") + "-v1"
    parent = {"apiVersion": group + "/v1", "kind": "ApplySet", "metadata": {
        "name": name, "labels": {"applyset.kubernetes.io/id": applyset_id},
        "annotations": {"applyset.kubernetes.io/tooling": tooling, "applyset.kubernetes.io/contains-group-kinds": ""}}}
    return crd, parent
