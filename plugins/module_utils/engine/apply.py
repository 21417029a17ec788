# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply: server-side apply stage by stage (parallel within a stage).

Stage 0 (Namespaces, CRDs) comes first; before stage 1 the CRDs applied are waited for until
Established and discovery is read again, so custom resources of the same stack can be applied.
An immutable-field refusal fails the object, or deletes and recreates it when asked. Every stage
starts only while the run still holds its lock.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import group_kind_str
from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import Steps
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import Verb
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.diff import object_diff
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.drift import foreign_tool, strip, taken_only, takeover_patch
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.dryrun import DryRuns
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.gcpause import gc_paused
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import is_secret, redact_secret_message, ssa_policy
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import CRD_GK, by_stage, remember_written
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import NotReady, is_ready, wait_gone
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import JSON_PATCH, ApiError

#: first delay (seconds) when polling for CRDs to be Established; doubles up to ``poll_interval``
FIRST_POLL_DELAY = 0.05


class ApplyError(Exception):
    """The run cannot go on (CRDs not Established, kinds not served)."""


def api_message(d, text):
    """An API error message about desired object ``d``: a Secret's values never appear in it."""
    return redact_secret_message(text, d.manifest) if is_secret(d.oid) else text


def backoff(poll_interval):
    """Delays between polls: from FIRST_POLL_DELAY, doubling up to ``poll_interval`` (then constant)."""
    delay = min(FIRST_POLL_DELAY, poll_interval)
    while True:
        yield delay
        delay = min(delay * 2, poll_interval)


