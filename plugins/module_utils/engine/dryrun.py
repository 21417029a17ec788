# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode: every object a sync would create or change is sent as a server-side dry run, so that built-in
validation and admission (Pod Security admission, ValidatingAdmissionPolicy, webhooks) refuse in check mode what
they would refuse in the run, with the same message. Objects of the namespaces the sync would create are dry-run
in stand-ins (:mod:`.standin`). What the server cannot validate before the run is **listed** with the reason
(``not_validated`` on the object, and a warning), never silently counted as "would create":

* a custom resource whose CustomResourceDefinition the same sync creates (the kind is not served yet);
* an object of a namespace that has no stand-in (:meth:`.standin.StandIns.reason`), or whose own dry run failed;
* an object of a namespace that does not exist and that the sync does not create, when another task may create it
  (the stack module on its own), or when a source of the same ``stacksync.k8s.sources`` run applied before it does
  (else its refusal is the run's: nothing creates the namespace);
* a Pod naming a ServiceAccount the same sync creates (ServiceAccount admission looks it up), or in a stand-in the
  ``default`` one the namespace gets once created;
* an object the server refuses to dry-run (``does not support dry run``: a webhook with side effects, which only
  admissionregistration/v1beta1 -- gone since Kubernetes 1.22 -- could register; v1 refuses them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import Verb
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import CRD_GK, NAMESPACE_GK
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.standin import StandIns, translate

SA_GK = ("", "ServiceAccount")
_SA_MISSING = re.compile(r'error looking up service account ([^/\s]+)/([^:\s]+): serviceaccount "[^"]+" not found')
CRD_FIRST = ("its kind is served by a CustomResourceDefinition this sync creates: the server cannot check it before the "
             "definition exists")


def dry_run_gap(d, error, created, in_standin, run_sources=None):
    """Why a dry-run refusal ``error`` of desired ``d`` does not say the run would fail (a reason to list it as not
    validated), or None. ``created``: ``{(namespace, name)}`` of the ServiceAccounts this sync creates.
    ``run_sources``: the other sources of a ``stacksync.k8s.sources`` run (:class:`.run_sources.RunSources`): a
    namespace that none of those applied before this stack creates is missing in the run too."""
    message = error.message or ""
    if "does not support dry run" in message:
        return "the server cannot dry-run it: %s" % message
    found = _SA_MISSING.search(message)
    if found and ((found.group(1), found.group(2)) in created or (in_standin and found.group(2) == "default")):
        return ("it runs as ServiceAccount %s/%s, which %s: the server cannot check it before %s exists"
                % (found.group(1), found.group(2), "this sync creates" if found.group(2) != "default" else
                   "the namespace gets once created", "that ServiceAccount" if found.group(2) != "default" else
                   "the namespace"))
    if error.is_not_found and d.oid.namespace and ('namespaces "%s" not found' % d.oid.namespace) in message:
        if run_sources is None or not run_sources.known:  # a task of its own: an earlier task may create it
            return "its namespace %s does not exist (yet: another task or source may create it)" % d.oid.namespace
        maker = run_sources.namespace_made_before(d.oid.namespace)
        if maker is not None:
            return "its namespace %s does not exist yet: %s, applied before this stack, creates it" % (
                d.oid.namespace, maker.named())
    return None


def _marks(obj):
    """The labels and annotations of ``obj`` that admission may read (not the stack's own)."""
    meta = obj.get("metadata") or {}
    return [dict((k, v) for k, v in (meta.get(field) or {}).items() if not k.startswith("stacksync.io/"))
            for field in ("labels", "annotations")]


class DryRuns(Verb):
    """What one check run (its :class:`.context.RunContext`) learns as it dry-runs stage by stage: the namespaces and
    kinds it would create, the stand-ins, and what it could not validate (``unvalidated``: ObjectId -> reason)."""

    def __init__(self, run):
        super(DryRuns, self).__init__(run)
        self.new_namespaces = {}  # name -> the dry run's object
        self.failed_namespaces = set()
        self.new_kinds = set()  # (group, kind) of the CRDs the run would create
        self.creates = set()  # (namespace, name) of the ServiceAccounts the run would create
        self.standins = None
        self.unvalidated = {}
        self.relabelled = set()  # existing namespaces whose labels or annotations the run would change

    def begin(self, to_apply, ours):
        self.creates = set((d.oid.namespace, d.oid.name) for d in to_apply if d.oid.group_kind == SA_GK and d.oid not in ours)

    def seen(self, d, action, obj, error, before=None):
        """After the dry run of ``d`` (stage 0: Namespaces and CRDs): ``obj`` is what the server answered, ``before``
        the live object when known."""
        if d.oid.group_kind == NAMESPACE_GK and action == C.CREATED:
            self.new_namespaces[d.oid.name] = obj
        elif d.oid.group_kind == NAMESPACE_GK and action == C.CONFIGURED and before is not None and obj is not None and (
                _marks(before) != _marks(obj)):
            self.relabelled.add(d.oid.name)
        elif d.oid.group_kind == NAMESPACE_GK and error:
            self.failed_namespaces.add(d.oid.name)
        elif d.oid.group_kind == CRD_GK and action == C.CREATED:
            spec = d.manifest.get("spec") or {}
            self.new_kinds.add((spec.get("group"), (spec.get("names") or {}).get("kind")))

    def unchecked(self, d):
        """Why desired ``d`` cannot be dry-run (a reason to list it as not validated), or None."""
        if d.from_crd or d.oid.group_kind in self.new_kinds:
            return CRD_FIRST
        if d.oid.namespace in self.failed_namespaces:
            return "its namespace %s would not be created (see its error)" % d.oid.namespace
        if d.oid.namespace in self.new_namespaces and self.standins is not None:
            return self.standins.reason(d.oid.namespace) or (
                None if self.standins.target(d) else "no stand-in namespace to check it in")
        return None

    def open(self, to_apply):
        """Before stage 1: stand-ins for the namespaces to create that objects to dry-run are in."""
        if self.standins is not None:
            return
        wanted = set(d.oid.namespace for d in to_apply if d.oid.namespace in self.new_namespaces and not self.unchecked(d))
        self.standins = StandIns(self.client, self.map, self.opts.poll_interval)
        self.standins.open(dict((name, self.new_namespaces[name]) for name in wanted))

    def target(self, d, path):
        """``(path, manifest, stand-in name or None)`` to dry-run ``d`` with."""
        found = self.standins.target(d) if self.standins is not None else None
        return found or (path, d.manifest, None)

    def refused(self, d, error, standin):
        """``(error as the run would tell it, reason it is no refusal of the run or None)``."""
        error = translate(error, standin, d.oid.namespace) if standin else error
        return error, dry_run_gap(d, error, self.creates, standin is not None, self.opts.run_sources)

    def skip(self, d, live, reason):
        """The apply result of ``d`` listed as not validated."""
        self.unvalidated[d.oid] = reason
        return (C.CREATED if live is None else C.CONFIGURED), None, None

    def end(self, changeset):
        """Delete the stand-ins (always: the caller's ``finally``), and warn about what was not validated."""
        for warning in self.standins.close() if self.standins is not None else ():
            changeset.warn(warning)
        for name in sorted(self.relabelled):
            changeset.warn("Namespace %s: this sync changes its labels or annotations; check mode's dry runs of its objects "
                           "were answered for the current ones (Pod Security admission and policies' namespaceSelectors "
                           "read them)" % name)
        if self.unvalidated:
            changeset.warn("check mode could not validate %d object(s) with the server (listed with not_validated): %s" % (
                len(self.unvalidated), "; ".join("%s: %s" % (oid, why) for oid, why in sorted(self.unvalidated.items())[:5])))
