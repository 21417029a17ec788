# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health of a live Kubernetes object, in two vocabularies from one computation. Pure functions, no I/O.

``status`` is kstatus's (sigs.k8s.io/cli-utils ``pkg/kstatus/status``): ``Current``, ``InProgress``,
``Failed``, ``Terminating``, ``NotFound``, ``Unknown``. ``health`` is Argo CD's: ``Healthy``,
``Progressing``, ``Degraded``, ``Suspended``, ``Missing``, ``Unknown``.

Order of the rules (as kstatus):

1. no object: ``NotFound`` / ``Missing``; ``metadata.deletionTimestamp``: ``Terminating``;
2. ``metadata.generation`` not yet observed (``status.observedGeneration`` present and different):
   ``InProgress``;
3. a ``Stalled=True`` condition: ``Failed``; a ``Reconciling=True`` condition: ``InProgress``;
4. the rule of the object's kind (``KIND_RULES``);
5. any other kind: its ``Ready`` condition when it has one, else ``Current``.

Two things the vocabularies do not map one to one:

* ``Suspended`` (paused Deployment, suspended Job or CronJob) is ``Current``: nothing will change until
  someone resumes it, so there is nothing to wait for;
* ``Degraded`` with status ``InProgress``: the cluster reports a problem that usually resolves itself
  (an APIService whose backend is not up yet, a ReplicaSet over its quota, a custom resource with
  ``Ready=False`` but not ``Stalled``). Only ``Failed`` is terminal: a waiter fails fast on ``Failed``
  and keeps waiting on everything else.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.health.kinds import KIND_RULES, terminating
from ansible_collections.stacksync.k8s.plugins.module_utils.health.status import (
    CURRENT,
    DEGRADED,
    FAILED,
    IN_PROGRESS,
    NOT_FOUND,
    UNKNOWN,
    _from_condition,
    _h,
    _status,
    _true,
    current,
    get_condition,
    group_kind_of,
    in_progress,
)


# -- generic rules (every kind) --------------------------------------------------------------------
def _generic(obj, kind):
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return terminating(obj, kind)
    observed = _status(obj).get("observedGeneration")
    generation = meta.get("generation")
    if observed is not None and generation is not None and int(observed) != int(generation):
        return in_progress("LatestGenerationNotObserved", "%s generation is %s, but latest observed generation is %s"
                           % (kind, generation, observed))
    stalled = _true(obj, "Stalled")
    if stalled is not None:
        return _from_condition(FAILED, stalled, "Stalled")
    reconciling = _true(obj, "Reconciling")
    if reconciling is not None:
        return _from_condition(IN_PROGRESS, reconciling, "Reconciling")
    return None


def _ready_condition(obj):
    ready = get_condition(obj, "Ready")
    if ready is None:
        return current("NoConditions", "no Ready condition to wait for")
    if ready.get("status") == "True":
        return _from_condition(CURRENT, ready, "Ready")
    if ready.get("status") == "False":
        return _from_condition(IN_PROGRESS, ready, "NotReady", DEGRADED)
    return _from_condition(IN_PROGRESS, ready, "ReadyUnknown")


def health(obj, group_kind=None):
    """Health of live object ``obj`` (``None``: it does not exist).

    ``group_kind`` defaults to the object's own ``apiVersion`` / ``kind``. A status this module cannot
    read (a field of the wrong type) is ``Unknown``, never an exception.
    """
    if obj is None:
        return _h(NOT_FOUND, "NotFound", "object not found")
    group, kind = group_kind or group_kind_of(obj)
    try:
        return _generic(obj, kind) or KIND_RULES.get((group, kind), _ready_condition)(obj)
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        return _h(UNKNOWN, "InvalidStatus", "cannot read the status of this %s: %s" % (kind or "object", e))
