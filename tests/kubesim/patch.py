"""JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch."""

import copy

from .errors import ApiError, bad_request
from .fields import item_key
from .util import deep


def merge_patch(target, patch):
    """Apply an RFC 7386 merge patch. The result shares the parts of ``target`` the patch leaves alone
    (``target`` itself is not modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f'the server rejected our request due to an error in our request: invalid path "{path}"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    cur = doc
    for p in parts:
        if isinstance(cur, list):
            cur = cur[int(p)]
        elif isinstance(cur, dict):
            cur = cur[p]
        else:
            raise KeyError(p)
    return cur


def _json_patch_op(doc, op):
    kind = op.get("op")
    parts = _pointer(op.get("path", ""))
    if kind == "test":
        if _walk(doc, parts) != op.get("value"):
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: testing value {op.get('path')} failed")
        return doc
    if kind in ("move", "copy"):
        src = _pointer(op.get("from", ""))
        value = copy.deepcopy(_walk(doc, src))
        if kind == "move":
            doc = _json_patch_op(doc, {"op": "remove", "path": op["from"]})
        return _json_patch_op(doc, {"op": "add", "path": op["path"], "value": value})
    if not parts:
        return copy.deepcopy(op.get("value")) if kind in ("add", "replace") else None
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if kind == "add":
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(op["value"]))
        else:
            parent[last] = copy.deepcopy(op["value"])
    elif kind == "remove":
        del parent[int(last) if isinstance(parent, list) else last]
    elif kind == "replace":
        if isinstance(parent, list):
            parent[int(last)] = copy.deepcopy(op["value"])
        else:
            if last not in parent:
                raise KeyError(last)
            parent[last] = copy.deepcopy(op["value"])
    else:
        raise bad_request(f"Unexpected kind: {kind}")
    return doc


def json_patch(target, ops):
    """Apply an RFC 6902 JSON patch (to a copy of ``target``, a JSON value); errors map to the real server's 422/500 answers."""
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = deep(target)
    for op in ops:
        try:
            doc = _json_patch_op(doc, op)
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {op.get('op')} operation "
                           f"does not apply: doc is missing path: \"{op.get('path')}\": missing value") from exc
    return doc


def strategic_merge_patch(target, patch, ctx):
    """Strategic merge patch: maps merge, lists with a merge key merge by key, other lists replace.

    Supports ``$patch: replace|delete`` in maps and list items, ``$deleteFromPrimitiveList/<field>``,
    and ignores ``$setElementOrder`` / ``$retainKeys``. The result shares the parts of ``target`` the
    patch leaves alone (``target`` itself is not modified).
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            out[field] = [x for x in out.get(field) or [] if x not in v]
            continue
        if v is None or (isinstance(v, dict) and v.get("$patch") == "delete"):
            out.pop(k, None)
        elif isinstance(v, dict) and not ctx.child(k).map_atomic():
            out[k] = strategic_merge_patch(out.get(k), v, ctx.child(k))
        elif isinstance(v, list):
            out[k] = _smp_list(out.get(k), v, ctx.child(k))
        else:
            out[k] = copy.deepcopy(v)
    return out


def _smp_list(live, patch, ctx):
    lt, keys = ctx.list_type()
    live = live if isinstance(live, list) else []
    if lt == "set":
        return live + [x for x in patch if x not in live]
    if lt != "map" or any(not isinstance(i, dict) for i in patch):
        if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
            return [i for i in patch if not (isinstance(i, dict) and "$patch" in i)]
        return copy.deepcopy(patch)
    out = list(live)
    index = {item_key(i, keys): n for n, i in enumerate(out)}
    for item in patch:
        if item.get("$patch") == "replace":
            return [i for i in patch if "$patch" not in i]
        key = item_key(item, keys)
        if item.get("$patch") == "delete":
            out = [i for i in out if item_key(i, keys) != key]
            index = {item_key(i, keys): n for n, i in enumerate(out)}
        elif key in index:
            out[index[key]] = strategic_merge_patch(out[index[key]], item, ctx.item())
        else:
            index[key] = len(out)
            out.append(strategic_merge_patch({}, item, ctx.item()))
    return out
