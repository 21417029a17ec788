# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What of a manifest our field manager no longer owns, as the API server records an apply. Pure, no I/O.

Server-side apply records every applied value in ``metadata.managedFields`` -- ``null`` and an empty map
(``{}``: ``emptyDir: {}``, ``securityContext: {}``, ``resources: {}``) included, as leaves -- except an empty
list that is a set or a map list (``x-kubernetes-list-type: set`` / ``map``, e.g. kube-prometheus's
``Prometheus.spec.enableFeatures: []``, a container's ``ports: []``): such a list records only its items, and
has none. An atomic ``[]`` (``args: []``) is a leaf. So a ``[]`` our tree lacks is not by itself lost; see
:meth:`Walk.empty_list_lost` (checked against kube-apiserver v1.36 by
``tests/conformance/test_empty_values.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.stacksync.k8s.plugins.module_utils.engine.fieldsv1 import segment

#: metadata the server never records in managedFields (identity, and what it sets itself)
UNTRACKED_METADATA = frozenset(("name", "namespace", "generateName", "uid", "resourceVersion", "generation",
                                "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
                                "selfLink"))
_TOP_UNTRACKED = frozenset(("apiVersion", "kind", "status"))
_ABSENT = object()


def tracked(prefix, key):
    """Whether the server records field ``key`` of the map at ``prefix`` (a tuple of names) when it is applied."""
    if not prefix:
        return key not in _TOP_UNTRACKED
    return prefix != ("metadata",) or key not in UNTRACKED_METADATA


def wanted(manifest, prefix=()):
    """Field paths (tuples of names) a manifest sets, down to lists and leaves (maps only); a field set to
    ``null`` is a leaf (server-side apply owns it like any other value)."""
    out = []
    for key, value in manifest.items():
        if not tracked(prefix, key):
            continue
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            out.extend(wanted(value, path))
        else:
            out.append(path)
    return out


class Walk:
    """One walk of a manifest and our ``fieldsV1`` tree: :meth:`unowned`. ``others``: the other managers'
    managedFields entries; ``trail``: the tree keys from the root, to find the same field in their trees."""

    def __init__(self, others):
        self.entries = [e["fieldsV1"] for e in others if isinstance(e.get("fieldsV1"), dict)]

    def unowned(self, manifest, node, prefix=(), trail=()):
        """The paths of :func:`wanted` (same order) that the ``fieldsV1`` tree ``node`` does not hold: not in it,
        and not below a field owned as a whole; an unrecorded ``[]`` only when :meth:`empty_list_lost`."""
        out = []
        top, meta = not prefix, prefix == ("metadata",)
        tree = node if isinstance(node, dict) else {}
        for key, value in manifest.items():
            if (top and key in _TOP_UNTRACKED) or (meta and key in UNTRACKED_METADATA):
                continue
            sub = tree.get("f:" + key, _ABSENT)
            if sub is _ABSENT and isinstance(value, list) and not value:
                if self.empty_list_lost((*trail, "f:" + key)):
                    out.append((*prefix, key))
            elif isinstance(value, dict) and value:
                if sub is _ABSENT or sub:  # else a map owned as a whole (atomic, or preserving unknown fields)
                    out.extend(self.unowned(value, None if sub is _ABSENT else sub, (*prefix, key), (*trail, "f:" + key)))
            elif sub is _ABSENT:  # a value, null, {} or a list our tree lacks: changed or removed by someone
                out.append((*prefix, key))
            elif sub and isinstance(value, list):
                out.extend(self.items(value, sub, (*prefix, key), (*trail, "f:" + key)))
            # else: a leaf we own, or a field owned as a whole (empty set in the tree)
        return out

    def items(self, value, sub, path, trail):
        """The lost fields of a granular list's items: those of the mappings :func:`_item_key` finds an entry for
        (a ``caBundle`` of a webhook, an ``image`` of a container another manager took), and the values of a set
        list our tree lacks when it holds others (someone removed them)."""
        out, values = [], None
        for item in value:
            if isinstance(item, dict):
                raw = _item_key(sub, item)
                if raw is not None and sub[raw]:
                    out.extend(self.unowned(item, sub[raw], (*path[:-1], path[-1] + segment(raw)), (*trail, raw)))
            elif item is not None:
                values = _set_values(sub) if values is None else values
                if values and not any(type(v) is type(item) and v == item for v in values):
                    out.append((*path[:-1], "%s[%s]" % (path[-1], json.dumps(item))))
        return out

    def empty_list_lost(self, trail):
        """A ``[]`` of git our tree lacks. The server records an empty list only when the list is atomic (a set or
        map list records its items, and has none), so the absence alone says nothing: it is lost when another
        manager owns the field as a whole (an atomic list someone set: an apply puts ``[]`` back). Items another
        manager added to a set or map list are theirs, an apply keeps them (people's tools are taken over). An
        empty list someone removed is not seen: to server-side apply a set or map list without items and no list
        are the same (it drops such a list itself when it removes the last item)."""
        for node in self.entries:
            for raw in trail:
                node = node.get(raw) if isinstance(node, dict) else None
            if node == {}:
                return True
        return False


def _set_values(node):
    """The decoded ``v:`` values of a list's tree node (a set list's items)."""
    out = []
    for k in node:
        if k.startswith("v:"):
            try:
                out.append(json.loads(k[2:]))
            except ValueError:
                continue
    return out


def _item_key(node, item):
    """The one ``k:`` entry of a list's ``node`` that keys ``item`` (a mapping): every
    key field the item sets has the entry's value, and it sets at least one (a key field the server defaults,
    like a port's ``protocol``, may be missing). None when none or several match: the item is then
    left alone, never reported (a field inside it someone else took is seen only when it is matched)."""
    found = []
    for k in node:
        if not k.startswith("k:"):
            continue
        try:
            key = json.loads(k[2:])
        except ValueError:
            continue
        if isinstance(key, dict) and any(f in item for f in key) and all(
                item[f] == v and type(item[f]) is type(v) for f, v in key.items() if f in item):
            found.append(k)
    return found[0] if len(found) == 1 else None
