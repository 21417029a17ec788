# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift decided from field ownership, as the API server records it. Pure, no I/O.

Values are never compared: the server stores many of them in a form of its own (``2000m`` comes back
as ``"2"``, ``minReadySeconds: 0`` is dropped), so comparing what git says with what the server
shows reports drift that an apply would not change. Ownership (``metadata.managedFields``) says
exactly what an apply would change:

* a field someone else's tool wrote (``kubectl edit``, ``label``, ``patch``, client-side ``apply``,
  a Python client, ...) is owned by that tool's manager: the next apply **takes it over** (their
  entry becomes ours, guarded by ``resourceVersion``), so whatever git does not say disappears and
  what git says is written back (fluxcd/pkg ssa does the same);
* a field of the manifest that our manager no longer owns was changed or removed by someone: an
  apply writes it again;
* fields owned by any other manager -- controllers, autoscalers, admission defaults, status,
  subresources -- are left alone: they are not drift;
* empty values are values: ``null`` and ``{}`` are recorded like any other, an empty set or map list
  (``[]``) records nothing, so its absence is drift only when someone else owns the field whole
  (:mod:`.owned`).

The checksum annotation says whether git changed; this module says whether the cluster did.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.engine.fieldsv1 import paths, strip, subtract, union
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.owned import Walk, wanted

__all__ = ["DEFAULT_TAKEOVER", "compile_patterns", "drift", "entries", "foreign_tool", "is_ours", "lost", "paths", "strip",
           "subtract", "taken_only", "takeover_patch", "to_take", "union", "wanted"]

#: managers whose fields a sync takes over (people's tools), as ``NAME``, ``PREFIX*``, either with
#: ``:Update`` or ``:Apply`` to match one operation only. ``kubectl*`` covers kubectl's client-side
#: apply, create, edit, label, annotate, patch, replace, set, scale, rollout and its server-side
#: apply; ``before-first-apply`` owns what existed before the first server-side apply;
#: ``OpenAPI-Generator`` is the Python client's (and kubernetes.core's ``k8s`` module's) default.
DEFAULT_TAKEOVER = ("kubectl*", "before-first-apply", "OpenAPI-Generator")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class Pattern:
    """One ``takeover_managers`` entry: ``NAME``, ``PREFIX*``, optionally ``:Update`` / ``:Apply``."""

    def __init__(self, text):
        if not isinstance(text, str) or not text.strip():
            raise ValueError("takeover_managers entries must be non-empty strings, got %r" % (text,))
        name, _sep, operation = text.strip().partition(":")
        if operation and operation not in ("Update", "Apply"):
            raise ValueError("takeover_managers entry %r: the operation after ':' must be Update or Apply" % text)
        self.prefix = name.endswith("*")
        self.name = name.rstrip("*")
        self.operation = operation or None

    def matches(self, entry):
        manager = entry.get("manager") or ""
        if self.operation and entry.get("operation") != self.operation:
            return False
        return manager.startswith(self.name) if self.prefix else manager == self.name


def compile_patterns(texts):
    """``[Pattern]`` from ``takeover_managers`` (None: :data:`DEFAULT_TAKEOVER`). Raises ValueError."""
    return [Pattern(t) for t in (DEFAULT_TAKEOVER if texts is None else texts)]


def entries(live):
    return [e for e in ((live.get("metadata") or {}).get("managedFields") or []) if isinstance(e, dict)]


def is_ours(entry, field_manager):
    return entry.get("manager") == field_manager and entry.get("operation") == "Apply"


def to_take(live, field_manager, patterns, found=None):
    """The managedFields entries a sync takes over: people's tools, and our own non-Apply entries.
    ``found``: the object's :func:`entries`, when the caller has them already."""
    out = []
    for e in entries(live) if found is None else found:
        if e.get("subresource") == "status" or is_ours(e, field_manager):
            continue
        if e.get("manager") == field_manager or any(p.matches(e) for p in patterns):
            out.append(e)
    return out


def lost(manifest, live, field_manager, found=None):
    """Paths of the manifest our manager no longer owns (someone changed or removed them), or
    None if the object has no Apply entry of ours at all. ``found``: the object's :func:`entries`.

    The server records every applied value, ``null`` and an empty map (``{}``: a struct, a map) included, but an
    empty list only when it is atomic: a ``[]`` our tree lacks is lost only as :meth:`.owned.Walk.empty_list_lost` says."""
    found = entries(live) if found is None else found
    ours = [e for e in found if is_ours(e, field_manager)]
    if not ours:
        return None
    fields = ours[0].get("fieldsV1") or {}
    if len(ours) > 1 or not isinstance(fields, dict):
        fields = {}
        for e in ours:
            fields = union(fields, e.get("fieldsV1") or {})
    walk = Walk([e for e in found if not is_ours(e, field_manager)])
    return [".".join(p) for p in walk.unowned(manifest, fields)]


