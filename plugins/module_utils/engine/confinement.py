# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-stack confinement: the namespaces and kinds a stack may write and delete. Pure functions, no I/O.

Argo CD's AppProject ``destinations`` / ``clusterResourceWhitelist`` and Flux's ``targetNamespace`` are
the model: a stack (a source of ``stacksync.k8s.sources``) given any of :data:`POLICY_OPTIONS` may only
hold objects in the namespaces ``allowed_namespaces`` names, of the kinds ``allowed_kinds`` names and
``denied_kinds`` does not, and no cluster-scoped object unless ``allow_cluster_scoped`` is true.
The namespace checked is the object's *resolved* one (after the default namespace was filled in;
whether a kind is namespaced comes from discovery, never from the manifest). A desired object outside
fails the run before any write (:func:`confinement_problems`, from :func:`.prepare.prepare`); a live
object outside is never pruned or released (:func:`confine_prune`, on the final prune plan).

Patterns are shell-style globs (``team-a-*``). A kind pattern without a ``.`` matches the kind in any
API group (``Secret``, ``Cluster*``); with one it matches ``Kind.group`` as kubectl writes it
(``Deployment.apps``, ``*.rbac.authorization.k8s.io``, ``*.cert-manager.io``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from fnmatch import fnmatchcase

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import group_kind_str
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import Reason

#: the options of a confinement, as the ``stack`` module and each source of ``sources`` take them
POLICY_OPTIONS = ("allowed_namespaces", "allowed_kinds", "denied_kinds", "allow_cluster_scoped")
#: their argument spec (no defaults: unset means unconfined, and ``allow_cluster_scoped`` unset means false)
POLICY_SPEC = dict(
    allowed_namespaces=dict(type="list", elements="str"),
    allowed_kinds=dict(type="list", elements="str"),
    denied_kinds=dict(type="list", elements="str"),
    allow_cluster_scoped=dict(type="bool"),
)
#: the reason code of a live object a confined stack leaves alone (its prune plan's ``kept``)
OUTSIDE_CONFINEMENT = "outside-confinement"
SHOWN = 20  # objects named in one error


class Policy:
    """A compiled confinement (see the module's documentation); ``None`` stands for no confinement."""

    __slots__ = ("cluster_scoped", "denied", "kinds", "namespaces")

    def __init__(self, namespaces, kinds, denied, cluster_scoped):
        self.namespaces = namespaces  # tuple of globs, or None: any namespace
        self.kinds = kinds  # tuple of globs, or None: any kind
        self.denied = denied  # tuple of globs
        self.cluster_scoped = cluster_scoped  # bool

    def __repr__(self):
        return "Policy(namespaces=%r, kinds=%r, denied=%r, cluster_scoped=%r)" % (
            self.namespaces, self.kinds, self.denied, self.cluster_scoped)


def _patterns(name, value):
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError("%s must be a list of names or glob patterns, got %r" % (name, value))
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValueError("%s must hold non-empty strings, got %r" % (name, item))
    return tuple(item.strip() for item in value)


def compile_policy(options):
    """A :class:`Policy` from ``{option: value}`` (:data:`POLICY_OPTIONS`, unset ones ``None``), or ``None`` when
    none is set. Raises ValueError for a value of the wrong type."""
    options = dict((k, (options or {}).get(k)) for k in POLICY_OPTIONS)
    if all(v is None for v in options.values()):
        return None
    cluster_scoped = options["allow_cluster_scoped"]
    if cluster_scoped is not None and not isinstance(cluster_scoped, bool):
        raise ValueError("allow_cluster_scoped must be true or false, got %r" % (cluster_scoped,))
    return Policy(_patterns("allowed_namespaces", options["allowed_namespaces"]),
                  _patterns("allowed_kinds", options["allowed_kinds"]),
                  _patterns("denied_kinds", options["denied_kinds"]) or (), bool(cluster_scoped))


def kind_matches(pattern, group, kind):
    """Whether kind ``pattern`` matches ``kind`` of API ``group`` (see the module's documentation)."""
    if "." in pattern:
        return fnmatchcase(group_kind_str(group, kind), pattern)
    return fnmatchcase(kind, pattern)


def _shown(patterns):
    return ", ".join(patterns) if patterns else "none"


def object_problem(oid, namespaced, policy):
    """Which rule of ``policy`` object ``oid`` (namespaced or not, as discovery says) breaks, or None."""
    if policy is None:
        return None
    gk = group_kind_str(oid.group, oid.kind)
    for pattern in policy.denied:
        if kind_matches(pattern, oid.group, oid.kind):
            return "kind %s is denied (denied_kinds: %s)" % (gk, pattern)
    if policy.kinds is not None and not any(kind_matches(p, oid.group, oid.kind) for p in policy.kinds):
        return "kind %s is not allowed (allowed_kinds: %s)" % (gk, _shown(policy.kinds))
    if not namespaced:
        if not policy.cluster_scoped:
            return "%s is cluster-scoped, and cluster-scoped kinds are not allowed (allow_cluster_scoped: false)" % gk
        return None
    if policy.namespaces is not None and not any(fnmatchcase(oid.namespace, p) for p in policy.namespaces):
        return "namespace %s is not allowed (allowed_namespaces: %s)" % (oid.namespace, _shown(policy.namespaces))
    return None


def confinement_problems(desired, policy):
    """``["<object>: outside the stack's confinement: <rule>"]`` for the desired objects (``[Desired]``, their
    identities resolved) that ``policy`` does not allow; ``[]`` when all are allowed or there is no policy."""
    if policy is None:
        return []
    out = []
    for d in desired:
        problem = object_problem(d.oid, d.info.namespaced, policy)
        if problem:
            out.append("%s: outside the stack's confinement: %s" % (d.named(), problem))
            if len(out) == SHOWN:
                break
    return out


def confine_prune(prune, policy):
    """The prune plan ``prune`` (a :class:`.plan.PrunePlan`) with every candidate and release outside ``policy``
    moved to ``kept`` (reason :data:`OUTSIDE_CONFINEMENT`): a confined stack deletes and relabels only inside."""
    if policy is None or prune is None:
        return prune
    for attr in ("candidates", "releases"):
        staying = []
        for entry in getattr(prune, attr):
            oid, info, obj = entry[:3]
            problem = object_problem(oid, info.namespaced, policy)
            if problem:
                prune.kept.append((oid, info, obj, Reason(OUTSIDE_CONFINEMENT, "not pruned: outside the stack's "
                                                                               "confinement: " + problem)))
            else:
                staying.append(entry)
        setattr(prune, attr, staying)
    prune.holders = [oid for oid in prune.holders if oid in prune.ids]
    prune.kept.sort(key=lambda entry: entry[0])
    return prune
