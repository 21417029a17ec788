"""Fields a kind's schema does not declare, found as the real server finds them.

- Server-side apply: the applied configuration is converted to a typed value; an undeclared field is an
  error, answered ``500`` with ``failed to create typed patch object (...): <path>: field not declared in
  schema`` (structured-merge-diff paths: ``.spec.containers[name="c"].typo``). The real server's
  validator stops visiting a map at its first undeclared field, in Go's (random) map order, so which of
  several errors it reports varies; here maps are visited in document order.
- Other writes (create, update): the body is decoded into the Go type; undeclared fields are dropped,
  with a ``Warning: 299 - "unknown field \\"spec.x\\""`` header per field (``fieldValidation=Warn``, the
  default), silently (``Ignore``), or refused with 400 (``Strict``, what kubectl sends): ``strict decoding
  error: unknown field "spec.x", ...`` (paths with list indexes, in document order).

Built-in kinds are described by the ``kubernetes`` client's models (``openapi._model``); custom
resources by their CRD's structural schema (``x-kubernetes-preserve-unknown-fields`` stops the check).
Without a description (no client model, no schema) nothing is checked.
"""

import json
import re

from . import errors, openapi
from .fields import item_key

_LIST_RE = re.compile(r"^List\[(.+)\]$")
_DICT_RE = re.compile(r"^Dict\[str, (.+)\]$")
_FREE = object()  # any content (free-form object, scalar, int-or-string)


class _Model:
    """A client model: declared fields and their types."""

    def __init__(self, name):
        cls = openapi._model(name)
        self.fields = {cls.attribute_map.get(a, a): t for a, t in cls.openapi_types.items()}
        self._kids = {}

    def declared(self, name):
        return name in self.fields

    def child(self, name):
        kid = self._kids.get(name)
        if kid is None:
            kid = self._kids[name] = _type(self.fields[name])
        return kid


def _type(type_name):
    type_name = type_name.strip()
    m = _LIST_RE.match(type_name)
    if m:
        return ("list", _type(m.group(1)))
    m = _DICT_RE.match(type_name)
    if m:
        return ("map", _type(m.group(1)))
    if openapi._model(type_name) is not None:
        return _model(type_name)
    return _FREE


_MODELS = {}


def _model(name):
    hit = _MODELS.get(name)
    if hit is None:
        hit = _MODELS[name] = _Model(name)
    return hit


class _Structural:
    """A CRD structural-schema node."""

    def __init__(self, node, top=False):
        self.node = node or {}
        self.top = top

    def declared(self, name):
        if self.top and name in ("apiVersion", "kind", "metadata"):
            return True
        return name in (self.node.get("properties") or {}) or bool(self.node.get("x-kubernetes-preserve-unknown-fields"))

    def child(self, name):
        if self.top and name == "metadata":
            return _model("V1ObjectMeta")
        props = self.node.get("properties") or {}
        if name not in props:
            return _FREE
        return _structural(props[name])


def _structural(node):
    if not isinstance(node, dict) or (node.get("x-kubernetes-preserve-unknown-fields") and "properties" not in node):
        return _FREE
    if node.get("type") == "array" or "items" in node:
        return ("list", _structural(node.get("items")))
    if "properties" in node:
        return _Structural(node)
    if isinstance(node.get("additionalProperties"), dict):
        return ("map", _structural(node["additionalProperties"]))
    return _FREE


def describe(rt):
    """The description of a served type's objects, or None."""
    if rt.crd is not None:
        return _Structural(rt.schema, top=True) if rt.schema else None
    name = openapi._model_name(rt)
    return _model(name) if name else None


def _apply_errors(value, desc, ctx, path, out):
    """``path``: a linked list ``(parent, element)`` of path elements, formatted only for an error."""
    if desc is _FREE or value is None:
        return
    if type(desc) is tuple:
        kind, inner = desc
        if kind == "map" and isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, (dict, list)):
                    _apply_errors(v, inner, ctx.child(k), (path, "." + k), out)
        elif kind == "list" and isinstance(value, list):
            lt, keys = ctx.list_type()
            ictx = ctx.item()
            for i, item in enumerate(value):
                if isinstance(item, (dict, list)):
                    _apply_errors(item, inner, ictx, (path, (item, i, lt, keys)), out)
        return
    if not isinstance(value, dict):
        return
    declared = desc.fields if type(desc) is _Model else None
    for name, child in value.items():
        if not (name in declared if declared is not None else desc.declared(name)):
            out.append(f"{_format(path)}.{name}: field not declared in schema")
            return  # the real server stops visiting this map here
        if isinstance(child, (dict, list)):
            _apply_errors(child, desc.child(name), ctx.child(name), (path, "." + name), out)


