"""API aggregation (``apiregistration.k8s.io/v1`` APIService) as kube-apiserver v1.36 does it.

* Every built-in group-version has a *local* APIService (``v1.apps``, ``v1.`` for the core group),
  labelled ``kube-aggregator.kubernetes.io/automanaged: onstart``, with the real priorities; an
  Established CRD's group-version gets one labelled ``automanaged: "true"`` (priority 1000/100).
  Local APIServices are ``Available=True`` / ``Local``.
* An APIService with a ``spec.service`` names an aggregated API server. The simulator runs none, so
  it is never available: ``ServiceNotFound`` (no such Service), ``ServicePortError`` (the Service
  does not listen on ``spec.service.port``), ``MissingEndpoints`` (no EndpointSlice of the Service
  has a ready address with that port's name; nothing here fills EndpointSlices), else
  ``FailedDiscoveryCheck`` (nothing answers at the endpoints). The real server says
  ``EndpointsNotFound`` for a moment first, until its EndpointSlice controller wrote the Service's
  first EndpointSlice; here the condition is the steady one at once.
* Discovery of an unavailable group-version: ``/apis`` and ``/apis/<group>`` list it,
  ``/apis/<group>/<version>`` and every path under it answer ``503 service unavailable``
  (text/plain), aggregated discovery lists the version with ``freshness: Stale`` and no resources.

Pinned by ``tests/conformance/test_aggregation_conformance.py`` (both targets).
"""

from .util import dig

AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"
UNAVAILABLE = "service unavailable\n"

# (groupPriorityMinimum, versionPriority) of the built-in group-versions, as kube-apiserver v1.36 registers them
LOCAL_PRIORITIES = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("resource.k8s.io", "v1"): (16200, 21),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
}
CRD_PRIORITIES = (1000, 100)


def name_of(group, version):
    """The APIService name of a group-version (``v1.apps``; ``v1.`` for the core group)."""
    return f"{version}.{group}"


def local_apiservice(group, version, automanaged="onstart", priorities=None):
    """The body of a local APIService (no ``spec.service``)."""
    minimum, priority = priorities or LOCAL_PRIORITIES.get((group, version), CRD_PRIORITIES)
    spec = {"version": version, "groupPriorityMinimum": minimum, "versionPriority": priority}
    if group:
        spec["group"] = group
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name_of(group, version), "labels": {AUTOMANAGED: automanaged}}, "spec": spec}


def builtin_group_versions(types):
    """The built-in group-versions that get an ``onstart`` APIService (the real server has none for its own group)."""
    seen = []
    for rt in types:
        gv = (rt.group, rt.version)
        if rt.crd is None and rt.group != "apiregistration.k8s.io" and gv not in seen:
            seen.append(gv)
    return seen


def defaults(obj):
    """Server defaults of an APIService: ``spec.service.port`` 443."""
    service = dig(obj, "spec", "service", default=None)
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


def name_causes(obj):
    """The real name check of an APIService: ``spec.version + "." + spec.group`` (``v1.`` for the core group)."""
    name = (obj.get("metadata") or {}).get("name") or ""
    spec = obj.get("spec") or {}
    want = f"{spec.get('version') or ''}.{spec.get('group') or ''}"
    if name == want:
        return []
    return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": must be `spec.version+"."+spec.group`: "{want}"')]


def availability(apiservice, find_service, endpoint_slices):
    """``(status, reason, message)`` of an APIService's ``Available`` condition.

    ``find_service(namespace, name)`` -> the Service or None; ``endpoint_slices(namespace, name)`` ->
    the EndpointSlices labelled ``kubernetes.io/service-name: name``.
    """
    ref = dig(apiservice, "spec", "service", default=None)
    if not ref:
        return "True", "Local", "Local APIServices are always available"
    ns, name, port = ref.get("namespace") or "", ref.get("name") or "", ref.get("port") or 443
    service = find_service(ns, name)
    if service is None:
        return "False", "ServiceNotFound", f'service/{name} in "{ns}" is not present'
    if dig(service, "spec", "type", default="") == "ExternalName":
        return "False", "FailedDiscoveryCheck", _no_answer(apiservice, f"{name}.{ns}.svc", port)
    port_name = None
    for p in dig(service, "spec", "ports", default=None) or []:
        if p.get("port") == port:
            port_name = p.get("name") or ""
            break
    if port_name is None:
        return "False", "ServicePortError", f'service/{name} in "{ns}" is not listening on port {port}'
    for eps in endpoint_slices(ns, name):
        ports = [p for p in eps.get("ports") or [] if (p.get("name") or "") == port_name]
        ready = [a for e in eps.get("endpoints") or [] if (e.get("conditions") or {}).get("ready", True) for a in e.get("addresses") or []]
        if ports and ready:
            return "False", "FailedDiscoveryCheck", _no_answer(apiservice, ready[0], ports[0].get("port"))
    return "False", "MissingEndpoints", f'endpointslices for service/{name} in "{ns}" have no addresses with port name "{port_name}"'


def _no_answer(apiservice, host, port):
    spec = apiservice.get("spec") or {}
    return (f"failing or missing response from https://{host}:{port}/apis/{spec.get('group')}/{spec.get('version')}: "
            "the simulator runs no aggregated API server")


def condition(apiservice):
    """The ``Available`` condition stored on an APIService, or None."""
    for c in dig(apiservice, "status", "conditions", default=None) or []:
        if c.get("type") == "Available":
            return c
    return None


def unavailable(apiservices, local_group_versions):
    """Aggregated group-versions no server answers for: ``[(group, version, groupPriorityMinimum, versionPriority)]``,
    sorted like the real ``/apis`` (group priority, highest first, then name; version priority within a group).

    ``local_group_versions``: what the simulator serves itself (an APIService for those changes nothing here).
    """
    out = []
    for svc in apiservices:
        spec = svc.get("spec") or {}
        gv = (spec.get("group") or "", spec.get("version") or "")
        if not spec.get("service") or not gv[0] or gv in local_group_versions or svc["metadata"].get("deletionTimestamp"):
            continue
        out.append((gv[0], gv[1], int(spec.get("groupPriorityMinimum") or 0), int(spec.get("versionPriority") or 0)))
    top = {}
    for g, _, gp, _ in out:
        top[g] = max(top.get(g, 0), gp)
    return sorted(out, key=lambda r: (-top[r[0]], r[0], -r[3], r[1]))


def groups_of(unavailable_gvs):
    """``[(group, [versions])]`` in discovery order from :func:`unavailable`'s answer."""
    groups = []
    for g, v, _, _ in unavailable_gvs:
        if not groups or groups[-1][0] != g:
            groups.append((g, []))
        groups[-1][1].append(v)
    return groups