class Applier(Verb):
    """Applies desired objects for one run (its :class:`.context.RunContext`). ``ensure_lock()`` raises once the run
    lost its lock."""

    def __init__(self, run):
        super(Applier, self).__init__(run)
        self.crds_ready = False
        self.notes = []
        self.recreated = {}  # ObjectId -> why it is (or would be) deleted and created again (recreate_reason)
        self.check = DryRuns(run)  # check mode's bookkeeping (.dryrun)

    def apply_one(self, d, live, dry_run):
        """Apply one object; returns ``(action, object, error message or None)``.

        Fields that people's tools own are taken over first (:func:`.drift.takeover_patch`), so the
        apply removes what git does not say; an object we did not own yet is applied, then taken over
        and applied again (adoption in one run). The merge policy takes nothing over.
        """
        path = d.info.object_path(d.oid.namespace, d.oid.name)
        manifest, standin = d.manifest, None
        if dry_run:
            gap = self.check.unchecked(d)
            if gap:
                return self.check.skip(d, live, gap)
            path, manifest, standin = self.check.target(d, path)
        take = not dry_run and ssa_policy(d.manifest) != "merge"
        try:
            if take and live is not None:
                self.take_over(path, live)
            status, obj = self.client.apply(path, manifest, self.opts.field_manager, force=self.opts.force_conflicts,
                                            dry_run=dry_run, with_status=True)
            if take and live is None and status != 201 and self.take_over(path, obj):
                obj = self.client.apply(path, d.manifest, self.opts.field_manager, force=self.opts.force_conflicts)
        except ApiError as e:
            e, gap = self.check.refused(d, e, standin) if dry_run else (e, None)
            return self.check.skip(d, live, gap) if gap else self._refused(d, live, path, e, dry_run)
        if standin:  # told as the namespace it stands in for
            obj = dict(obj, metadata=dict(obj.get("metadata") or {}, namespace=d.oid.namespace))
        if dry_run and status != 201 and ssa_policy(d.manifest) != "merge":
            obj = self.predict_takeover(d, path, obj)
        self._foreign_tool(d, obj)
        return (C.CREATED if live is None and status == 201 else C.CONFIGURED), obj, None

    def take_over(self, path, live, attempts=2):
        """Move people's tools' field ownership to our manager (guarded by resourceVersion); True if done.
        When the object changed meanwhile (a controller writing its status), it is read again and the
        takeover tried once more; after that it is left for the next run."""
        for attempt in range(attempts):
            patch = takeover_patch(live, self.opts.field_manager, self.opts.takeover)
            if patch is None:
                return False
            try:
                self.client.request("PATCH", path, body=patch, content_type=JSON_PATCH)
                return True
            except ApiError as e:
                if not (e.is_conflict or e.status == 422):
                    raise
            if attempt + 1 < attempts:
                live = self.client.get_or_none(path)
                if live is None:
                    return False
        return False

    def predict_takeover(self, d, path, obj):
        """Check mode: the dry-run apply's ``obj`` as the real run leaves it. A dry run cannot chain the takeover
        and the apply, so the fields that only people's tools own are removed here and the rest is sent as a
        dry-run update: the server defaults again what it defaults and runs admission, as after the real
        apply. Adopted objects get the takeover as their drift. ``obj`` itself if the update is refused."""
        fields, taken = taken_only(obj or {}, self.opts.field_manager, self.opts.takeover)
        if not taken:
            return obj
        if not d.drift:
            d.drift = taken
        if not fields:
            return obj
        body = strip(obj, fields)
        body["metadata"] = dict(body.get("metadata") or {})
        body["metadata"].pop("managedFields", None)
        params = {"dryRun": "All", "fieldManager": self.opts.field_manager}
        for attempt in range(2):
            try:
                return self.client.request("PUT", path, params=params, body=body)
            except ApiError as e:
                if not (e.is_conflict and attempt == 0):
                    return obj
            body["metadata"].pop("resourceVersion", None)  # a controller wrote meanwhile (its status): unconditional
        return obj

    def _foreign_tool(self, d, obj):
        tool = foreign_tool(obj or {})
        if tool and not foreign_tool(d.manifest):  # marks that come from git itself are git's
            self.notes.append("%s is also managed by %s; both will keep changing it (remove it from one of them; to "
                              "move it here, see docs/adoption.md: %s takes over the fields the tool set)"
                              % (d.named(), tool, option("takeover_managers")))

    def _refused(self, d, live, path, e, dry_run):
        fields = e.immutable_fields()
        if fields and (self.opts.recreate_on_immutable or d.recreate):
            self.recreated[d.oid] = recreate_reason(fields, api_message(d, e.message))
            predicted, refused = self.predict_recreate(d, path)
            if refused is not None:  # deleting it would leave it gone: the server refuses what would replace it
                return None, None, ("%s: immutable field(s) %s changed, but the server refuses the object as it would "
                                    "be created again, so it %s deleted: %s" % (
                                        d.named(), ", ".join(fields), "would not be" if dry_run else "was not",
                                        api_message(d, refused.describe())))
            if dry_run:
                return C.RECREATED, predicted, None
            return self.recreate(d, path, fields)
        if fields:
            return None, None, ("%s: cannot change immutable field(s) %s (set %s or the "
                                "stacksync.io/recreate-on-immutable annotation to delete and recreate it): %s"
                                % (d.named(), ", ".join(fields), option("recreate_on_immutable"), api_message(d, e.message)))
        return None, None, "%s: apply failed: %s" % (d.named(), api_message(d, e.describe()))

    def predict_recreate(self, d, path):
        """``(object, refusal)``: the object as a recreate would leave it (a dry-run create under a generated name,
        told with its own name: its diff shows what the server defaults as kept), and the ApiError the server
        refused that create with (None: it would be created). A refusal over what the old object still holds (an
        IP or port "already allocated") is not one: the old object goes first."""
        body = dict(d.manifest, metadata=dict(d.manifest.get("metadata") or {}))
        body["metadata"].pop("name", None)
        body["metadata"]["generateName"] = d.oid.name[:40] + "-"
        try:
            obj = self.client.request("POST", path.rsplit("/", 1)[0], params={
                "dryRun": "All", "fieldManager": self.opts.field_manager}, body=body)
        except ApiError as e:
            return None, (None if "already allocated" in e.describe() else e)
        if not isinstance(obj, dict):
            return None, None
        meta = dict(obj.get("metadata") or {}, name=d.oid.name)
        meta.pop("generateName", None)
        return dict(obj, metadata=meta), None

    def recreate(self, d, path, fields):
        try:
            self.client.delete(path, propagation_policy="Foreground")
        except ApiError as e:
            if not e.is_not_found:
                return None, None, "%s: immutable field(s) %s changed and delete failed: %s" % (
                    d.named(), ", ".join(fields), api_message(d, e.describe()))
        if wait_gone(self.client, [(path, d.oid)], self.opts.wait_timeout, self.opts.poll_interval):
            return None, None, "%s: timed out waiting for the old object to go away before recreating it" % (d.named(),)
        try:
            obj = self.client.apply(path, d.manifest, self.opts.field_manager, force=self.opts.force_conflicts)
        except ApiError as e:
            return None, None, "%s: deleted to be recreated (immutable field(s) %s changed), but the create failed: %s" % (
                d.named(), ", ".join(fields), api_message(d, e.describe()))
        return C.RECREATED, obj, None

    @gc_paused
    def apply_all(self, to_apply, ours, changeset, dry_run):
        """Apply stage by stage; returns ``[(Desired, live object)]`` written. Check mode dry-runs the objects of the
        namespaces it would create in stand-ins (:mod:`.standin`), deleted at the end whatever happens."""
        written = []
        step = Steps(self.progress, "dry-run applied" if dry_run else "applied", len(to_apply))

        def one(d):
            result = self._one(d, ours, dry_run)
            step()
            return result

        if dry_run:
            self.check.begin(to_apply, ours)
        try:
            for stage, items in by_stage(to_apply, key=lambda d: d.oid):
                if stage > 0:
                    self.after_prerequisites(to_apply, dry_run)
                if not dry_run:
                    self.ensure_lock()
                results = self.map(one, items)
                for note in self.notes:
                    changeset.warn(note)
                del self.notes[:]
                for d, before, action, obj, error in results:
                    self._report(d, before, action, obj, error, changeset, written, dry_run)
        finally:
            if dry_run:
                self.check.end(changeset)
        return written

    def _one(self, d, ours, dry_run):
        live = ours.get(d.oid, (None, None))[1]
        before = live
        if self.opts.diff and before is None and not d.from_crd:
            before = self.client.get_or_none(d.info.object_path(d.oid.namespace, d.oid.name))
        action, obj, error = self.apply_one(d, live, dry_run)
        if obj is not None and not dry_run and self.run.verified is not None:  # in this thread, while others wait
            remember_written(d, obj, self.opts.field_manager, self.opts.takeover, self.run.verified)
        return d, before, action, obj, error

    def _report(self, d, before, action, obj, error, changeset, written, dry_run=False):
        self.check.seen(d, action, obj, error, before)
        if error:
            changeset.add(d.oid, d.api_version, C.FAILED, C.PHASE_APPLY, reason=error)
            return
        extra = {"drift": d.drift} if d.drift else {}
        if d.oid in self.check.unvalidated:
            extra["not_validated"] = self.check.unvalidated[d.oid]
        reason = self.recreated.get(d.oid) if action == C.RECREATED else None
        changeset.add(d.oid, d.api_version, action, C.PHASE_APPLY, reason=reason, **extra)
        if reason:
            changeset.warn(recreate_warning(d.named(), reason, dry_run=dry_run))
        if self.opts.diff:
            entry = object_diff(before, obj if obj is not None else d.manifest, is_secret(d.oid), self.opts.diff_full)
            entry["before_header"] = entry["after_header"] = str(d.oid)
            changeset.diff.append(entry)
        if obj is not None:
            written.append((d, obj))

    def after_prerequisites(self, to_apply, dry_run):
        """Before stage > 0: CRDs we applied must be Established and their kinds discovered; in check mode, the
        namespaces we would create get their stand-ins."""
        if dry_run:
            self.check.open(to_apply)
        if dry_run or self.crds_ready:
            return
        self.crds_ready = True
        crds = [d for d in to_apply if d.oid.group_kind == CRD_GK]
        needs_crd = [d for d in to_apply if d.from_crd]
        if not crds and not needs_crd:
            return
        deadline = time.time() + self.opts.crd_timeout
        delays = backoff(self.opts.poll_interval)
        self._wait_established(crds, deadline, delays)
        # aggregated discovery can lag behind Established: poll until every kind we need is served
        while True:
            index = self.discovery.refresh()
            missing = [d for d in needs_crd if index.lookup(d.oid.group, d.oid.kind, d.info.version) is None]
            if not missing:
                break
            if time.time() > deadline:
                raise ApplyError("kinds not served after their CRDs were applied: " + ", ".join(
                    sorted(set(group_kind_str(*d.oid.group_kind) for d in missing))))
            time.sleep(next(delays))
        for d in needs_crd:
            d.info = index.lookup(d.oid.group, d.oid.kind, d.info.version)
            d.from_crd = False

    def _wait_established(self, crds, deadline, delays):
        def established(d):
            obj = self.client.get_or_none(d.info.object_path("", d.oid.name))
            try:
                return obj is not None and is_ready(d.oid, obj)
            except NotReady as e:  # e.g. NamesAccepted=False: waiting will not help
                raise ApplyError("%s: %s" % (d.named(), e)) from None

        pending = list(crds)
        while pending:
            pending = [d for d, ok in zip(pending, self.map(established, pending)) if not ok]
            if not pending:
                return
            if time.time() > deadline:
                names = ", ".join(d.oid.name for d in pending)
                raise ApplyError("CRDs not Established after %ss: %s" % (self.opts.crd_timeout, names))
            time.sleep(next(delays))


