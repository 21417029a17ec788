# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fieldsV1`` trees (``metadata.managedFields``): union, difference, paths, and an object without a tree's
fields. Pure, no I/O. A tree maps ``f:<field>``, ``k:<key fields as JSON>`` (an item of a map list) and
``v:<value as JSON>`` (an item of a set list) to subtrees; ``.`` marks a node that is itself a member; an
empty subtree is a field owned as a whole."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


def union(a, b):
    """Union of two ``fieldsV1`` trees."""
    out = dict(a or {})
    for k, v in (b or {}).items():
        out[k] = union(out.get(k), v) if isinstance(v, dict) and v else (out.get(k) if k in out else v)
    return out


def segment(key):
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
        path = prefix + segment(key)
        children = [k for k in (sub or {}) if k != "."]
        out.extend(paths(sub, path) if children else [path])
    return [p.lstrip(".") for p in out] if not prefix else out


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


def matches(item, key):
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
                out = [i for i in out if not matches(i, value)]
            elif kind == "k" and isinstance(value, dict):
                out = [strip(i, sub) if matches(i, value) else i for i in out]
        return out
    return obj