def _format(path):
    parts = []
    while path:
        path, elem = path
        parts.append(elem if isinstance(elem, str) else _smd_element(*elem))
    return "".join(reversed(parts))


def _smd_element(item, index, list_type, keys):
    """A list element as structured-merge-diff prints it in a path."""
    if list_type == "map" and isinstance(item, dict):
        key = json.loads(item_key(item, keys)[2:])
        return "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(key.items())) + "]"
    if list_type == "set":
        return f"[={json.dumps(item)}]"
    return f"[{index}]"


def apply_errors(obj, rt, ctx):
    """The errors of an applied configuration (empty if every field is declared)."""
    desc = describe(rt)
    out = []
    if desc is not None:
        _apply_errors(obj, desc, ctx, None, out)
    return out


def check_apply(obj, rt, ctx, namespace, name):
    """Raise the real server's 500 for an applied configuration with undeclared fields."""
    found = apply_errors(obj, rt, ctx)
    if not found:
        return
    what = f"{namespace or ''}/{name}; {rt.group}/{rt.version}, Kind={rt.kind}"
    text = found[0] if len(found) == 1 else "errors:\n  " + "\n  ".join(found)
    raise errors.ApiError(500, "", f"failed to create typed patch object ({what}): {text}")


def _strip(value, desc, path, out):
    if desc is _FREE or value is None:
        return
    if type(desc) is tuple:
        kind, inner = desc
        if kind == "map" and isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, (dict, list)):
                    _strip(v, inner, (path, f"[{k}]"), out)
        elif kind == "list" and isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, (dict, list)):
                    _strip(item, inner, (path, f"[{i}]"), out)
        return
    if not isinstance(value, dict):
        return
    declared = desc.fields if type(desc) is _Model else None
    undeclared = []
    for name, child in value.items():  # depth first, in document order (as a JSON decoder meets them)
        if not (name in declared if declared is not None else desc.declared(name)):
            out.append(_plain(path, name))
            undeclared.append(name)
        elif isinstance(child, (dict, list)):
            _strip(child, desc.child(name), (path, name), out)
    for name in undeclared:
        del value[name]


def _plain(path, name):
    """``spec.containers[0].name`` from a linked path and a last field name."""
    elems = [name]
    while path:
        path, elem = path
        elems.append(elem)
    out = ""
    for elem in reversed(elems):
        out += elem if elem.startswith("[") or not out else "." + elem
    return out


def strip_unknown(obj, rt, validation="Warn", patched=False):
    """Drop the undeclared fields of a create/update body (or, ``patched``, of the result of a JSON, merge or
    strategic merge patch) in place; returns the Warning header values (``Warn``), nothing (``Ignore``), or
    raises 400 (``Strict``; 422 for a patch, whose message quotes the patched object)."""
    desc = describe(rt)
    if desc is None or not isinstance(obj, dict):
        return []
    found = []
    original = json.loads(json.dumps(obj)) if patched and validation == "Strict" else None
    _strip(obj, desc, "", found)
    if not found:
        return []
    if validation == "Strict":
        listed = ", ".join(f'unknown field "{p}"' for p in found)
        if patched:
            # the real server quotes the patched object as Go encodes it (or, for a strategic merge patch, the
            # patch as a Go map); here: its JSON with the undeclared fields
            why = f"Invalid value: {json.dumps(json.dumps(original, separators=(',', ':')))}: strict decoding error: {listed}"
            raise errors.ApiError(422, "Invalid", f' "" is invalid: patch: {why}',
                                  {"causes": [{"reason": "FieldValueInvalid", "message": why, "field": "patch"}]})
        raise errors.bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: strict decoding error: {listed}')
    if validation == "Ignore":
        return []
    return ["299 - " + json.dumps(f'unknown field "{p}"') for p in found]
