"""Minimal OpenAPI v3 (and v2) documents: one schema and the resource paths per served kind.

kubectl reads ``/openapi/v3/<group-version>`` to learn whether PATCH supports ``fieldValidation``
(server-side validation); it needs paths with ``x-kubernetes-group-version-kind`` and the query
parameters, not full schemas.
"""

import hashlib
import json

_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")
_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def gv_path(group, version):
    """Index key of a group/version (``api/v1``, ``apis/apps/v1``)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _schema_id(rt):
    group = ".".join(reversed(rt.group.split("."))) if rt.group else "core"
    return f"io.k8s.sim.{group}.{rt.version}.{rt.kind}"


def _gvk(rt):
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _schema(rt):
    if rt.crd is not None and rt.schema:
        schema = json.loads(json.dumps(rt.schema))
    else:
        schema = {"type": "object", "properties": {"spec": _OBJECT, "status": _OBJECT, "data": _OBJECT}}
    props = schema.setdefault("properties", {})
    props.update({"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": _OBJECT})
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    return schema


def _paths(rt):
    prefix = "/" + gv_path(rt.group, rt.version)
    base = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
    ref = {"$ref": f"#/components/schemas/{_schema_id(rt)}"}
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    params = [{"name": p, "in": "query", "schema": {"type": "string"}} for p in _PARAMS]
    ext = {"x-kubernetes-group-version-kind": _gvk(rt)}
    item = {verb: {"operationId": f"{verb}{rt.kind}", "responses": ok, "x-kubernetes-action": action, **ext,
                   **({"parameters": params} if verb in ("patch", "put", "post") else {})}
            for verb, action in (("get", "get"), ("put", "put"), ("patch", "patch"), ("delete", "delete")) if not rt.is_review}
    coll = {"get": {"operationId": f"list{rt.kind}", "responses": ok, "x-kubernetes-action": "list", **ext},
            "post": {"operationId": f"create{rt.kind}", "responses": ok, "x-kubernetes-action": "post", "parameters": params, **ext}}
    return {base: coll, **({f"{base}/{{name}}": item} if item else {})}


def v3_index(types):
    """``/openapi/v3`` index with content hashes."""
    paths = {}
    for g, v in sorted({(t.group, t.version) for t in types}):
        doc = v3_document(types, g, v)
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()
        paths[gv_path(g, v)] = {"serverRelativeURL": f"/openapi/v3/{gv_path(g, v)}?hash={digest}"}
    return {"paths": paths}


def v3_document(types, group, version):
    """OpenAPI 3.0 document for one group/version, or None if not served."""
    served = [t for t in types if t.group == group and t.version == version]
    if not served:
        return None
    paths, schemas = {}, {}
    for rt in served:
        paths.update(_paths(rt))
        schemas[_schema_id(rt)] = _schema(rt)
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.36.2"}, "paths": paths, "components": {"schemas": schemas}}


def v2_document(types):
    """Swagger 2.0 document with a definition per served kind."""
    definitions = {_schema_id(t): _schema(t) for t in types}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.36.2"}, "paths": {}, "definitions": definitions}
