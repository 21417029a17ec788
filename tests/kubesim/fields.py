"""Field sets (managedFields ``fieldsV1``), comparison, apply merge and pruning.

A field set is a Python ``set`` of paths; a path is a tuple of path elements as they appear in
``fieldsV1``: ``f:<name>``, ``k:<json object of key fields>``, ``v:<json value>``.
"""

import json
from json.encoder import encode_basestring_ascii as _json_str

from .util import deep

# Fields never tracked in managedFields.
_IGNORED = {("f:apiVersion",), ("f:kind",)} | {("f:metadata", f"f:{n}") for n in (
    "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
    "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")}


def item_key(item, keys):
    """The ``k:`` element for an associative-list item (missing protocol defaults to TCP)."""
    values = {}
    plain = True
    for k in keys:
        v = item.get(k) if isinstance(item, dict) else None
        if v is None and k == "protocol":
            v = "TCP"
        if v is not None:
            values[k] = v
            plain = plain and (type(v) is str or type(v) is int)
    if plain:  # what json.dumps(values, sort_keys=True, separators=(",", ":")) writes, without its set-up
        return "k:{" + ",".join(_json_str(k) + ":" + (_json_str(values[k]) if type(values[k]) is str else int.__repr__(values[k]))
                                for k in sorted(values)) + "}"
    return "k:" + json.dumps(values, sort_keys=True, separators=(",", ":"))


def value_key(value):
    """The ``v:`` element for a set-list item."""
    return "v:" + json.dumps(value, separators=(",", ":"))


