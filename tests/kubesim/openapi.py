"""OpenAPI v3 (and v2) documents of the served kinds.

kubectl reads ``/openapi/v3/<group-version>`` to learn whether PATCH supports ``fieldValidation``
(server-side validation), and ``kubectl apply`` and ``kubectl explain`` work from the schemas in it.
A real kube-apiserver serves complete schemas (1.6 MB for ``api/v1``), and kubectl's work per
applied object grows with them (in an experiment, the reference v1.36 server's own documents served
by the simulator made ``kubectl apply --server-side`` of 1,000 objects cost 29.6 s of kubectl CPU,
one-line schemas 3.3 s, these documents ~17 s). So built-in kinds get full schemas, generated from the models of the
``kubernetes`` Python client (the same API definitions: property types, nesting through ``$ref``,
descriptions); custom resources get their CRD's ``openAPIV3Schema``. Without the ``kubernetes``
package (or for a kind it has no model for) a kind gets a minimal schema.
"""

import functools
import hashlib
import json
import re

_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_SCHEMA_PREFIX = "io.k8s.sim.model."
_GENERATOR = 6  # bump when the generated documents change
_SCALARS = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "bytes": {"type": "string", "format": "byte"},
    "bytearray": {"type": "string", "format": "byte"},
    "object": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}
_LIST_RE = re.compile(r"^List\[(.+)\]$")
_DICT_RE = re.compile(r"^Dict\[str, (.+)\]$")


@functools.lru_cache(maxsize=1)
def _models_module():
    try:
        from kubernetes.client import models
    except ImportError:
        return None
    return models


@functools.cache
def _model(name):
    """The ``kubernetes`` client's model class ``name`` (its module imports them lazily), or None."""
    models = _models_module()
    cls = getattr(models, name, None) if models is not None and name.isidentifier() else None
    if isinstance(cls, type) and isinstance(getattr(cls, "openapi_types", None), dict) and isinstance(
            getattr(cls, "attribute_map", None), dict):
        return cls
    return None


def _description(cls, attr):
    """A property's description (the client's pydantic models carry them; tests/requirements.txt pins it)."""
    field = (getattr(cls, "model_fields", None) or {}).get(attr)
    return (getattr(field, "description", None) or "") if field is not None else ""


def _type_schema(type_name, refs):
    """Schema of a client type string (``str``, ``List[V1Container]``, ``Dict[str, str]``, a model name)."""
    type_name = type_name.strip()
    if type_name in _SCALARS:
        return dict(_SCALARS[type_name])
    match = _LIST_RE.match(type_name)
    if match:
        return {"type": "array", "items": _type_schema(match.group(1), refs)}
    match = _DICT_RE.match(type_name)
    if match:
        return {"type": "object", "additionalProperties": _type_schema(match.group(1), refs)}
    if _model(type_name) is not None:
        refs.add(type_name)
        return {"$ref": "#/components/schemas/" + _SCHEMA_PREFIX + type_name}
    return dict(_OBJECT)


@functools.cache
def _model_schema(name):
    """``(schema, referenced model names)`` of one client model."""
    cls = _model(name)
    refs = set()
    props = {}
    for attr, type_name in cls.openapi_types.items():
        prop = _type_schema(type_name, refs)
        description = _description(cls, attr)
        if description:
            prop = {"description": description, **prop} if "$ref" not in prop else {
                "description": description, "allOf": [prop]}
        props[cls.attribute_map.get(attr, attr)] = prop
    return {"type": "object", "properties": props}, frozenset(refs)


def _model_closure(name):
    """Schemas of model ``name`` and of every model it refers to, by schema id."""
    out, todo = {}, [name]
    while todo:
        current = todo.pop()
        if _SCHEMA_PREFIX + current in out:
            continue
        schema, refs = _model_schema(current)
        out[_SCHEMA_PREFIX + current] = schema
        todo.extend(refs)
    return out


def _model_name(rt, kind=None):
    """The client model of a built-in kind (``V1ConfigMap``, ``EventsV1Event``), or None."""
    if rt.crd is not None:
        return None
    kind = kind or rt.kind
    version = rt.version[:1].upper() + rt.version[1:]
    group = (rt.group.split(".")[0] if rt.group else "core")
    for name in (group[:1].upper() + group[1:] + version + kind, version + kind):
        if _model(name) is not None:
            return name
    return None


