"""The built-in resource types the simulator serves, and discovery documents built from them.

Names, scopes, verbs, short names and categories are copied from a real kube-apiserver v1.36
(see ``../shared/k8s-reference`` beside the repository, where available); only a subset of the built-in types is served.
"""

from dataclasses import dataclass, field
from typing import Optional

FULL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION = ("create", "delete", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)
SUB_VERBS = ("get", "patch", "update")


@dataclass
class ResourceType:
    """One served resource (a plural name in a group/version)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = FULL
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    singular: str = ""
    crd: Optional[str] = None
    schema: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.singular:
            self.singular = self.kind.lower()

    @property
    def api_version(self):
        """``apiVersion`` string of objects served by this resource."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self):
        """Storage key: objects are shared by all versions of a group/resource."""
        return (self.group, self.plural)

    @property
    def list_kind(self):
        """Kind of the list object."""
        return self.kind + "List"

    @property
    def is_review(self):
        """True for create-only, non-persisted review resources."""
        return self.verbs == CREATE_ONLY


def _r(group, version, plural, kind, namespaced, short=(), verbs=FULL, sub=(), cat=(), singular=""):
    return ResourceType(group, version, plural, kind, namespaced, tuple(short), verbs, tuple(sub), tuple(cat), singular)


ALL = ("all",)
EXT = ("api-extensions",)

BUILTINS = [
    _r("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    _r("", "v1", "endpoints", "Endpoints", True, ["ep"], singular="endpoints"),
    _r("", "v1", "events", "Event", True, ["ev"]),
    _r("", "v1", "limitranges", "LimitRange", True, ["limits"]),
    _r("", "v1", "namespaces", "Namespace", False, ["ns"], NO_COLLECTION, ["finalize", "status"]),
    _r("", "v1", "nodes", "Node", False, ["no"], sub=["status"]),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ["pvc"], sub=["status"]),
    _r("", "v1", "persistentvolumes", "PersistentVolume", False, ["pv"], sub=["status"]),
    _r("", "v1", "pods", "Pod", True, ["po"], sub=["status"], cat=ALL),
    _r("", "v1", "podtemplates", "PodTemplate", True),
    _r("", "v1", "replicationcontrollers", "ReplicationController", True, ["rc"], sub=["scale", "status"], cat=ALL),
    _r("", "v1", "resourcequotas", "ResourceQuota", True, ["quota"], sub=["status"]),
    _r("", "v1", "secrets", "Secret", True),
    _r("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"]),
    _r("", "v1", "services", "Service", True, ["svc"], sub=["status"], cat=ALL),
    _r("apiregistration.k8s.io", "v1", "apiservices", "APIService", False, sub=["status"], cat=EXT),
    _r("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    _r("apps", "v1", "daemonsets", "DaemonSet", True, ["ds"], sub=["status"], cat=ALL),
    _r("apps", "v1", "deployments", "Deployment", True, ["deploy"], sub=["scale", "status"], cat=ALL),
    _r("apps", "v1", "replicasets", "ReplicaSet", True, ["rs"], sub=["scale", "status"], cat=ALL),
    _r("apps", "v1", "statefulsets", "StatefulSet", True, ["sts"], sub=["scale", "status"], cat=ALL),
    _r("events.k8s.io", "v1", "events", "Event", True, ["ev"]),
    _r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=CREATE_ONLY),
    _r("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False, verbs=CREATE_ONLY),
    _r("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", True, verbs=CREATE_ONLY),
    _r("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, verbs=CREATE_ONLY),
    _r("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, verbs=CREATE_ONLY),
    _r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=CREATE_ONLY),
    _r("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ["hpa"], sub=["status"], cat=ALL),
    _r("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ["hpa"], sub=["status"], cat=ALL),
    _r("batch", "v1", "cronjobs", "CronJob", True, ["cj"], sub=["status"], cat=ALL),
    _r("batch", "v1", "jobs", "Job", True, sub=["status"], cat=ALL),
    _r("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False),
    _r("networking.k8s.io", "v1", "ingresses", "Ingress", True, ["ing"], sub=["status"]),
    _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ["netpol"]),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"], sub=["status"]),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ["sc"]),
    _r("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, sub=["status"]),
    _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False, cat=EXT),
    _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False, cat=EXT),
    _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False, sub=["status"], cat=EXT),
    _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", False, cat=EXT),
    _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False, ["crd", "crds"], sub=["status"], cat=EXT),
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"]),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
    _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
]