def _children(value, ctx, nulls=False):
    """Yield (element, child value, child ctx) for a map or list value; a map's null members only with ``nulls``
    (an applied configuration: server-side apply owns a field set to null like any other value)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if v is not None or nulls:
                yield "f:" + k, v, ctx.child(k)
    elif isinstance(value, list):
        lt, keys = ctx.list_type()
        ictx = ctx.item()
        for item in value:
            yield (item_key(item, keys) if lt == "map" else value_key(item)), item, ictx


def _is_granular(value, ctx):
    if isinstance(value, dict):
        return not ctx.map_atomic()
    if isinstance(value, list):
        return ctx.list_type()[0] != "atomic"
    return False


def collect(value, ctx, path=(), whole=False, out=None):
    """Paths of a value: for apply (``whole`` False) leaves (``null`` too), list items and untyped maps; with
    ``whole`` True (an added subtree in an Update) every map and list node as well.

    As structured-merge-diff records an applied configuration: an empty map (``{}``, a struct or a map)
    and an empty atomic list are leaves, an empty set or map list records nothing (only its items would)."""
    out = set() if out is None else out
    if not _is_granular(value, ctx) or (isinstance(value, dict) and not value):
        if path:
            out.add(path)
        return out
    if path and (whole or (isinstance(value, dict) and ctx.records_self())):
        out.add(path)
    is_list = isinstance(value, list)
    nulls = not whole
    for elem, child, cctx in _children(value, ctx, nulls):
        cpath = (*path, elem)
        if is_list:
            out.add(cpath)
            if isinstance(child, dict) and child and not ctx.items_atomic():
                for e2, c2, ctx2 in _children(child, cctx, nulls):
                    collect(c2, ctx2, (*cpath, e2), whole, out)
        else:
            collect(child, cctx, cpath, whole, out)
    return out


def compare(old, new, ctx, path=(), changed=None, removed=None):
    """Paths added or modified (``changed``) and removed between two values, Update semantics."""
    changed = set() if changed is None else changed
    removed = set() if removed is None else removed
    if old is not None and old == new:  # nothing added, modified or removed below equal values
        return changed, removed
    if old is None:
        if new is not None:
            collect(new, ctx, path, True, changed)
        return changed, removed
    if new is None:
        collect(old, ctx, path, True, removed)
        return changed, removed
    granular = _is_granular(new, ctx) and type(old) is type(new)
    if not granular:
        if old != new and path:
            changed.add(path)
        return changed, removed
    olds = {e: (c, x) for e, c, x in _children(old, ctx)}
    news = {e: (c, x) for e, c, x in _children(new, ctx)}
    is_list = isinstance(new, list)
    for elem, (child, cctx) in news.items():
        cpath = (*path, elem)
        prev = olds.get(elem, (None, None))[0]
        if is_list and (prev is None or ctx.items_atomic()):
            if prev != child:
                changed.add(cpath)
            if isinstance(child, dict) and prev is None and not ctx.items_atomic():
                for e2, c2, ctx2 in _children(child, cctx):
                    collect(c2, ctx2, (*cpath, e2), True, changed)
        elif is_list and isinstance(child, dict):
            pmap = {e: c for e, c, _ in _children(prev, cctx)} if isinstance(prev, dict) else {}
            for e2, c2, ctx2 in _children(child, cctx):
                compare(pmap.get(e2), c2, ctx2, (*cpath, e2), changed, removed)
            for e2, c2, ctx2 in _children(prev, cctx) if isinstance(prev, dict) else ():
                if child.get(e2[2:]) is None:
                    collect(c2, ctx2, (*cpath, e2), True, removed)
        elif not is_list:
            compare(prev, child, cctx, cpath, changed, removed)
    for elem, (child, cctx) in olds.items():
        if elem not in news:
            removed.add((*path, elem))
            if not is_list or (isinstance(child, dict) and not ctx.items_atomic()):
                collect(child, cctx, (*path, elem), True, removed)
    return changed, removed


def strip(paths, drop_status=False):
    """Remove ignored fields (identity/bookkeeping metadata and optionally status) from a set."""
    out = set()
    for p in paths:
        if p in _IGNORED or p[:2] in _IGNORED or p == ("f:metadata",):
            continue
        if drop_status and p[0] == "f:status":
            continue
        out.add(p)
    return out


def merge(live, config, ctx):
    """Server-side apply merge of an applied configuration into the live value (a new value; the
    arguments are not modified and share nothing with the result)."""
    if config is None:
        return deep(live)
    if live is None or not _is_granular(config, ctx) or type(live) is not type(config):
        return deep(config)
    if isinstance(config, dict):
        out = dict(live)
        merged = set()
        for k, v in config.items():
            if v is None:  # null replaces a value; a granular map or list keeps what others hold in it
                if not _is_granular(live.get(k), ctx.child(k)):
                    out[k] = None
                continue
            out[k] = merge(live.get(k), v, ctx.child(k))
            merged.add(k)
        for k, v in out.items():
            if k not in merged:
                out[k] = deep(v)
        return out
    lt, keys = ctx.list_type()
    ictx = ctx.item()
    keyf = (lambda i: item_key(i, keys)) if lt == "map" else value_key
    cfg = {keyf(i): i for i in config}
    out, seen = [], set()
    for item in live:
        k = keyf(item)
        seen.add(k)
        out.append(merge(item, cfg[k], ictx) if k in cfg else deep(item))
    out.extend(deep(i) for i in config if keyf(i) not in seen)
    return out


def remove_path(obj, path, ctx):
    """Delete the field/item named by ``path`` from ``obj`` (in place); drop maps it empties."""
    elem = path[0]
    if isinstance(obj, dict) and elem.startswith("f:"):
        name = elem[2:]
        if name not in obj:
            return
        if len(path) == 1:
            del obj[name]
            return
        remove_path(obj[name], path[1:], ctx.child(name))
        if obj[name] in ({}, []) or obj[name] is None:
            del obj[name]
    elif isinstance(obj, list):
        lt, keys = ctx.list_type()
        for i, item in enumerate(obj):
            k = item_key(item, keys) if lt == "map" else value_key(item)
            if k == elem:
                if len(path) == 1:
                    del obj[i]
                else:
                    remove_path(item, path[1:], ctx.item())
                return


def to_fields_v1(paths):
    """Encode a path set as the nested ``fieldsV1`` dict (with ``.`` for members that have children)."""
    tree = {}
    members = set()  # ids of the nodes of member paths
    for p in sorted(paths):
        node = tree
        for e in p:
            child = node.get(e)
            if child is None:
                if e <= ".":  # an element sorting before "." (not f:/k:/v:): keep the general encoder's order
                    return _to_fields_v1_sorted(paths)
                if not node and id(node) in members:
                    node["."] = {}  # sorts before every f:/k:/v: element
                child = node[e] = {}
            node = child
        members.add(id(node))
    return tree


def _to_fields_v1_sorted(paths):
    tree = {}
    for p in sorted(paths):
        node = tree
        for e in p:
            node = node.setdefault(e, {})
    for p in paths:
        node = tree
        for e in p:
            node = node[e]
        if node and "." not in node:
            node["."] = {}
    return _sorted(tree)


def _sorted(node):
    return {k: _sorted(node[k]) for k in sorted(node)}


def from_fields_v1(tree, prefix=()):
    """Decode a ``fieldsV1`` dict into a path set."""
    out = set()
    for k, sub in (tree or {}).items():
        if k == ".":
            out.add(prefix)
            continue
        p = (*prefix, k)
        if sub:
            out |= from_fields_v1(sub, p)
        else:
            out.add(p)
    return out


def format_path(path):
    """Human form used in apply conflict messages, e.g. ``.spec.containers[name="web"].image``."""
    out = ""
    for e in path:
        if e.startswith("f:"):
            out += "." + e[2:]
        elif e.startswith("k:"):
            keys = json.loads(e[2:])
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
        else:
            out += "[" + e[2:] + "]"
    return out


def is_key_field(path):
    """True if ``path`` names a key field of an associative-list item (kept while the item stays)."""
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    try:
        return path[-1][2:] in json.loads(path[-2][2:])
    except ValueError:
        return False


def owned_within(path, others):
    """True if ``path`` itself or one of its descendants is in ``others``."""
    n = len(path)
    return any(o[:n] == path for o in others)
