# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readiness for ``wait``: the health rules of :mod:`health`, or the user's jmespath rule for a kind.

Pure functions on live objects, what a run waits for (:func:`awaited`), and the waiting loop (:func:`wait_for`,
the only I/O here). A ``Failed`` object raises :class:`NotReady` (the waiter fails fast, naming the condition's
reason and message); :func:`not_ready_reason` says why an object is still being waited for (for the timeout
message).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import NO_PROGRESS
from ansible_collections.stacksync.k8s.plugins.module_utils.health import rules as hl

try:
    import jmespath

    HAS_JMESPATH = True
    JMESPATH_IMPORT_ERROR = None
except ImportError as _e:
    HAS_JMESPATH = False
    JMESPATH_IMPORT_ERROR = _e


class NotReady(Exception):
    """The object will not become ready without a change (a failed Job, a stalled rollout...).

    ``health`` is the :class:`health.Health` that says so; ``str()`` is its reason and message.
    """

    def __init__(self, message, health=None):
        super(NotReady, self).__init__(message)
        self.health = health


def compile_conditions(rules):
    """Compile user rules ``[{kind, group, expression}]`` -> ``{(group|None, kind): compiled}``."""
    out = {}
    for rule in rules or []:
        out[(rule.get("group"), rule["kind"])] = jmespath.compile(rule["expression"])
    return out


def _user_rule(oid, user_rules):
    user_rules = user_rules or {}
    return user_rules.get((oid.group, oid.kind)) or user_rules.get((None, oid.kind))


def evaluate(oid, obj, user_rules=None):
    """:class:`health.Health` of live ``obj`` (``None``: gone) as ``wait`` sees it.

    A user rule for the object's group/kind wins: true is ``Current``, false ``InProgress`` (a user
    rule never fails fast). Otherwise the built-in health rules.
    """
    rule = _user_rule(oid, user_rules)
    if rule is not None and obj is not None:
        expression = getattr(rule, "expression", "")
        if rule.search(obj):
            return hl.current("WaitConditionMet", "wait_condition %s is true" % expression)
        return hl.in_progress("WaitConditionNotMet", "wait_condition %s is not true yet" % expression)
    return hl.health(obj, oid.group_kind)


def is_ready(oid, obj, user_rules=None):
    """Whether ``obj`` is ready (its health is ``Current``, or the user rule holds).

    Raises :class:`NotReady` when it is ``Failed``: it will not become ready by waiting.
    """
    result = evaluate(oid, obj, user_rules)
    if result.failed:
        raise NotReady(result.describe(), result)
    return result.ready


def not_ready_reason(oid, obj, user_rules=None):
    """``None`` when ``obj`` is ready, else why not: ``"<health> (<reason>): <message>"``.

    For the message naming every object still waited for at a timeout, e.g.
    ``Progressing (LessAvailable): Available: 0/1``.
    """
    result = evaluate(oid, obj, user_rules)
    if result.ready:
        return None
    return "%s (%s)%s" % (result.health, result.reason, ": " + result.message if result.message else "")


def awaited(written, unchanged, ours):
    """What ``wait`` waits for: every object of the stack the run applied or found unchanged, as ``[(Desired, live
    object)]`` -- the objects ``written`` (``[(Desired, what the server answered)]``), then the ``unchanged`` ones
    (``[Desired]``) with the live object the plan observed (``ours``: ``{ObjectId: (info, live object)}``). An
    unchanged object is waited for as much as a written one (a retry after a timeout must fail as the first run
    did); :func:`wait_for` judges each from the object given before it reads anything, so a healthy stack costs
    no request."""
    seen = set(d.oid for d, _obj in written)
    out = list(written)
    for d in unchanged:
        live = ours.get(d.oid)
        if live is not None and d.oid not in seen:
            seen.add(d.oid)
            out.append((d, live[1]))
    return out


def wait_for(client, written, rules, timeout, poll_interval, map_fn=map, clock=time.time, sleep=time.sleep,
             healths=None, progress=NO_PROGRESS):
    """Poll the ``[(Desired, live object)]`` (:func:`awaited`) until every one is ready: each is judged first
    from the object given (what an apply answered, what the plan observed), and only those not ready yet are
    read again (GET) after each ``poll_interval``.

    Returns the error messages: at once for objects that failed (they will not become ready by
    waiting), or at the timeout one naming every object not ready and why. ``[]`` when all are ready.
    ``healths`` (a dict), if given, receives each object's last :class:`.health_status.Health` by identity;
    ``progress(verb, done, total)`` is told how many are ready after each poll.
    """
    deadline = clock() + timeout
    pending = list(written)
    while True:
        if healths is not None:
            healths.update((d.oid, evaluate(d.oid, obj, rules)) for d, obj in pending)
        results = list(map_fn(lambda item: _check(item, rules), pending))
        failed = [msg for _ok, msg in results if msg]
        if failed:
            return failed
        pending = [item for item, (ok, _m) in zip(pending, results) if not ok]
        progress("ready", len(written) - len(pending), len(written))
        if not pending:
            return []
        if clock() > deadline:
            return ["timed out after %ss waiting for: %s" % (timeout, "; ".join(
                "%s: %s" % (d.oid, not_ready_reason(d.oid, o, rules)) for d, o in pending[:20]))]
        sleep(poll_interval)
        pending = list(map_fn(lambda item: (item[0], client.get_or_none(
            item[0].info.object_path(item[0].oid.namespace, item[0].oid.name))), pending))  # None: gone


def _check(item, rules):
    d, obj = item
    try:
        return is_ready(d.oid, obj, rules), None
    except NotReady as e:
        return False, "%s: %s" % (d.oid, e)


def wait_gone(client, objects, timeout, poll_interval, clock=time.time, sleep=time.sleep, progress=NO_PROGRESS):
    """Poll ``[(path, ObjectId)]`` just deleted until they are gone; the ones still there at the timeout
    (waiting for finalizers), as ``[ObjectId]``. ``progress(verb, done, total)`` is told how many are gone."""
    deadline = clock() + timeout
    pending = list(objects)
    while pending:
        pending = [(path, oid) for path, oid in pending if client.get_or_none(path) is not None]
        progress("gone", len(objects) - len(pending), len(objects))
        if not pending or clock() > deadline:
            break
        sleep(poll_interval)
    return [oid for _path, oid in pending]