def recreate_reason(fields, message):
    """Why an object is deleted and created again: the immutable ``fields`` the server refused to change, and its
    ``message``."""
    return "immutable field(s) %s changed (the server said: %s)" % (", ".join(fields), message)


def recreate_warning(named, reason, dry_run=False):
    """The warning of a recreate (``dry_run``: one that check mode says would happen)."""
    if dry_run:
        return ("%s would be deleted and created again: %s; what it owns (a workload's Pods, a Job's runs) would be "
                "deleted with it, and a Service would get a new cluster IP unless git sets one" % (named, reason))
    return ("%s was deleted and created again: %s; what it owned (a workload's Pods, a Job's runs) was deleted with it"
            % (named, reason))


def foreign_owned(client, desired, ours, map_fn):
    """``[(Desired, tool)]``: desired objects not yet ours that another deployment tool manages (one GET each)."""
    def check(d):
        live = client.get_or_none(d.info.object_path(d.oid.namespace, d.oid.name))
        tool = foreign_tool(live or {})
        return d, (tool if tool and not foreign_tool(d.manifest) else None)

    todo = [d for d in desired if d.oid not in ours and not d.from_crd]
    return [(d, tool) for d, tool in map_fn(check, todo) if tool]


def refuses_shared(opts):
    """Whether objects of other stacks fail the run: ``fail_on_shared`` when set, else whether the stack is confined
    (a tenant's stack never takes over what another stack holds in its namespaces)."""
    return bool(opts.fail_on_shared) if opts.fail_on_shared is not None else opts.policy is not None


