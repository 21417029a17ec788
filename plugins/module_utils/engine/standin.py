# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode's server-side dry runs of the objects of namespaces the sync would create.

A dry run in a namespace that does not exist is refused by the server (NamespaceLifecycle: ``namespaces "x" not
found``), and a namespace that is itself only dry-run created cannot hold objects. So check mode creates, for each
such namespace, a **stand-in**: a real namespace named ``stacksync-check-<random>``, labelled
``stacksync.io/check-stand-in: <the namespace>``, carrying the labels and annotations the dry run of the namespace
says it would have (Pod Security admission's ``pod-security.kubernetes.io/enforce``, what a ValidatingAdmissionPolicy's
or webhook's ``namespaceSelector`` matches), without finalizers of ours. Its objects are dry-run in it, and what the
server answers is told with the real namespace's name. The stand-ins are deleted when the dry runs end (also on a
failure), and a later check run deletes any left by an interrupted one (older than :data:`STALE_AFTER`).

An object of such a namespace is listed as not validated (:mod:`.dryrun`), with :meth:`StandIns.reason`, when it has
no stand-in: no rights to create and delete namespaces, or a policy whose ``namespaceSelector`` tells the stand-in
from the namespace (a stand-in's ``kubernetes.io/metadata.name`` label is its own name).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import calendar
import os
import time

from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

STANDIN_LABEL = "stacksync.io/check-stand-in"
STANDIN_PREFIX = "stacksync-check-"
NAME_LABEL = "kubernetes.io/metadata.name"
#: seconds after which a stand-in is deemed left behind by an interrupted run
STALE_AFTER = 3600
#: seconds a check run waits for its stand-ins to be gone (the namespace controller removes them)
GONE_TIMEOUT = 60
_NAMESPACES = "/api/v1/namespaces"
_ADMISSION = "/apis/admissionregistration.k8s.io/v1/"
#: (kind, collection, where its namespace selectors are)
_SELECTING = (("ValidatingAdmissionPolicy", "validatingadmissionpolicies", "policy"),
              ("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", "binding"),
              ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", "webhooks"),
              ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "webhooks"))


