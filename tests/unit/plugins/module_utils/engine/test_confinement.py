"""confinement.py: the namespaces and kinds a confined stack may write and delete (issue 28)."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import SOURCE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, identity_digest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import confinement as cf
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as p
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import DiscoveryIndex, ResourceInfo, UnknownKind

VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
CM = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, VERBS)
SECRET = ResourceInfo("", "v1", "Secret", "secrets", True, VERBS)
NAMESPACE = ResourceInfo("", "v1", "Namespace", "namespaces", False, VERBS)
CLUSTER_ROLE = ResourceInfo("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, VERBS)
ROLE = ResourceInfo("rbac.authorization.k8s.io", "v1", "Role", "roles", True, VERBS)
DEPLOY = ResourceInfo("apps", "v1", "Deployment", "deployments", True, VERBS)
CERT = ResourceInfo("cert-manager.io", "v1", "Certificate", "certificates", True, VERBS)
INFOS = [CM, SECRET, NAMESPACE, CLUSTER_ROLE, ROLE, DEPLOY, CERT]


def policy(**options):
    return cf.compile_policy(options)


def oid(info, name="x", namespace=""):
    return ObjectId(info.group, info.kind, namespace if info.namespaced else "", name)


def test_no_option_no_confinement():
    assert cf.compile_policy({}) is None and cf.compile_policy(None) is None
    assert cf.compile_policy(dict.fromkeys(cf.POLICY_OPTIONS)) is None
    assert cf.object_problem(oid(CLUSTER_ROLE), False, None) is None


@pytest.mark.parametrize("options, message", [
    ({"allowed_namespaces": "team-a"}, "allowed_namespaces must be a list"),
    ({"allowed_kinds": [""]}, "allowed_kinds must hold non-empty strings"),
    ({"denied_kinds": [3]}, "denied_kinds must hold non-empty strings"),
    ({"allow_cluster_scoped": "yes"}, "allow_cluster_scoped must be true or false"),
])
def test_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        cf.compile_policy(options)


@pytest.mark.parametrize("info, namespace, options, problem", [
    # namespaces: the resolved namespace, globs
    (CM, "team-a", {"allowed_namespaces": ["team-a"]}, None),
    (CM, "team-a-dev", {"allowed_namespaces": ["team-a", "team-a-*"]}, None),
    (CM, "team-b", {"allowed_namespaces": ["team-a", "team-a-*"]},
     "namespace team-b is not allowed (allowed_namespaces: team-a, team-a-*)"),
    (CM, "Team-A", {"allowed_namespaces": ["team-a"]}, "namespace Team-A is not allowed"),
    (CM, "team-a", {"allowed_namespaces": []}, "namespace team-a is not allowed (allowed_namespaces: none)"),
    # cluster-scoped kinds: off once anything is confined, even with only a deny list
    (CLUSTER_ROLE, "", {"allowed_namespaces": ["team-a"]},
     "ClusterRole.rbac.authorization.k8s.io is cluster-scoped, and cluster-scoped kinds are not allowed"),
    (NAMESPACE, "", {"denied_kinds": ["Secret"]}, "Namespace is cluster-scoped"),
    (NAMESPACE, "", {"allowed_namespaces": ["team-a"], "allow_cluster_scoped": True}, None),
    (CLUSTER_ROLE, "", {"allow_cluster_scoped": True, "allowed_kinds": ["Namespace"]},
     "kind ClusterRole.rbac.authorization.k8s.io is not allowed (allowed_kinds: Namespace)"),
    # kinds: a bare kind in any group, Kind.group, globs; deny wins
    (DEPLOY, "a", {"allowed_kinds": ["Deployment"]}, None),
    (DEPLOY, "a", {"allowed_kinds": ["*.apps"]}, None),
    (DEPLOY, "a", {"allowed_kinds": ["Deployment.extensions"]}, "kind Deployment.apps is not allowed"),
    (CERT, "a", {"allowed_kinds": ["ConfigMap", "*.cert-manager.io"]}, None),
    (ROLE, "a", {"denied_kinds": ["*.rbac.authorization.k8s.io"]},
     "kind Role.rbac.authorization.k8s.io is denied (denied_kinds: *.rbac.authorization.k8s.io)"),
    (SECRET, "a", {"allowed_kinds": ["*"], "denied_kinds": ["Secret"]}, "kind Secret is denied (denied_kinds: Secret)"),
    (CM, "a", {"allowed_kinds": ["configmap"]}, "kind ConfigMap is not allowed"),  # kinds are case-sensitive
])
def test_object_problem(info, namespace, options, problem):
    got = cf.object_problem(oid(info, namespace=namespace), info.namespaced, policy(**options))
    assert (got is None) if problem is None else (got is not None and got.startswith(problem)), got


# -- desired objects: refused in prepare, before any request ------------------------------------------
class FakeDiscovery:
    def __init__(self):
        self.index = DiscoveryIndex(INFOS)

    def resolve(self, group, kind, version=None):
        info = self.index.lookup(group, kind, version)
        if info is None:
            raise UnknownKind(f"kind {kind} is not known")
        return info

    def invalidate(self):
        """No disk cache."""


class NoWrites:
    def __getattr__(self, name):
        raise AssertionError(f"the client was used ({name}) although the run should have failed first")


def doc(kind, name, namespace=None, api_version="v1", source=None):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if source:
        meta["annotations"] = {SOURCE_ANNOTATION: source}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def run(resources, namespace="team-a", **options):
    manager = StackManager(NoWrites(), "tenant-a", namespace=namespace, discovery=FakeDiscovery(),
                           confinement=options)
    with pytest.raises(StackError) as e:
        manager.sync(resources)
    return str(e.value)


def test_an_object_in_another_tenants_namespace_fails_the_run_before_any_request():
    msg = run([doc("ConfigMap", "mine"), doc("ConfigMap", "theirs", "team-b", source="apps/theirs.yaml#0")],
              allowed_namespaces=["team-a"])
    assert msg == ("cannot sync stack 'tenant-a': ConfigMap team-b/theirs (from apps/theirs.yaml#0): outside the "
                   "stack's confinement: namespace team-b is not allowed (allowed_namespaces: team-a)")


def test_the_default_namespace_is_the_one_checked():
    """A manifest without a namespace lands in the stack's namespace: that is what must be allowed."""
    msg = run([doc("ConfigMap", "c")], namespace="default", allowed_namespaces=["team-a"])
    assert "ConfigMap default/c" in msg and "namespace default is not allowed" in msg