def drift(manifest, live, field_manager, patterns, take_over=True, found=None):
    """What of ``live`` an apply of ``manifest`` would change: ``[{"manager", "operation", "fields"}]``
    (empty: nothing). ``take_over=False`` (the merge policy): others' fields are not drift. ``found``: the
    object's :func:`entries`, when the caller has them already."""
    live_entries = entries(live) if found is None else found
    found = []
    if take_over:
        found.extend(_taken_report(e) for e in to_take(live, field_manager, patterns, live_entries))
    missing = lost(manifest, live, field_manager, live_entries)
    if missing is None:
        found.append({"manager": field_manager, "operation": "Apply", "fields": [], "reason": "not applied by us yet"})
    elif missing:
        found.append({"manager": field_manager, "operation": "Apply", "fields": missing,
                      "reason": "set in git, no longer ours (changed or removed by someone)"})
    return found


def takeover_patch(live, field_manager, patterns):
    """A JSON patch moving the entries :func:`to_take` finds to our Apply entry, guarded by the
    object's ``resourceVersion``; None if there is nothing to take over."""
    taken = to_take(live, field_manager, patterns)
    if not taken:
        return None
    keep, ours = [], None
    for e in entries(live):
        if any(e is t for t in taken):
            continue
        if is_ours(e, field_manager) and ours is None:
            ours = dict(e)
            continue
        keep.append(e)
    merged = dict(ours or {"manager": field_manager, "operation": "Apply", "fieldsType": "FieldsV1",
                           "apiVersion": taken[0].get("apiVersion") or live.get("apiVersion")})
    fields = merged.get("fieldsV1") or {}
    for e in taken:
        fields = union(fields, e.get("fieldsV1") or {})
    merged["fieldsV1"] = fields
    merged.pop("subresource", None)
    rv = (live.get("metadata") or {}).get("resourceVersion")
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/metadata/managedFields", "value": [*keep, merged]}]


def taken_only(obj, field_manager, patterns):
    """``(fieldsV1 tree, [drift entry])``: the fields of ``obj`` that only the managers a sync takes over own --
    what the takeover and apply of a real run remove (the server then defaults again what it defaults) --
    and those managers as :func:`drift` reports them. Used by check mode, whose dry-run apply cannot take over."""
    found = entries(obj)
    taken = to_take(obj, field_manager, patterns, found)
    if not taken:
        return {}, []
    theirs, kept = {}, {}
    for e in found:
        if any(e is t for t in taken):
            theirs = union(theirs, e.get("fieldsV1") or {})
        else:
            kept = union(kept, e.get("fieldsV1") or {})
    return subtract(theirs, kept), [_taken_report(e) for e in taken]


def _taken_report(entry):
    """A managedFields entry a sync takes over, as :func:`drift` reports it."""
    return {"manager": entry.get("manager"), "operation": entry.get("operation"),
            "fields": paths(entry.get("fieldsV1") or {})}


#: labels / annotations other deployment tools put on the objects they own
FOREIGN_TOOLS = (
    ("labels", "app.kubernetes.io/managed-by", "Helm", "Helm"),
    ("annotations", "meta.helm.sh/release-name", None, "Helm"),
    ("labels", "kustomize.toolkit.fluxcd.io/name", None, "Flux"),
    ("labels", "helm.toolkit.fluxcd.io/name", None, "Flux"),
    ("labels", "argocd.argoproj.io/instance", None, "Argo CD"),
    ("annotations", "argocd.argoproj.io/tracking-id", None, "Argo CD"),
)


def foreign_tool(obj):
    """The deployment tool (Helm, Flux, Argo CD) whose marks ``obj`` carries, with the release or app, or None."""
    meta = obj.get("metadata") or {}
    for field, key, value, tool in FOREIGN_TOOLS:
        found = (meta.get(field) or {}).get(key)
        if found and (value is None or found == value):
            name = (meta.get("annotations") or {}).get("meta.helm.sh/release-name") if tool == "Helm" else found
            return "%s (%s)" % (tool, name) if name and name != value else tool
    return None
