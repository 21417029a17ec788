"""Bearer-token authentication and authorization.

Each token maps to a :class:`User`. ``admin`` users (group ``system:masters``) may do anything;
other users get what RBAC objects stored in the simulated cluster grant them (Roles, ClusterRoles
and their bindings, like the real RBAC authorizer), minus any ``deny`` rules configured for them.
"""

from dataclasses import dataclass, field
from typing import Optional

# What every authenticated user may do (system:basic-user, system:discovery, system:public-info-viewer).
_BASIC_RULES = [
    {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
    {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
]
NON_RESOURCE_RULES = [
    {"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]},
    {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version",
                         "/version/"], "verbs": ["get"]},
]


@dataclass
class DenyRule:
    """Refuse ``verbs`` on ``resources`` (plural or ``group/plural``; ``*`` for all).

    ``namespaces``: None matches any request; a list matches requests in those namespaces;
    ``[""]`` matches only cluster-wide requests (cluster-scoped objects or all-namespace lists).
    """

    verbs: list[str]
    resources: list[str]
    namespaces: Optional[list[str]] = None

    def matches(self, verb, group, plural, namespace):
        """True if the rule refuses this request."""
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        names = {plural, f"{group}/{plural}" if group else plural, "*"}
        if not names & set(self.resources):
            return False
        return self.namespaces is None or (namespace or "") in self.namespaces


ANONYMOUS = "system:anonymous"


@dataclass
class User:
    """An authenticated identity (``uid`` and ``extra`` as a SelfSubjectReview reports them)."""

    name: str
    groups: list[str] = field(default_factory=list)
    admin: bool = False
    deny: list[DenyRule] = field(default_factory=list)
    uid: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def all_groups(self):
        """Groups including the implicit ``system:authenticated`` (``system:unauthenticated`` for anonymous),
        not added twice, as kube-apiserver's authenticators and impersonation filter add them."""
        implicit = "system:unauthenticated" if self.name == ANONYMOUS else "system:authenticated"
        if any(g in ("system:authenticated", "system:unauthenticated") for g in self.groups):
            return list(self.groups)
        return [*self.groups, implicit]


def _rule_allows(rule, verb, group, plural, name):
    if "*" not in rule.get("verbs", []) and verb not in rule.get("verbs", []):
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and group not in groups:
        return False
    resources = rule.get("resources") or []
    if "*" not in resources and plural not in resources:
        return False
    names = rule.get("resourceNames")
    return not names or name in names


def _subject_matches(subject, user):
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == user.name
    if kind == "Group":
        return subject.get("name") in user.all_groups
    if kind == "ServiceAccount":
        return user.name == f"system:serviceaccount:{subject.get('namespace')}:{subject.get('name')}"
    return False


def rbac_rules(cluster, user, namespace):
    """Resource rules granted to ``user`` in ``namespace`` (cluster-wide grants when namespace is None)."""
    rules = list(_BASIC_RULES) if "system:authenticated" in user.all_groups else []
    with cluster.lock:
        crs = cluster.objects[("rbac.authorization.k8s.io", "clusterroles")]
        roles = cluster.objects[("rbac.authorization.k8s.io", "roles")]
        bindings = list(cluster.objects[("rbac.authorization.k8s.io", "clusterrolebindings")].values())
        if namespace:
            bindings += [b for (ns, _), b in cluster.objects[("rbac.authorization.k8s.io", "rolebindings")].items() if ns == namespace]
        for b in bindings:
            if not any(_subject_matches(s, user) for s in b.get("subjects") or []):
                continue
            ref = b.get("roleRef") or {}
            table, key = (crs, ("", ref.get("name"))) if ref.get("kind") == "ClusterRole" else (roles, (namespace or "", ref.get("name")))
            role = table.get(key)
            if role is not None:
                rules += [r for r in role.get("rules") or [] if "nonResourceURLs" not in r]
    return rules


def allowed(cluster, user, verb, group, plural, namespace, name=None):
    """Authorization decision for one request."""
    if any(d.matches(verb, group, plural, namespace) for d in user.deny):
        return False
    if user.admin:
        return True
    return any(_rule_allows(r, verb, group, plural, name) for r in rbac_rules(cluster, user, namespace))