def test_scope_comes_from_discovery_not_the_manifest():
    """A ClusterRole written with a namespace is still cluster-scoped."""
    msg = run([doc("ClusterRole", "admin-ish", "team-a", api_version="rbac.authorization.k8s.io/v1")],
              allowed_namespaces=["team-a"])
    assert "ClusterRole.rbac.authorization.k8s.io admin-ish" in msg and "cluster-scoped kinds are not allowed" in msg


def test_a_denied_kind_and_every_problem_are_listed():
    msg = run([doc("Secret", "s"), doc("Namespace", "team-a")], denied_kinds=["Secret"], allowed_namespaces=["team-a"])
    assert "Secret team-a/s: outside the stack's confinement: kind Secret is denied" in msg
    assert "Namespace team-a: outside the stack's confinement: Namespace is cluster-scoped" in msg


def test_objects_inside_pass():
    desired = StackManager(NoWrites(), "t", namespace="team-a", discovery=FakeDiscovery(), confinement={
        "allowed_namespaces": ["team-a"], "allowed_kinds": ["ConfigMap", "*.apps"]}).prepare(
        [doc("ConfigMap", "c"), doc("Deployment", "d", api_version="apps/v1")], _Warnings())
    assert [str(d.oid) for d in desired] == ["ConfigMap team-a/c", "Deployment.apps team-a/d"]
    assert cf.confinement_problems(desired, None) == []


class _Warnings:
    def warn(self, message):
        raise AssertionError(message)


def test_bad_option_values_fail_as_options():
    with pytest.raises(StackError, match="allowed_namespaces must be a list"):
        StackManager(NoWrites(), "t", discovery=FakeDiscovery(), confinement={"allowed_namespaces": "team-a"})


# -- live objects: never pruned or released outside --------------------------------------------------
def live(o_id, stack="s"):
    meta = {"name": o_id.name}
    if o_id.namespace:
        meta["namespace"] = o_id.namespace
    return o.stamp({"apiVersion": "v1", "kind": o_id.kind, "metadata": meta}, stack, o_id, "sha256:old")


def test_a_confined_stack_never_prunes_or_releases_outside():
    inside, outside = oid(CM, "in", "team-a"), oid(CM, "out", "team-b")
    role, released = oid(CLUSTER_ROLE, "r"), oid(CM, "moved", "team-c")
    ours = {inside: (CM, live(inside)), outside: (CM, live(outside)), role: (CLUSTER_ROLE, live(role)),
            released: (CM, live(released))}
    plan = p.prune_plan(ours, "s", set(), set(), {identity_digest(released): ["other"]}, {})
    assert len(plan.candidates) == 3 and len(plan.releases) == 1
    confined = cf.confine_prune(plan, policy(allowed_namespaces=["team-a"]))
    assert [c[0] for c in confined.candidates] == [inside] and confined.releases == []
    kept = dict((k[0], k[3]) for k in confined.kept)
    assert set(kept) == {outside, role, released}
    assert all(r.code == cf.OUTSIDE_CONFINEMENT for r in kept.values())
    assert kept[outside] == ("not pruned: outside the stack's confinement: namespace team-b is not allowed "
                             "(allowed_namespaces: team-a)")
    assert cf.confine_prune(plan, None) is plan
