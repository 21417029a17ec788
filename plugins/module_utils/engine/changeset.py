# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run did (or would do): one typed entry per object and outcome.

Modelled on fluxcd/pkg ``ssa``'s ChangeSet: every step returns entries with the object's identity, an
action (one of the constants below), the phase it belongs to, and for objects left alone a reason
code (a reason code constant of :mod:`.plan`, such as ``plan.NOT_OWNED``) and message. :meth:`ChangeSet.result` turns them into the module's documented
return values; the role's summary reads those fields, never message text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.stacksync.k8s.plugins.module_utils.health.status import unhealthy

CREATED = "created"
CONFIGURED = "configured"
RECREATED = "recreated"  # deleted and created again: an immutable field changed (recreate_on_immutable)
UNCHANGED = "unchanged"
PRUNED = "pruned"
SKIPPED = "skipped"
FAILED = "failed"
TERMINATING = "terminating"
RELEASED = "released"
MARKED = "marked"  # prune_grace: marked for pruning by a later run (extra: prune_after)
UNMARKED = "unmarked"  # prune_grace: back in git, its prune mark removed
APPLY_ACTIONS = (CREATED, CONFIGURED, RECREATED, UNCHANGED)
#: the apply actions that write the object
WRITE_ACTIONS = (CREATED, CONFIGURED, RECREATED)

PHASE_APPLY = "apply"
PHASE_PRUNE = "prune"


def object_ref(oid, api_version, **extra):
    """An object as results name it: ``apiVersion``, ``kind``, ``namespace`` (None if cluster-scoped), ``name``."""
    out = {"apiVersion": api_version, "kind": oid.kind, "namespace": oid.namespace or None, "name": oid.name}
    out.update(extra)
    return out


class Entry(namedtuple("Entry", ["oid", "api_version", "action", "phase", "code", "reason", "extra"])):
    """One object's outcome. ``code`` is a reason code of :mod:`.plan` for skipped / kept objects."""

    __slots__ = ()

    def ref(self):
        """The entry as the module returns it (see the module's RETURN)."""
        out = object_ref(self.oid, self.api_version)
        if self.action in APPLY_ACTIONS:
            out["action"] = self.action
        if self.action in (SKIPPED, TERMINATING, FAILED, RECREATED):
            out["reason"] = self.reason
        if self.action == SKIPPED:
            out["code"] = self.code
            out["phase"] = self.phase
        out.update(self.extra or {})
        return out


class ChangeSet:
    """Entries of a run, its warnings, errors (messages of failed objects and of the run) and diffs."""

    def __init__(self):
        self.entries = []
        self.warnings = []
        self.errors = []
        self.diff = []
        self.checksum = None
        self.lock_wait = 0.0  # seconds the run waited for another run's Lease of the stack

    def add(self, oid, api_version, action, phase, code=None, reason=None, **extra):
        entry = Entry(oid, api_version, action, phase, code, reason, dict(extra))
        self.entries.append(entry)
        if action == FAILED:
            self.errors.append(reason)
        return entry

    def record_health(self, healths):
        """Add ``health`` (and ``health_reason``) to the entries of the objects waited for."""
        for e in self.entries:
            h = healths.get(e.oid)
            if h is not None and e.action in APPLY_ACTIONS:
                e.extra["health"] = h.health
                e.extra["health_reason"] = "%s: %s" % (h.reason, h.message) if h.message else h.reason

    def warn(self, message):
        if message not in self.warnings:
            self.warnings.append(message)

    def reset(self, keep_warnings):
        """Forget everything but the first ``keep_warnings`` warnings (the run plans again)."""
        self.entries, self.errors, self.diff = [], [], []
        del self.warnings[keep_warnings:]

    def _refs(self, *actions):
        return [e.ref() for e in self.entries if e.action in actions]

    @property
    def applied(self):
        return self._refs(*APPLY_ACTIONS)

    @property
    def pruned(self):
        return self._refs(PRUNED)

    @property
    def skipped(self):
        return self._refs(SKIPPED)

    @property
    def terminating(self):
        return self._refs(TERMINATING)

    @property
    def released(self):
        return self._refs(RELEASED)

    @property
    def marked(self):
        return self._refs(MARKED)

    def count(self, action):
        return sum(1 for e in self.entries if e.action == action)

    @property
    def counts(self):
        actions = (CREATED, CONFIGURED, RECREATED, UNCHANGED, PRUNED, SKIPPED, TERMINATING, RELEASED, MARKED, UNMARKED)
        return dict((action, self.count(action)) for action in actions)

    @property
    def changed(self):
        return any(e.action in (*WRITE_ACTIONS, PRUNED, RELEASED, MARKED, UNMARKED) for e in self.entries)

    def reported_applied(self):
        """``applied`` without the unchanged objects, but those a wait found not healthy: they are counted."""
        return [e.ref() for e in self.entries if e.action in WRITE_ACTIONS
                or (e.action == UNCHANGED and e.extra and unhealthy(e.extra.get("health")))]

    def result(self, unchanged=True):
        """The module's return values; ``unchanged``: ``applied`` lists the unchanged objects too (else
        :meth:`reported_applied`). Skipped objects go under ``skipped_objects``: Ansible reads a
        true ``skipped`` key as "this task was skipped". Warnings are emitted with ``module.warn()``."""
        applied = self.applied if unchanged else self.reported_applied()
        return dict(changed=self.changed, applied=applied, pruned=self.pruned, skipped_objects=self.skipped,
                    terminating=self.terminating, released=self.released, marked=self.marked,
                    unmarked=self._refs(UNMARKED), checksum=self.checksum, counts=self.counts,
                    lock_wait=self.lock_wait)
