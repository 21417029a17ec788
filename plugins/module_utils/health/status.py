# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health vocabularies (kstatus and Argo CD), the :class:`Health` value and condition helpers. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

# kstatus
CURRENT = "Current"
IN_PROGRESS = "InProgress"
FAILED = "Failed"
TERMINATING = "Terminating"
NOT_FOUND = "NotFound"
UNKNOWN = "Unknown"
# Argo CD
HEALTHY = "Healthy"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"
SUSPENDED = "Suspended"
MISSING = "Missing"

#: the Argo CD health of each kstatus status, unless a rule says otherwise
ARGO_HEALTH = {
    CURRENT: HEALTHY,
    IN_PROGRESS: PROGRESSING,
    FAILED: DEGRADED,
    TERMINATING: PROGRESSING,  # Argo CD: "Pending deletion"
    NOT_FOUND: MISSING,
    UNKNOWN: UNKNOWN,
}

#: container waiting reasons that will not fix themselves (a Pod with one is Failed)
FAILED_WAITING_REASONS = frozenset((
    "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull",
    "CreateContainerConfigError", "CreateContainerError",
))


def unhealthy(health):
    """True if ``health``, as a result entry reports it (``stack_info``, a wait), says the object is not healthy
    (None or empty: not checked)."""
    return bool(health) and health not in (HEALTHY, CURRENT)


class Health(namedtuple("Health", ["status", "health", "reason", "message"])):
    """kstatus ``status``, Argo CD ``health``, a CamelCase ``reason`` and a human ``message``."""

    __slots__ = ()

    @property
    def ready(self):
        """Nothing left to wait for."""
        return self.status == CURRENT

    @property
    def failed(self):
        """It will not become ready without a change (waiting is pointless)."""
        return self.status == FAILED

    def describe(self):
        """``"Reason: message"`` (or the one that is set)."""
        return ": ".join(p for p in (self.reason, self.message) if p) or self.status

    def to_dict(self):
        return dict(self._asdict())


def _h(status, reason, message, health=None):
    return Health(status, health or ARGO_HEALTH[status], reason, message)


def current(reason, message):
    return _h(CURRENT, reason, message)


def in_progress(reason, message, health=None):
    return _h(IN_PROGRESS, reason, message, health)


def failed(reason, message):
    return _h(FAILED, reason, message)


def suspended(reason, message):
    return _h(CURRENT, reason, message, SUSPENDED)


# -- field access ---------------------------------------------------------------------------------
def _status(obj):
    return obj.get("status") or {}


def _spec(obj):
    return obj.get("spec") or {}


def _int(mapping, key, default=0):
    value = mapping.get(key)
    return default if value is None else int(value)


def conditions(obj):
    """``status.conditions`` as a list (``[]`` when absent)."""
    conds = _status(obj).get("conditions") or []
    if not isinstance(conds, list):
        raise TypeError("status.conditions is not a list")
    return conds


def get_condition(obj, ctype):
    """The condition of type ``ctype`` (a dict), or ``None``."""
    for cond in conditions(obj):
        if cond.get("type") == ctype:
            return cond
    return None


def _true(obj, ctype):
    cond = get_condition(obj, ctype)
    return cond if cond is not None and cond.get("status") == "True" else None


def _from_condition(status, cond, default_reason, health=None):
    return _h(status, cond.get("reason") or default_reason, cond.get("message") or "", health)


def group_kind_of(obj):
    """``(group, kind)`` from an object's ``apiVersion`` and ``kind``."""
    api_version = obj.get("apiVersion") or ""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return group, obj.get("kind") or ""
