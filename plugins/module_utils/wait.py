# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readiness rules per kind, plus user jmespath conditions. Pure functions on live objects."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    import jmespath

    HAS_JMESPATH = True
    JMESPATH_IMPORT_ERROR = None
except ImportError as _e:
    HAS_JMESPATH = False
    JMESPATH_IMPORT_ERROR = _e


def condition(obj, ctype):
    """Status (``"True"``/``"False"``/``"Unknown"``/``None``) of condition ``ctype``."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond.get("status")
    return None


def _generation_observed(obj):
    status = obj.get("status") or {}
    return status.get("observedGeneration", 0) >= (obj.get("metadata") or {}).get("generation", 0)


def _deployment(obj):
    status = obj.get("status") or {}
    replicas = (obj.get("spec") or {}).get("replicas", 1)
    return (_generation_observed(obj) and status.get("updatedReplicas", 0) >= replicas
            and status.get("availableReplicas", 0) >= replicas and not status.get("unavailableReplicas"))


def _statefulset(obj):
    status = obj.get("status") or {}
    replicas = (obj.get("spec") or {}).get("replicas", 1)
    return (_generation_observed(obj) and status.get("readyReplicas", 0) >= replicas
            and status.get("updatedReplicas", replicas) >= replicas)


def _daemonset(obj):
    status = obj.get("status") or {}
    want = status.get("desiredNumberScheduled")
    return (_generation_observed(obj) and want is not None and status.get("numberReady", 0) >= want
            and status.get("updatedNumberScheduled", 0) >= want)


def _job(obj):
    if condition(obj, "Failed") == "True":
        raise NotReady("job failed")
    return condition(obj, "Complete") == "True"


def _phase(value):
    return lambda obj: (obj.get("status") or {}).get("phase") == value


class NotReady(Exception):
    """The object will not become ready (e.g. a failed Job)."""


#: (group, kind) -> predicate(live object) -> bool
RULES = {
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): lambda o: condition(o, "Established") == "True",
    ("apiregistration.k8s.io", "APIService"): lambda o: condition(o, "Available") == "True",
    ("", "Namespace"): _phase("Active"),
    ("", "PersistentVolumeClaim"): _phase("Bound"),
    ("", "Pod"): lambda o: condition(o, "Ready") == "True",
}


def compile_conditions(rules):
    """Compile user rules ``[{kind, group, expression}]`` -> ``{(group|None, kind): compiled}``."""
    out = {}
    for rule in rules or []:
        out[(rule.get("group"), rule["kind"])] = jmespath.compile(rule["expression"])
    return out


def is_ready(oid, obj, user_rules=None):
    """Readiness of live ``obj``: a user rule for its group/kind wins, else the built-in rule, else
    a ``Ready`` condition if it has one, else ready."""
    user_rules = user_rules or {}
    rule = user_rules.get((oid.group, oid.kind)) or user_rules.get((None, oid.kind))
    if rule is not None:
        return bool(rule.search(obj))
    builtin = RULES.get(oid.group_kind)
    if builtin is not None:
        return bool(builtin(obj))
    ready = condition(obj, "Ready")
    return ready is None or ready == "True"
