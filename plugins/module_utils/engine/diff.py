# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift check, Secret redaction and per-object diffs. Pure functions, no I/O.

The drift check backs the no-op fast path: an object whose live copy already carries the desired
checksum *and* contains every field we would apply, with the same value, is not written. When in
doubt (lists whose order differs, values the server normalises) it answers "drifted", so the
object is simply applied again: correctness over speed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

try:
    import yaml

    class _Dumper(yaml.SafeDumper):
        """YAML as people write manifests: block style, multi-line strings as literal blocks."""

    def _text(dumper, value):
        style = "|" if "\n" in value.strip("\n") else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _text)
    HAS_YAML = True
except ImportError:  # pragma: no cover - a module process without PyYAML shows the diff as JSON text
    HAS_YAML = False

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    CHECKSUM_ANNOTATION,
    OWNER_ANNOTATION,
    RECORD_NAMESPACE_ANNOTATION,
)

REDACTED = "<redacted>"
REDACTED_CHANGED = "<redacted, changed>"
#: the before side of a changed key: it must differ from the after side, or a rendered diff hides the change
REDACTED_OLD = "<redacted, old value>"
#: metadata dropped from diffs: noise that changes on every write.
DIFF_NOISE = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid", "selfLink")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: our own bookkeeping annotations (not what git says, the checksum changes with every change): left out of the
#: diffs people read
OUR_STAMPS = (CHECKSUM_ANNOTATION, OWNER_ANNOTATION, RECORD_NAMESPACE_ANNOTATION)


def _same_scalar(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return a == b


def _list_key(items):
    """Merge key for a list of mappings if every item has a unique ``name`` (containers, ports…)."""
    for key in ("name", "containerPort", "port", "type"):
        if items and all(isinstance(i, dict) and key in i for i in items):
            values = [i[key] for i in items]
            if len(set(map(repr, values))) == len(values):
                return key
    return None


def contains(desired, live):
    """True if every field of ``desired`` is present in ``live`` with the same value.

    ``None`` in desired matches a missing or null field. Lists must have the same length; lists of
    mappings are matched by a merge key (``name``, ``port``…) when each item has a unique one,
    else position by position.
    """
    if desired is None:
        return live is None
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return False
        for k, v in desired.items():
            if v is None:
                if live.get(k) is not None:
                    return False
                continue
            if live.get(k) is None:
                if v == {} or v == []:  # the server drops empty maps/lists (or sends null): same meaning
                    continue
                return False
            if not contains(v, live[k]):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return False
        key = _list_key(desired)
        if key is not None and _list_key(live) == key:
            by_key = dict((repr(i.get(key)), i) for i in live)
            return all(repr(d[key]) in by_key and contains(d, by_key[repr(d[key])]) for d in desired)
        return all(contains(d, lv) for d, lv in zip(desired, live))
    return _same_scalar(desired, live)


def in_sync(desired, live, checksum_annotation):
    """The no-op test: live carries the desired checksum and nothing we apply drifted."""
    if live is None:
        return False
    want = ((desired.get("metadata") or {}).get("annotations") or {}).get(checksum_annotation)
    have = ((live.get("metadata") or {}).get("annotations") or {}).get(checksum_annotation)
    return want is not None and want == have and contains(desired, live)


def redact_secret(obj, compare_to=None, changed=REDACTED_CHANGED):
    """Copy of a Secret with every ``data``/``stringData`` value replaced by a marker.

    With ``compare_to`` (the other side of a diff), changed, added and removed keys are marked
    ``changed`` so a diff still shows *which* keys changed, never their values (:func:`object_diff`
    marks the two sides differently, so the changed line appears in the rendered diff). The kubectl
    last-applied annotation (which would hold the data) is redacted too.
    """
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    other = (compare_to or {}) if compare_to is not None else None
    for field in ("data", "stringData"):
        values = out.get(field)
        if not isinstance(values, dict):
            continue
        others = (other.get(field) or {}) if other is not None else None
        redacted = {}
        for k, v in values.items():
            if others is not None and (k not in others or others[k] != v):
                redacted[k] = changed
            else:
                redacted[k] = REDACTED
        out[field] = redacted
    annotations = (out.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        annotations[LAST_APPLIED] = REDACTED
    return out


def clean(obj):
    """Copy of a live object without the metadata noise (for diffs and results)."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in DIFF_NOISE:
            meta.pop(key, None)
    return out


def summary(before, after):
    """One line for a created (``+``) or deleted (``-``) object: what it is and how big, so a diff stays
    readable at thousands of objects (the whole body with ``-vv``)."""
    obj = after if after is not None else before
    meta = obj.get("metadata") or {}
    size = len(json.dumps(obj, separators=(",", ":")))
    where = "%s/%s" % (meta["namespace"], meta.get("name")) if meta.get("namespace") else meta.get("name")
    sign, what = ("+", "created") if after is not None else ("-", "deleted")
    amount = "%d bytes" % size if size < 10240 else "%.1f KiB" % (size / 1024.0)
    return "%s %s %s (%s, %s)\n" % (sign, obj.get("kind"), where, what, amount)


def object_diff(before, after, secret=False, full=True):
    """``{"before": ..., "after": ...}`` for Ansible's diff output; Secret values redacted.

    Changed objects show both sides (Ansible prints only the changed lines and their context); a
    created or deleted object is summarised unless ``full``.
    """
    before, after = clean(before), clean(after)
    if secret:
        before, after = redact_secret(before, after, REDACTED_OLD), redact_secret(after, before)
    if not full and (before is None) != (after is None):
        return {"prepared": summary(before, after)}
    return {"before": before if before is not None else {}, "after": after if after is not None else {}}


def _unstamped(obj):
    """Copy of ``obj`` without :data:`OUR_STAMPS` (and without annotations if nothing else is left)."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or not any(k in annotations for k in OUR_STAMPS):
        return obj
    out = dict(obj, metadata=dict(meta, annotations=dict((k, v) for k, v in annotations.items() if k not in OUR_STAMPS)))
    if not out["metadata"]["annotations"]:
        del out["metadata"]["annotations"]
    return out


#: keys shown first (in this order) at the top of an object and in its metadata; ``status`` comes last
TOP_FIRST = ("apiVersion", "kind", "metadata")
METADATA_FIRST = ("name", "namespace", "labels", "annotations")


def _sorted(value, first=()):
    """``value`` with its mappings' keys in one order (``first``, then sorted), whatever order each side came in."""
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    if not isinstance(value, dict):
        return value
    keys = [k for k in first if k in value] + sorted((k for k in value if k not in first), key=str)
    if first is TOP_FIRST and "status" in value:
        keys.remove("status")
        keys.append("status")
    return dict((k, _sorted(value[k], METADATA_FIRST if first is TOP_FIRST and k == "metadata" else ())) for k in keys)


def as_text(obj):
    """``obj`` (an object of a diff, or ``{}`` for none) as YAML text, ``""`` for none."""
    if not obj:
        return ""
    obj = _sorted(_unstamped(obj), TOP_FIRST)
    if HAS_YAML:
        return yaml.dump(obj, Dumper=_Dumper, default_flow_style=False, sort_keys=False, allow_unicode=True,
                         width=1 << 20)
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def readable(diffs):
    """The diffs of a run as Ansible prints them best: each side of a changed object as YAML text (Ansible
    shows two texts as a unified diff, two mappings as JSON), our own annotations left out."""
    out = []
    for d in diffs:
        if isinstance(d, dict) and "before" in d and "after" in d:
            d = dict(d, before=as_text(d["before"]), after=as_text(d["after"]))
        out.append(d)
    return out
