"""Just enough structural schema for managed fields, apply and strategic merge patch.

Built-in kinds use a rule table (merge keys, atomic maps and lists); custom resources use the CRD's
``openAPIV3Schema`` where it says something, and the "deduced" rules of structured-merge-diff elsewhere.
"""

# Lists merged by key (SSA ``listType: map``; strategic merge patch ``patchMergeKey``).
_KEYED = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",), "env": ("name",),
    "volumes": ("name",), "volumeMounts": ("mountPath",), "volumeDevices": ("devicePath",), "imagePullSecrets": ("name",),
    "hostAliases": ("ip",), "conditions": ("type",), "ownerReferences": ("uid",), "resourceClaims": ("name",),
    "schedulingGates": ("name",), "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "envFrom": None, "webhooks": ("name",), "matchConditions": ("name",), "variables": ("name",),
}
# Lists typed by their parent's name too (``(parent, name)``; ``""``: at the root of an object), as the real
# server's OpenAPI says (``x-kubernetes-list-type``, checked against kube-apiserver v1.36).
_KEYED_IN = {("resources", "claims"): ("name",), ("", "secrets"): ("name",), ("status", "addresses"): ("type",),
             ("status", "podIPs"): ("ip",), ("status", "resourceClaimStatuses"): ("name",)}
_SETS_IN = {("spec", "podCIDRs"), ("spec", "volumeLifecycleModes"), ("uncountedTerminatedPods", "failed"),
            ("uncountedTerminatedPods", "succeeded"), ("exitCodes", "values"), ("spec", "validationActions")}
_PORT_KEYS = {"containers": ("containerPort", "protocol"), "initContainers": ("containerPort", "protocol"),
              "ephemeralContainers": ("containerPort", "protocol"), "spec": ("port", "protocol")}
_SETS = {"finalizers"}
# Associative lists whose items are atomic structs (tracked as a whole).
_ATOMIC_ITEMS = {"ownerReferences"}
_ATOMIC_MAPS = {"selector", "podSelector", "namespaceSelector", "objectSelector", "nodeSelector", "labelSelector", "matchLabels", "roleRef",
                # +structType=atomic
                "fieldRef", "resourceFieldRef", "secretKeyRef", "configMapKeyRef", "fileKeyRef", "secretRef", "nodePublishSecretRef",
                "nodeStageSecretRef", "nodeExpandSecretRef", "controllerPublishSecretRef", "controllerExpandSecretRef", "claimRef",
                "dataSource", "scopeSelector", "preference", "involvedObject", "regarding", "related",
                "matchConstraints", "matchResources", "paramKind", "paramRef"}
# Atomic maps known by their parent's name too, and maps that are not atomic there although the name is elsewhere.
_ATOMIC_MAPS_IN = {("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"), ("nodeAffinity", "required"),
                   ("defaultBackend", "resource"), ("backend", "resource"), ("service", "port")}
_GRANULAR_MAPS_IN = {("resourceAttributes", "labelSelector")}
# Lists that are atomic at the root of an object although the same name is keyed elsewhere.
_ATOMIC_AT_ROOT = {"imagePullSecrets"}
# Non-pointer structs (and, with "[]", non-omitempty lists) present in a zero-value object of a kind,
# so never "added" as a whole by an Update.
_POD_TEMPLATE = ("template", "template.metadata", "template.spec", "template.spec.containers[]")
SKELETONS = {
    "Deployment": ("spec", *(f"spec.{p}" for p in _POD_TEMPLATE), "spec.strategy", "status"),
    "ReplicaSet": ("spec", *(f"spec.{p}" for p in _POD_TEMPLATE), "status"),
    "ReplicationController": ("spec", "status"),
    "StatefulSet": ("spec", *(f"spec.{p}" for p in _POD_TEMPLATE), "spec.updateStrategy", "status"),
    "DaemonSet": ("spec", *(f"spec.{p}" for p in _POD_TEMPLATE), "spec.updateStrategy", "status"),
    "Job": ("spec", *(f"spec.{p}" for p in _POD_TEMPLATE), "status"),
    "CronJob": ("spec", "spec.jobTemplate", "spec.jobTemplate.metadata", "spec.jobTemplate.spec",
                *(f"spec.jobTemplate.spec.{p}" for p in _POD_TEMPLATE), "status"),
    "PodTemplate": _POD_TEMPLATE,
    "Pod": ("spec", "spec.containers[]", "status"), "Service": ("spec", "status", "status.loadBalancer"), "Namespace": ("spec", "status"),
    "Node": ("spec", "status"), "PersistentVolume": ("spec", "status"), "PersistentVolumeClaim": ("spec", "spec.resources", "status"),
    "Ingress": ("spec", "status", "status.loadBalancer"), "NetworkPolicy": ("spec", "spec.podSelector"), "Lease": ("spec",),
    "CustomResourceDefinition": ("spec", "spec.names", "status", "status.acceptedNames"),
    "HorizontalPodAutoscaler": ("spec", "spec.scaleTargetRef", "status"), "PodDisruptionBudget": ("spec", "status"),
    "SelfSubjectAccessReview": ("spec", "status"), "SubjectAccessReview": ("spec", "status"),
    "LocalSubjectAccessReview": ("spec", "status"), "SelfSubjectRulesReview": ("spec", "status"),
    "Event": ("involvedObject", "source"), "LimitRange": ("spec",), "ResourceQuota": ("spec", "status"),
    "IngressClass": ("spec",), "PriorityClass": (), "StorageClass": (), "CSIDriver": ("spec",),
    "VolumeAttachment": ("spec", "status"),
}