def shared_objects(desired, snap, opts, changeset):
    """Desired objects another stack claims: a warning each (taken over), or an error (:func:`refuses_shared`)."""
    shared = [(d, snap.others[d.oid]) for d in desired if d.oid in snap.others and not d.ignored]
    unknown = getattr(snap, "unchecked", {})  # what observe could not tell (a Snapshot's; none in older callers)
    unchecked = [(d, unknown[d.oid]) for d in desired if d.oid in unknown and not d.ignored]
    if unchecked and refuses_shared(opts):
        why = ("%s is set" % option("fail_on_shared") if opts.fail_on_shared else "the stack is confined")
        raise ApplyError("cannot tell whether objects belong to other stacks (%s, and their kind cannot be listed in "
                         "their namespace): " % why + "; ".join("%s (%s)" % (d.named(), problem)
                                                                for d, problem in unchecked[:20]))
    if shared and refuses_shared(opts):
        why = ("%s is set" % option("fail_on_shared") if opts.fail_on_shared else
               "the stack is confined; %s: false lets it take them over" % option("fail_on_shared"))
        raise ApplyError("objects belong to other stacks (%s): " % why + "; ".join(
            "%s (stack %r)" % (d.named(), other) for d, other in shared[:20]))
    for other, taken in _by_stack(shared):
        changeset.warn(takeover_warning(other, opts.stack, [d.named() for d in taken]))


def _by_stack(shared):
    """``[(stack, [Desired])]`` in the order the stacks come first."""
    grouped = {}
    for d, other in shared:
        grouped.setdefault(other, []).append(d)
    return list(grouped.items())


def takeover_warning(other, stack, names, limit=5):
    """One warning per stack that loses objects to ``stack``, naming the first ``limit`` of them, and what to do when
    that stack is gone (a source whose repository, path or name changed: its record would keep what this stack later
    stops declaring, :mod:`.prune` releases it to that stack instead of deleting it)."""
    pronoun = "it" if len(names) == 1 else "them"
    advice = ("; if stack %r is still synced, the two take %s from each other on every run: declare %s in one of "
              "them only (%s: true refuses it)" % (other, pronoun, pronoun, option("fail_on_shared")) +
              "; if stack %r is no longer synced (its repository, path or stack name changed), delete it with state "
              "absent (it deletes only what still carries its label): while its record declares %s, what stack %r "
              "stops declaring is released to it, not pruned" % (other, pronoun, stack))
    if len(names) == 1:
        return "%s belonged to stack %r; stack %r takes it over%s" % (names[0], other, stack, advice)
    shown = "; ".join(names[:limit]) + ("; and %d more" % (len(names) - limit) if len(names) > limit else "")
    return "%d objects belonged to stack %r; stack %r takes them over: %s%s" % (len(names), other, stack, shown, advice)