def gv_path(group, version):
    """Index key of a group/version (``api/v1``, ``apis/apps/v1``)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _schema_id(rt):
    group = ".".join(reversed(rt.group.split("."))) if rt.group else "core"
    return f"io.k8s.sim.{group}.{rt.version}.{rt.kind}"


def _gvk(rt):
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _own_schema(rt):
    """A kind's schema without client models: its CRD's schema, else any spec/status/data."""
    if rt.crd is not None and rt.schema:
        schema = json.loads(json.dumps(rt.schema))
    else:
        schema = {"type": "object", "properties": {"spec": _OBJECT, "status": _OBJECT, "data": _OBJECT}}
    props = schema.setdefault("properties", {})
    props.update({"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": _OBJECT})
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    return schema


def _schema(rt):
    """``(schema of the kind, {schema id: schema} of the client models it refers to)``."""
    model = _model_name(rt)
    if model is None:
        return _own_schema(rt), {}
    schemas = _model_closure(model)
    schema = dict(schemas[_SCHEMA_PREFIX + model])
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    return schema, schemas


#: query parameters, with what the server does with them (types as in the real documents)
_QUERY = {
    "pretty": ("string", "If 'true', the output is pretty printed."),
    "dryRun": ("string", "When present, modifications are not persisted; the only valid value is All."),
    "fieldManager": ("string", "Name of the actor or entity making the change; required for apply requests."),
    "fieldValidation": ("string", "How the server treats fields unknown to the schema or duplicated: Ignore, Warn "
                                  "(the default) or Strict."),
    "force": ("boolean", "Apply requests only: take over fields owned by other field managers."),
    "allowWatchBookmarks": ("boolean", "Watch only: ask for BOOKMARK events."),
    "continue": ("string", "The continue token of the previous page of a paginated list."),
    "fieldSelector": ("string", "Restrict the returned objects by their fields."),
    "labelSelector": ("string", "Restrict the returned objects by their labels."),
    "limit": ("integer", "Maximum number of objects in one page of a list."),
    "resourceVersion": ("string", "Which version of the collection a read is served from."),
    "resourceVersionMatch": ("string", "How resourceVersion is applied: Exact or NotOlderThan."),
    "sendInitialEvents": ("boolean", "Watch only: start with synthetic ADDED events for the current state."),
    "timeoutSeconds": ("integer", "Timeout of a list or watch call, in seconds."),
    "watch": ("boolean", "Watch for changes to the described objects instead of listing them."),
    "gracePeriodSeconds": ("integer", "Seconds before the object is deleted; 0 deletes at once."),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy."),
    "propagationPolicy": ("string", "Whether and how dependents are garbage collected: Orphan, Background or Foreground."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": ("boolean", "Delete even an object that cannot be decoded."),
}
_LIST_PARAMS = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
                "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
                  "orphanDependents", "propagationPolicy")
#: content types the simulator speaks (the real server also lists protobuf, which the simulator cannot decode)
_CONTENT = ("application/json", "application/yaml")
_WATCH_CONTENT = ("application/json;stream=watch",)
_PATCH_CONTENT = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json",
                  "application/strategic-merge-patch+json")
_PATCH_SCHEMA = {"type": "object", "description": "The body of a PATCH request, in the format its content type names."}


def _ref(schema_id):
    return {"$ref": "#/components/schemas/" + schema_id}


def _query(names):
    return [{"name": n, "in": "query", "description": _QUERY[n][1], "schema": {"type": _QUERY[n][0], "uniqueItems": True}}
            for n in names]


def _path_params(namespaced, named=False):
    out = [{"name": "name", "in": "path", "description": "name of the object", "required": True,
            "schema": {"type": "string", "uniqueItems": True}}] if named else []
    if namespaced:
        out.append({"name": "namespace", "in": "path", "description": "object name and auth scope, such as for teams "
                    "and projects", "required": True, "schema": {"type": "string", "uniqueItems": True}})
    return out + _query(("pretty",))


def _responses(codes, schema, content=_CONTENT):
    out = {code: {"description": text, "content": {ct: {"schema": schema} for ct in content}} for code, text in codes}
    out["401"] = {"description": "Unauthorized"}
    return out


def _op(rt, verb, action, schema, params=(), body=None, codes=(("200", "OK"),), content=_CONTENT, suffix="", gvk=None):
    op = {"tags": [gv_path(rt.group, rt.version).replace("/", "_")],
          "description": f"{action} {rt.kind}{suffix}", "operationId": f"{verb}{rt.kind}{suffix.replace(' ', '')}",
          "parameters": _query(params), "responses": _responses(codes, schema, content),
          "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk or _gvk(rt)}
    if body is not None:
        op["requestBody"] = body
    return op


def _paths(rt, list_id):
    """The operations a kube-apiserver documents for one resource (as in its OpenAPI v3 documents)."""
    prefix = "/" + gv_path(rt.group, rt.version)
    scope = f"{prefix}/namespaces/{{namespace}}" if rt.namespaced else prefix
    coll, kind = f"{scope}/{rt.plural}", _ref(_schema_id(rt))
    body = {"content": {"*/*": {"schema": kind}}, "required": True}
    created = (("200", "OK"), ("201", "Created"), ("202", "Accepted"))
    if rt.is_review:
        return {coll: {"parameters": _path_params(rt.namespaced),
                       "post": _op(rt, "create", "post", kind, _WRITE_PARAMS, body, created)}}
    status, delete_body = _ref(_SCHEMA_PREFIX + "V1Status"), {
        "content": {"*/*": {"schema": _ref(_SCHEMA_PREFIX + "V1DeleteOptions")}}}
    patch_body = {"content": {ct: {"schema": _ref("io.k8s.sim.Patch")} for ct in _PATCH_CONTENT}, "required": True}
    watch = _ref(_SCHEMA_PREFIX + "V1WatchEvent")
    paths = {
        coll: {"parameters": _path_params(rt.namespaced),
               "get": _op(rt, "list", "list", _ref(list_id), _LIST_PARAMS, content=_CONTENT + _WATCH_CONTENT),
               "post": _op(rt, "create", "post", kind, _WRITE_PARAMS, body, created),
               "delete": _op(rt, "deletecollection", "deletecollection", status,
                             _LIST_PARAMS[1:-1] + _DELETE_PARAMS, delete_body, suffix=" collection")},
        coll + "/{name}": {"parameters": _path_params(rt.namespaced, named=True),
                           "get": _op(rt, "read", "get", kind),
                           "put": _op(rt, "replace", "put", kind, _WRITE_PARAMS, body, (("200", "OK"), ("201", "Created"))),
                           "patch": _op(rt, "patch", "patch", kind, (*_WRITE_PARAMS, "force"), patch_body,
                                        (("200", "OK"), ("201", "Created"))),
                           "delete": _op(rt, "delete", "delete", status, _DELETE_PARAMS, delete_body,
                                         (("200", "OK"), ("202", "Accepted")))},
        f"{prefix}/watch/{scope[len(prefix) + 1:]}/{rt.plural}".replace("//", "/"): {
            "parameters": _path_params(rt.namespaced) + _query(_LIST_PARAMS),
            "get": _op(rt, "watch", "watchlist", watch, content=_CONTENT + _WATCH_CONTENT, suffix=" list")},
    }
    if rt.namespaced:
        paths[f"{prefix}/{rt.plural}"] = {
            "parameters": _query(("pretty", *_LIST_PARAMS)),
            "get": _op(rt, "list", "list", _ref(list_id), content=_CONTENT + _WATCH_CONTENT, suffix=" for all namespaces")}
    for sub in rt.subresources:
        if sub not in ("status", "scale"):
            continue
        # the scale subresource reads and writes an autoscaling/v1 Scale, status the kind itself
        ref = kind if sub == "status" else _ref(_SCHEMA_PREFIX + "V1Scale")
        gvk = None if sub == "status" else {"group": "autoscaling", "version": "v1", "kind": "Scale"}
        sub_body = {"content": {"*/*": {"schema": ref}}, "required": True}
        codes = (("200", "OK"), ("201", "Created"))
        paths[f"{coll}/{{name}}/{sub}"] = {
            "parameters": _path_params(rt.namespaced, named=True),
            "get": _op(rt, "read", "get", ref, suffix=" " + sub, gvk=gvk),
            "put": _op(rt, "replace", "put", ref, _WRITE_PARAMS, sub_body, codes, suffix=" " + sub, gvk=gvk),
            "patch": _op(rt, "patch", "patch", ref, (*_WRITE_PARAMS, "force"), patch_body, codes, suffix=" " + sub,
                         gvk=gvk)}
    return paths


def _list_schema(rt):
    """``(id, schema, models)`` of the kind's list type: the client's model, or items of the kind."""
    model = _model_name(rt, rt.kind + "List")
    gvk = [{"group": rt.group, "version": rt.version, "kind": rt.list_kind}]
    if model is not None:
        models = _model_closure(model)
        schema = dict(models[_SCHEMA_PREFIX + model], **{"x-kubernetes-group-version-kind": gvk})
        return _schema_id(rt) + "List", schema, models
    schema = {"type": "object", "required": ["items"], "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": _OBJECT,
        "items": {"type": "array", "items": _ref(_schema_id(rt))}}, "x-kubernetes-group-version-kind": gvk}
    return _schema_id(rt) + "List", schema, {}


def v3_index(types):
    """``/openapi/v3`` index with content hashes."""
    paths = {}
    for g, v in sorted({(t.group, t.version) for t in types}):
        digest = _digest(_served_key(types, g, v))
        paths[gv_path(g, v)] = {"serverRelativeURL": f"/openapi/v3/{gv_path(g, v)}?hash={digest}"}
    return {"paths": paths}


def _digest(key):
    """Content hash of a document: of what it is built from (the served kinds, the client models' version),
    so the index does not build every document."""
    models = _models_module()
    source = [key, getattr(models, "__name__", None) and _client_version(), _GENERATOR]
    return hashlib.sha512(json.dumps(source).encode()).hexdigest().upper()


def _client_version():
    try:
        from kubernetes import __version__
    except ImportError:
        return None
    return __version__


def _served_key(types, group, version):
    """What the document of a group/version depends on, hashable (CRD schemas as JSON)."""
    served = tuple(sorted(
        (t.plural, t.kind, t.namespaced, t.is_review, tuple(t.subresources), t.crd,
         json.dumps(t.schema, sort_keys=True) if t.crd else "")
        for t in types if t.group == group and t.version == version))
    return group, version, served


@functools.lru_cache(maxsize=256)
def _v3_cached(group, version, served):
    """The document of a group/version; documents are big, so each is built once per content."""
    from .resources import ResourceType

    paths, schemas = {}, {"io.k8s.sim.Patch": _PATCH_SCHEMA}
    for name in ("V1Status", "V1DeleteOptions", "V1WatchEvent"):
        if _model(name) is not None:
            schemas.update(_model_closure(name))
    for plural, kind, namespaced, is_review, subresources, crd, schema in served:
        rt = ResourceType(group, version, plural, kind, namespaced, subresources=subresources, crd=crd,
                          schema=json.loads(schema) if schema else {})
        if is_review:
            rt.verbs = ("create",)
        if "scale" in subresources and _model("V1Scale") is not None:
            schemas.update(_model_closure("V1Scale"))
        kind_schema, models = _schema(rt)
        schemas.update(models)
        schemas[_schema_id(rt)] = kind_schema
        list_id, list_schema, list_models = _list_schema(rt)
        schemas.update(list_models)
        schemas[list_id] = list_schema
        paths.update(_paths(rt, list_id))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.36.2"}, "paths": paths,
            "components": {"schemas": schemas}}


def v3_document(types, group, version):
    """OpenAPI 3.0 document for one group/version, or None if not served."""
    key = _served_key(types, group, version)
    if not key[2]:
        return None
    return _v3_cached(*key)


def v2_document(types):
    """Swagger 2.0 document with a definition per served kind (the CRD's schema, else a minimal one)."""
    definitions = {_schema_id(t): _own_schema(t) for t in types}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.36.2"}, "paths": {}, "definitions": definitions}