class Ctx:
    """Schema position: answers what a map or list at this position is."""

    custom = False

    def child(self, name):
        """Context of a field of the map at this position."""
        raise NotImplementedError

    def item(self):
        """Context of the items of the list at this position."""
        return self

    def list_type(self):
        """('map', keys) | ('set', None) | ('atomic', None)."""
        raise NotImplementedError

    def map_atomic(self):
        """True if the map here is replaced as a whole."""
        return False

    def items_atomic(self):
        """True if the items of the associative list here are atomic structs."""
        return False

    def records_self(self):
        """True if an applied map here is a field-set member itself (deduced/untyped maps)."""
        return False


# Contexts are immutable, so each one remembers the contexts of its children (up to this many).
_MAX_KIDS = 512


class Typed(Ctx):
    """A position in a built-in kind, identified by the field names from the root."""

    def __init__(self, names=()):
        self.names = names
        self._kids = {}
        self._list_type = None

    def child(self, name):
        kid = self._kids.get(name)
        if kid is None:
            kid = Typed((*self.names, name))
            if len(self._kids) < _MAX_KIDS:
                self._kids[name] = kid
        return kid

    def list_type(self):
        if self._list_type is None:
            self._list_type = self._compute_list_type()
        return self._list_type

    def _compute_list_type(self):
        name = self.names[-1] if self.names else ""
        parent = self.names[-2] if len(self.names) > 1 else ""
        if name == "ports" and parent in _PORT_KEYS:
            return ("map", _PORT_KEYS[parent])
        if name in _SETS and parent == "metadata":
            return ("set", None)
        if len(self.names) == 1 and name in _ATOMIC_AT_ROOT:
            return ("atomic", None)
        keys = _KEYED_IN.get((parent, name))
        if keys:
            return ("map", keys)
        if (parent, name) in _SETS_IN:
            return ("set", None)
        keys = _KEYED.get(name)
        if keys:
            return ("map", keys)
        return ("atomic", None)

    def map_atomic(self):
        if not self.names:
            return False
        pair = (self.names[-2] if len(self.names) > 1 else "", self.names[-1])
        return pair in _ATOMIC_MAPS_IN or (self.names[-1] in _ATOMIC_MAPS and pair not in _GRANULAR_MAPS_IN)

    def items_atomic(self):
        return bool(self.names) and self.names[-1] in _ATOMIC_ITEMS


class Deduced(Ctx):
    """Untyped region of a custom resource: maps are granular and members, lists atomic."""

    custom = True

    def child(self, name):
        return self

    def list_type(self):
        return ("atomic", None)

    def records_self(self):
        return True


class Structural(Ctx):
    """A position described by a CRD's structural schema node."""

    custom = True

    def __init__(self, node):
        self.node = node or {}
        self._kids = {}
        self._item = None

    def child(self, name):
        kid = self._kids.get(name)
        if kid is None:
            kid = self._child(name)
            if len(self._kids) < _MAX_KIDS:
                self._kids[name] = kid
        return kid

    def _child(self, name):
        props = self.node.get("properties")
        if props and name in props:
            return _structural(props[name])
        add = self.node.get("additionalProperties")
        if isinstance(add, dict):
            return _structural(add)
        return Deduced()

    def item(self):
        if self._item is None:
            self._item = _structural(self.node.get("items") or {})
        return self._item

    def list_type(self):
        lt = self.node.get("x-kubernetes-list-type", "atomic")
        if lt == "map":
            return ("map", tuple(self.node.get("x-kubernetes-list-map-keys") or ()))
        return ("set", None) if lt == "set" else ("atomic", None)

    def map_atomic(self):
        return self.node.get("x-kubernetes-map-type") == "atomic"

    def records_self(self):
        return "properties" not in self.node and "additionalProperties" not in self.node


class Preserved(Deduced):
    """A schema node with ``x-kubernetes-preserve-unknown-fields`` and no properties: a typed map itself
    (not a field-set member), with untyped (deduced) content."""

    def child(self, name):
        return _DEDUCED

    def records_self(self):
        return False


_DEDUCED = Deduced()


def _structural(node):
    if not node:
        return Deduced()
    if node.get("x-kubernetes-preserve-unknown-fields") and not node.get("properties"):
        return Preserved() if node.get("type") == "object" else Deduced()
    return Structural(node)


class Root(Ctx):
    """Root of an object: ``metadata`` is always typed; the rest per kind (typed or CRD schema)."""

    def __init__(self, custom_schema=None, custom=False):
        self.custom = custom
        self.body = _structural(custom_schema) if custom else _TYPED_ROOT

    def child(self, name):
        if name == "metadata":
            return _METADATA
        return self.body.child(name)

    def list_type(self):
        return ("atomic", None)


# Shared by all built-in kinds (a Typed position depends only on its field names).
_TYPED_ROOT = Typed()
_METADATA = Typed(("metadata",))
