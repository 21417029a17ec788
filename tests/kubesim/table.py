"""Server-side printing: ``meta.k8s.io/v1`` Table answers for ``kubectl get``."""

import calendar
import time

from .util import dig

_NAME = {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}
_AGE = {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time "
        "when this object was created.", "priority": 0}


def _col(name, kind="string"):
    return {"name": name, "type": kind, "format": "", "description": name, "priority": 0}


def _age(obj):
    ts = obj["metadata"].get("creationTimestamp")
    if not ts:
        return "<unknown>"
    secs = max(0, int(time.time() - calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ"))))
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        return f"{minutes}m{secs % 60}s" if secs % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    return f"{hours}h" if hours < 48 else f"{hours // 24}d"


def _ready(obj, ready_key="readyReplicas", want_path=("spec", "replicas")):
    return f"{dig(obj, 'status', ready_key, default=0)}/{dig(obj, *want_path, default=0)}"


_COLUMNS = {
    "Namespace": ([_col("Status")], lambda o: [dig(o, "status", "phase", default="")]),
    "ConfigMap": ([_col("Data", "integer")], lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {})]),
    "Secret": ([_col("Type"), _col("Data", "integer")], lambda o: [o.get("type", ""), len(o.get("data") or {})]),
    "Deployment": ([_col("Ready"), _col("Up-to-date", "integer"), _col("Available", "integer")],
                   lambda o: [_ready(o), dig(o, "status", "updatedReplicas", default=0), dig(o, "status", "availableReplicas", default=0)]),
    "ReplicaSet": ([_col("Desired", "integer"), _col("Current", "integer"), _col("Ready", "integer")],
                   lambda o: [dig(o, "spec", "replicas", default=0), dig(o, "status", "replicas", default=0),
                              dig(o, "status", "readyReplicas", default=0)]),
    "StatefulSet": ([_col("Ready")], lambda o: [_ready(o)]),
    "Pod": ([_col("Ready"), _col("Status"), _col("Restarts", "integer")],
            lambda o: [f"{sum(1 for c in dig(o, 'status', 'containerStatuses', default=[]) or [] if c.get('ready'))}/"
                       f"{len(dig(o, 'spec', 'containers', default=[]) or [])}", dig(o, "status", "phase", default="Pending"), 0]),
    "Service": ([_col("Type"), _col("Cluster-IP")], lambda o: [dig(o, "spec", "type", default=""), dig(o, "spec", "clusterIP", default="")]),
    "ServiceAccount": ([], lambda o: []),
    "APIService": ([_col("Service"), _col("Available")], lambda o: [_apiservice_service(o), _apiservice_available(o)]),
}


def _apiservice_service(obj):
    ref = dig(obj, "spec", "service", default=None)
    return f"{ref.get('namespace')}/{ref.get('name')}" if ref else "Local"


def _apiservice_available(obj):
    for c in dig(obj, "status", "conditions", default=None) or []:
        if c.get("type") == "Available":
            return "True" if c.get("status") == "True" else f"{c.get('status')} ({c.get('reason')})"
    return "Unknown"


def to_table(rt, body, include_object):
    """Convert a list (or single object) answer into a Table."""
    items = body.get("items", [body])
    extra_cols, cells = _COLUMNS.get(rt.kind if rt.crd is None else None, ([], lambda o: []))
    rows = []
    for item in items:
        meta = item["metadata"]
        if include_object == "Object":
            obj = dict(item, apiVersion=rt.api_version, kind=rt.kind)
        elif include_object == "None":
            obj = None
        else:
            obj = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
        row = {"cells": [meta["name"], *cells(item), _age(item)]}
        if obj is not None:
            row["object"] = obj
        rows.append(row)
    meta = {"resourceVersion": body["metadata"].get("resourceVersion", "")}
    if body["metadata"].get("continue"):
        meta["continue"] = body["metadata"]["continue"]
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": [_NAME, *extra_cols, _AGE], "rows": rows}


def wants_table(accept):
    """True if the Accept header asks for a meta.k8s.io/v1 Table."""
    return "as=Table" in (accept or "") and "g=meta.k8s.io" in accept