def seconds(text):
    """Seconds since the epoch of an RFC 3339 time the server wrote (0 if it is none)."""
    try:
        return calendar.timegm(time.strptime((text or "")[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return 0


def _ours(key):
    return key.startswith("stacksync.io/") or key == NAME_LABEL or key == "kubectl.kubernetes.io/last-applied-configuration"


def standin_body(name, real, planned):
    """The stand-in Namespace ``name`` for namespace ``real`` as the dry run ``planned`` says it would be created."""
    meta = (planned or {}).get("metadata") or {}
    labels = dict((k, v) for k, v in (meta.get("labels") or {}).items() if not _ours(k))
    labels[STANDIN_LABEL] = real
    annotations = dict((k, v) for k, v in (meta.get("annotations") or {}).items() if not _ours(k))
    out = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    if annotations:
        out["metadata"]["annotations"] = annotations
    return out


def translate(error, standin, real):
    """``error`` as it reads for namespace ``real``: the stand-in's name replaced."""
    def fix(text):
        return text.replace(standin, real) if isinstance(text, str) else text

    causes = [dict((k, fix(v)) for k, v in c.items()) if isinstance(c, dict) else c for c in error.causes or []]
    return ApiError(error.status, error.reason, fix(error.message), causes, error.method, fix(error.path))


def stale(namespaces, now):
    """Names of stand-ins (listed ``namespaces``) older than :data:`STALE_AFTER` at ``now`` (server time, seconds)."""
    out = []
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        name = meta.get("name") or ""
        if (name.startswith(STANDIN_PREFIX) and STANDIN_LABEL in (meta.get("labels") or {}) and not meta.get("deletionTimestamp")
                and now - seconds(meta.get("creationTimestamp")) > STALE_AFTER):
            out.append(name)
    return out


def selector_matches(selector, labels):
    """A ``LabelSelector`` against ``labels`` (an empty or absent selector matches every namespace)."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if ((op == "In" and labels.get(key) not in values) or (op == "NotIn" and key in labels and labels[key] in values)
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels)):
            return False
    return True


def namespace_selectors(kind, where, obj):
    """``[(name, selector)]`` of one admission configuration object."""
    spec = obj.get("spec") or {}
    name = "%s %s" % (kind, (obj.get("metadata") or {}).get("name"))
    if where == "policy":
        return [(name, (spec.get("matchConstraints") or {}).get("namespaceSelector"))]
    if where == "binding":
        return [(name, (spec.get("matchResources") or {}).get("namespaceSelector"))]
    return [("%s (webhook %s)" % (name, w.get("name")), w.get("namespaceSelector")) for w in obj.get("webhooks") or []]


def diverging(selectors, real_labels, standin_labels):
    """The names of ``selectors`` (``[(name, selector)]``) that select one of the two label sets and not the other."""
    return [name for name, sel in selectors if selector_matches(sel, real_labels) != selector_matches(sel, standin_labels)]


class StandIns:
    """The stand-ins of one check run: :meth:`open` before the dry runs of stage 1, :meth:`close` after the last."""

    def __init__(self, client, map_fn, poll_interval=1.0):
        self.client = client
        self.map = map_fn
        self.poll_interval = poll_interval
        self.by_real = {}  # namespace -> (stand-in name, uid)
        self.missing = {}  # namespace -> why it has no stand-in
        self.warnings = []

    def open(self, planned):
        """Create a stand-in for each namespace of ``planned`` (``{name: its dry-run object}``)."""
        if not planned:
            return
        denied = self._cannot_delete()
        if denied:
            self.missing.update((real, denied) for real in planned)
            return
        created = []
        for real, name, obj, error in self.map(self._create, sorted(planned.items())):
            if obj is None:
                self.missing[real] = "no stand-in namespace to check it in: %s" % error
                continue
            self.by_real[real] = (name, (obj.get("metadata") or {}).get("uid"))
            created.append((real, obj))
        if created:
            self._check_selectors(planned, created)
            self._sweep(seconds(created[0][1]["metadata"].get("creationTimestamp")))

    def _cannot_delete(self):
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"verb": "delete", "resource": "namespaces"}}}
        try:
            answer = self.client.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review)
        except ApiError as e:
            return "no stand-in namespace to check it in: the rights to delete one could not be checked (%s)" % e.describe()
        if not (answer.get("status") or {}).get("allowed"):
            return "no stand-in namespace to check it in: check mode needs the rights to create and delete namespaces"
        return None

    def _create(self, item):
        """``(namespace, stand-in name, its object or None, the error)``."""
        real, planned = item
        name = STANDIN_PREFIX + binascii.hexlify(os.urandom(4)).decode()
        try:
            return real, name, self.client.request("POST", _NAMESPACES, body=standin_body(name, real, planned)), None
        except ApiError as e:
            return real, name, None, e.describe()

    def _check_selectors(self, planned, created):
        selectors = []
        for kind, plural, where in _SELECTING:
            try:
                for obj in self.client.list(_ADMISSION + plural):
                    selectors.extend(namespace_selectors(kind, where, obj))
            except ApiError as e:
                if not e.is_not_found:
                    self.warnings.append("check mode could not read the %ss (%s): one whose namespaceSelector tells a "
                                         "stand-in namespace from the namespace it stands in for would go unseen"
                                         % (kind, e.describe()))
        for real, obj in created:
            real_labels = dict(((planned[real].get("metadata") or {}).get("labels") or {}), **{NAME_LABEL: real})
            found = diverging(selectors, real_labels, (obj.get("metadata") or {}).get("labels") or {})
            if found:
                self.missing[real] = ("no stand-in namespace answers for it: %s selects namespaces by labels the stand-in "
                                      "cannot carry (its name)" % ", ".join(found[:5]))

    def _sweep(self, now):
        try:
            old = stale(self.client.list(_NAMESPACES, label_selector=STANDIN_LABEL), now)
        except ApiError:
            return
        for name in old:
            try:
                self.client.delete("%s/%s" % (_NAMESPACES, name))
            except ApiError:
                continue

    def target(self, d):
        """``(path, manifest, stand-in name)`` to dry-run desired ``d`` in its namespace's stand-in, or None."""
        if d.oid.namespace in self.missing:
            return None
        found = self.by_real.get(d.oid.namespace)
        if found is None:
            return None
        manifest = dict(d.manifest)
        manifest["metadata"] = dict(manifest.get("metadata") or {}, namespace=found[0])
        return d.info.object_path(found[0], d.oid.name), manifest, found[0]

    def reason(self, namespace):
        return self.missing.get(namespace)

    def close(self, timeout=GONE_TIMEOUT, clock=time.time, sleep=time.sleep):
        """Delete every stand-in and wait (up to ``timeout``) until they are gone; warnings for those still there."""
        pending = []
        for real, (name, uid) in sorted(self.by_real.items()):
            try:
                self.client.delete("%s/%s" % (_NAMESPACES, name), preconditions={"uid": uid} if uid else None)
                pending.append(name)
            except ApiError as e:
                if not e.is_not_found:
                    self.warnings.append("check mode could not delete its stand-in namespace %s (for %s): %s; delete it "
                                         "by hand, or a later check run will" % (name, real, e.describe()))
        self.by_real = {}
        deadline = clock() + timeout
        while pending:
            pending = [n for n in pending if self.client.get_or_none("%s/%s" % (_NAMESPACES, n)) is not None]
            if not pending or clock() > deadline:
                break
            sleep(self.poll_interval)
        for name in pending:
            self.warnings.append("check mode's stand-in namespace %s was deleted and is still terminating" % name)
        return self.warnings
