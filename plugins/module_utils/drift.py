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
  subresources -- are left alone: they are not drift.

The checksum annotation says whether git changed; this module says whether the cluster did.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

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


def union(a, b):
    """Union of two ``fieldsV1`` trees."""
    out = dict(a or {})
    for k, v in (b or {}).items():
        out[k] = union(out.get(k), v) if isinstance(v, dict) and v else (out.get(k) if k in out else v)
    return out


def _segment(key):
    """``f:name`` -> ``name``; ``k:{"name":"x"}`` -> ``[name=x]``; ``v:...`` -> ``[...]``."""
    kind, _sep, rest = key.partition(":")
    if kind == "f":
        return "." + rest
    if kind == "k":
        try:
            return "[%s]" % ",".join("%s=%s" % (k, v) for k, v in sorted(json.loads(rest).items()))
        except (ValueError, AttributeError):
            return "[%s]" % rest
    return "[%s]" % rest


def paths(fields, prefix=""):
    """The leaf paths of a ``fieldsV1`` tree, e.g. ``metadata.labels.team``, ``spec.containers[name=app].image``."""
    out = []
    for key, sub in sorted((fields or {}).items()):
        if key == ".":
            continue
        path = prefix + _segment(key)
        children = [k for k in (sub or {}) if k != "."]
        out.extend(paths(sub, path) if children else [path])
    return [p.lstrip(".") for p in out] if not prefix else out


def _wanted(manifest, prefix=()):
    """Field paths (tuples of names) a manifest sets, down to lists and leaves (maps only)."""
    out = []
    for key, value in manifest.items():
        if value is None or (not prefix and key in ("apiVersion", "kind", "status")):
            continue
        if prefix == ("metadata",) and key in ("name", "namespace", "generateName"):
            continue
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            out.extend(_wanted(value, path))
        else:
            out.append(path)
    return out


_ABSENT = object()


def _unowned(manifest, node, prefix=(), in_item=False):
    """The paths of :func:`_wanted` (same order) that the ``fieldsV1`` tree ``node`` does not hold:
    not in it, and not below a field owned as a whole (an atomic map, or an object whose schema
    preserves unknown fields: the server records no children then). One walk of both trees. An item of a
    list of mappings is walked when :func:`_item_node` finds its entry (a ``caBundle`` of a webhook, an
    ``image`` of a container that another manager took); an empty list or map inside it the server records no
    field for."""
    out = []
    for key, value in manifest.items():
        if value is None or (not prefix and key in ("apiVersion", "kind", "status")):
            continue
        if prefix == ("metadata",) and key in ("name", "namespace", "generateName"):
            continue
        path = (*prefix, key)
        sub = node.get("f:" + key, _ABSENT) if isinstance(node, dict) else _ABSENT
        if sub is _ABSENT and in_item and (value == [] or value == {}):  # the server records no field for it
            continue
        if sub is _ABSENT:  # not owned: every field under it is lost
            out.extend(_wanted(value, path) if isinstance(value, dict) and value else [path])
        elif sub and isinstance(value, dict) and value:
            out.extend(_unowned(value, sub, path, in_item))
        elif sub and isinstance(value, list):
            for item in value:
                label, item_node = _item_node(sub, item)
                if item_node:
                    out.extend(_unowned(item, item_node, (*prefix, key + label), True))
        # else: a leaf we own, or a field owned as a whole (empty set in the tree)
    return out


def _item_node(node, item):
    """``(label, fieldsV1 node)`` of the one ``k:`` entry of a list's ``node`` that keys ``item`` (a mapping): every
    key field the item sets has the entry's value, and it sets at least one (a key field the server defaults,
    like a port's ``protocol``, may be missing). ``(None, None)`` when none or several match: the item is then
    left alone, never reported (a field inside it someone else took is seen only when it is matched)."""
    if not isinstance(item, dict):
        return None, None
    found = []
    for k, sub in node.items():
        if not k.startswith("k:"):
            continue
        try:
            key = json.loads(k[2:])
        except ValueError:
            continue
        if isinstance(key, dict) and any(f in item for f in key) and all(
                item[f] == v and type(item[f]) is type(v) for f, v in key.items() if f in item):
            found.append((_segment(k), sub))
    return found[0] if len(found) == 1 else (None, None)


def lost(manifest, live, field_manager, found=None):
    """Paths of the manifest our manager no longer owns (someone changed or removed them), or
    None if the object has no Apply entry of ours at all. ``found``: the object's :func:`entries`."""
    ours = [e for e in (entries(live) if found is None else found) if is_ours(e, field_manager)]
    if not ours:
        return None
    fields = ours[0].get("fieldsV1") or {}
    if len(ours) > 1 or not isinstance(fields, dict):
        fields = {}
        for e in ours:
            fields = union(fields, e.get("fieldsV1") or {})
    return [".".join(p) for p in _unowned(manifest, fields)]


def drift(manifest, live, field_manager, patterns, take_over=True):
    """What of ``live`` an apply of ``manifest`` would change: ``[{"manager", "operation", "fields"}]``
    (empty: nothing). ``take_over=False`` (the merge policy): others' fields are not drift."""
    found = []
    live_entries = entries(live)
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


def subtract(a, b):
    """The ``fieldsV1`` tree of what ``a`` holds and ``b`` does not. A node ``b`` holds (its ``.``, or any
    field below it) is never whole in the result: only the fields below it that ``b`` lacks are."""
    out = {}
    for key, sub in (a or {}).items():
        if key not in (b or {}):
            out[key] = sub
        elif key != "." and isinstance(sub, dict) and sub:
            rest = subtract(sub, b[key])
            rest.pop(".", None)
            if rest:
                out[key] = rest
    return out


def _matches(item, key):
    return isinstance(item, dict) and all(item.get(k) == v for k, v in key.items())


def strip(obj, fields):
    """Copy of ``obj`` without the fields of the ``fieldsV1`` tree ``fields`` (a field, map key, list item by
    its key or set value: removed whole when the tree holds it as a leaf or holds its ``.``)."""
    if not isinstance(fields, dict) or not fields:
        return obj
    if isinstance(obj, dict):
        out = dict(obj)
        for key, sub in fields.items():
            kind, _sep, name = key.partition(":")
            if kind != "f" or name not in out:
                continue
            if not sub or "." in sub:
                del out[name]
            else:
                out[name] = strip(out[name], sub)
        return out
    if isinstance(obj, list):
        out = list(obj)
        for key, sub in fields.items():
            kind, _sep, rest = key.partition(":")
            try:
                value = json.loads(rest)
            except ValueError:
                continue
            if kind == "v":
                out = [i for i in out if i != value]
            elif kind == "k" and isinstance(value, dict) and (not sub or "." in sub):  # the item whole
                out = [i for i in out if not _matches(i, value)]
            elif kind == "k" and isinstance(value, dict):
                out = [strip(i, sub) if _matches(i, value) else i for i in out]
        return out
    return obj


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