# Subresources whose response kind differs from the parent's.
_SUB_KIND = {"scale": ("autoscaling", "v1", "Scale")}
# Kinds whose metadata.generation is maintained (strategies that track spec changes).
GENERATION_KINDS = {
    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "Ingress", "NetworkPolicy",
    "CustomResourceDefinition", "Pod", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ReplicationController",
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "PersistentVolumeClaim", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
# Resources for which PUT of a missing object creates it (AllowCreateOnUpdate in the real strategies).
CREATE_ON_UPDATE = {("", "endpoints"), ("", "events"), ("events.k8s.io", "events"), ("coordination.k8s.io", "leases"), ("", "nodes")}


def group_order(types):
    """Group names in first-seen order, core group excluded."""
    seen = []
    for rt in types:
        if rt.group and rt.group not in seen:
            seen.append(rt.group)
    return seen


def versions_of(types, group):
    """Versions of a group in served (preferred-first) order."""
    seen = []
    for rt in types:
        if rt.group == group and rt.version not in seen:
            seen.append(rt.version)
    return seen


def api_resource_list(types, group, version):
    """Legacy discovery document ``APIResourceList`` for one group/version."""
    resources = []
    for rt in sorted((t for t in types if t.group == group and t.version == version), key=lambda t: t.plural):
        entry = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind, "verbs": list(rt.verbs)}
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for sub in rt.subresources:
            sg, sv, skind = _SUB_KIND.get(sub, (None, None, rt.kind))
            sentry = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced, "kind": skind,
                      "verbs": ["update"] if sub == "finalize" else list(SUB_VERBS)}
            if sg:
                sentry.update(group=sg, version=sv)
            resources.append(sentry)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _gv(group, version):
    return {"groupVersion": f"{group}/{version}", "version": version}


def api_group(types, group):
    """``APIGroup`` document for ``/apis/<group>``."""
    return api_group_doc(group, versions_of(types, group))


def api_group_doc(group, versions):
    """``APIGroup`` document of a group served in ``versions`` (preferred first)."""
    versions = [_gv(group, v) for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list(types, aggregated=()):
    """``APIGroupList`` document for ``/apis``; ``aggregated``: ``[(group, [versions])]`` of aggregated APIs, listed last."""
    groups = []
    for doc in [api_group(types, g) for g in group_order(types)] + [api_group_doc(g, vs) for g, vs in aggregated]:
        del doc["kind"], doc["apiVersion"]
        groups.append(doc)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _aggregated_resource(rt):
    entry = {"resource": rt.plural, "responseKind": {"group": "", "version": "", "kind": rt.kind},
             "scope": "Namespaced" if rt.namespaced else "Cluster", "singularResource": rt.singular, "verbs": list(rt.verbs)}
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subs = []
    for sub in rt.subresources:
        sg, sv, skind = _SUB_KIND.get(sub, ("", "", rt.kind))
        subs.append({"subresource": sub, "responseKind": {"group": sg, "version": sv, "kind": skind},
                     "verbs": ["update"] if sub == "finalize" else list(SUB_VERBS)})
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated_discovery(types, legacy, stale=()):
    """Aggregated discovery ``APIGroupDiscoveryList`` (apidiscovery.k8s.io/v2) for /api or /apis; ``stale``:
    ``[(group, [versions])]`` of aggregated APIs that did not answer, listed last as the real server lists them
    (each version ``freshness: Stale``, without resources)."""
    groups = [""] if legacy else group_order(types)
    items = []
    for g in groups:
        versions = []
        for v in versions_of(types, g):
            res = [_aggregated_resource(t) for t in sorted((t for t in types if t.group == g and t.version == v), key=lambda t: t.plural)]
            versions.append({"version": v, "resources": res, "freshness": "Current"})
        items.append({"metadata": {"name": g} if g else {}, "versions": versions})
    for g, vs in stale:
        items.append({"metadata": {"name": g}, "versions": [{"version": v, "freshness": "Stale"} for v in vs]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}
