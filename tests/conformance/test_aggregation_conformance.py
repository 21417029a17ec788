"""API aggregation (APIService) and the discovery of an aggregated API no server answers for.

Runs against the simulator by default and against a real kube-apiserver v1.36 when
STACKSYNC_TEST_KUBECONFIG is set; both must pass. What v1.36 does, recorded here:

- every built-in group-version has a local APIService (``v1.apps``, ``v1.`` for the core group),
  ``Available=True`` / ``Local``; an Established CRD's group-version gets one too;
- an APIService naming a Service is ``Available=False``: ``ServiceNotFound``, ``ServicePortError``
  (the Service does not listen on its port) or ``MissingEndpoints`` (no ready endpoint);
- its group is still listed by ``/apis`` and ``/apis/<group>``, ``/apis/<group>/<version>`` and every
  path under it answer 503 ``service unavailable`` (text/plain), aggregated discovery lists the
  version with ``freshness: Stale`` and no resources;
- kubectl 1.32 (aggregated discovery) leaves the group out of ``kubectl api-resources`` without an
  error and exits 0; ``kubectl get apiservices`` shows ``False (MissingEndpoints)``.
"""

import shutil
import subprocess

import pytest

from .helpers import poll, unique

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
NS_PREFIX = "agg"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


def available(obj):
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Available"), None)


def settled(obj):
    """Unavailable for good: the real server says ``EndpointsNotFound`` for a moment, until the EndpointSlice
    controller wrote the new Service's first (empty) EndpointSlice; the simulator goes to the end at once."""
    cond = available(obj)
    return cond is not None and cond["status"] == "False" and cond["reason"] != "EndpointsNotFound"


def apiservice(group, service_ns, service_name, port=443):
    service = {"namespace": service_ns, "name": service_name}
    if port is not None:
        service["port"] = port
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": f"v1beta1.{group}"},
            "spec": {"group": group, "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 10,
                     "insecureSkipTLSVerify": True, "service": service}}


def service(name, ns, port_name=None, port=443):
    p = {"port": port, "targetPort": 8443}
    if port_name:
        p["name"] = port_name
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"app": "nothing-runs-here"}, "ports": [p]}}


@pytest.fixture
def broken(api, ns):
    """``broken(service body or None, port)``: an APIService of a new group whose Service has no endpoints; deleted after."""
    created = []

    def make(svc, port=443):
        if svc is not None:
            assert api.request("POST", f"/api/v1/namespaces/{ns}/services", svc)[0] == 201
        group = f"{unique('agg')}.example.com"
        body = apiservice(group, ns, svc["metadata"]["name"] if svc else "nowhere", port)
        status, got, _ = api.request("POST", APISERVICES, body)
        assert status == 201, got
        created.append(body["metadata"]["name"])
        obj = poll(lambda: (lambda o: o if settled(o) else None)(api.get(f"{APISERVICES}/{body['metadata']['name']}")[1]))
        assert obj, api.get(f"{APISERVICES}/{body['metadata']['name']}")[1]
        return group, obj

    yield make
    for name in created:
        api.request("DELETE", f"{APISERVICES}/{name}")


def test_local_apiservices(api):
    items = {o["metadata"]["name"]: o for o in api.get(APISERVICES)[1]["items"]}
    apps, core = items["v1.apps"], items["v1."]
    assert apps["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
    assert apps["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}
    assert core["spec"] == {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    cond = available(apps)
    assert (cond["status"], cond["reason"], cond["message"]) == ("True", "Local", "Local APIServices are always available")
    assert "v1.apiregistration.k8s.io" not in items  # the aggregator serves its own group without one
    assert {"v1.batch", "v2.autoscaling", "v1.rbac.authorization.k8s.io"} <= set(items)


@pytest.mark.parametrize("case", ["missing-endpoints", "service-not-found", "service-port-error", "named-port"])
def test_unavailable_apiservice_status(api, ns, broken, case):
    if case == "missing-endpoints":
        group, obj = broken(service("noeps", ns))
        want = ("MissingEndpoints", f'endpointslices for service/noeps in "{ns}" have no addresses with port name ""')
    elif case == "named-port":
        group, obj = broken(service("named", ns, "https", 8443), 8443)
        want = ("MissingEndpoints", f'endpointslices for service/named in "{ns}" have no addresses with port name "https"')
    elif case == "service-port-error":  # spec.service.port defaults to 443, which the Service does not listen on
        group, obj = broken(service("other", ns, "https", 8443), None)
        want = ("ServicePortError", f'service/other in "{ns}" is not listening on port 443')
        assert obj["spec"]["service"]["port"] == 443
    else:
        group, obj = broken(None)
        want = ("ServiceNotFound", f'service/nowhere in "{ns}" is not present')
    cond = available(obj)
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", *want)
    assert cond["lastTransitionTime"] and obj["metadata"]["name"] == f"v1beta1.{group}"


def test_discovery_of_an_unavailable_group(api, ns, broken):
    group, _ = broken(service("noeps", ns))
    gv = f"{group}/v1beta1"
    groups = {g["name"]: g for g in api.get("/apis")[1]["groups"]}
    assert groups[group]["versions"] == [{"groupVersion": gv, "version": "v1beta1"}]
    status, body, _ = api.get(f"/apis/{group}")
    assert status == 200 and body["kind"] == "APIGroup" and body["preferredVersion"] == {"groupVersion": gv, "version": "v1beta1"}
    for path in (f"/apis/{gv}", f"/apis/{gv}/foos", f"/apis/{gv}/namespaces/{ns}/foos/x"):
        status, body, headers = api.get(path)
        assert (status, body) == (503, "service unavailable\n"), path
        assert headers["Content-Type"].startswith("text/plain")
    status, body, headers = api.request("GET", "/apis", headers={"Accept": AGGREGATED})
    assert status == 200 and "as=APIGroupDiscoveryList" in headers["Content-Type"]
    items = [i for i in body["items"] if i["metadata"].get("name") == group]
    assert items == [{"metadata": {"name": group}, "versions": [{"version": "v1beta1", "freshness": "Stale"}]}]
    assert all(v.get("freshness") == "Current" for i in body["items"] if i["metadata"].get("name") != group
               and not i["metadata"]["name"].endswith(".example.com") for v in i["versions"])
    # gone with its APIService
    assert api.request("DELETE", f"{APISERVICES}/v1beta1.{group}")[0] == 200
    assert poll(lambda: group not in {g["name"] for g in api.get("/apis")[1]["groups"]})
    assert api.get(f"/apis/{gv}")[0] == 404


def test_apiservice_name_is_version_dot_group(api):
    body = apiservice("foo.example.com", "default", "x")
    body["metadata"]["name"] = "wrong.example.com"
    status, got, _ = api.request("POST", APISERVICES, body)
    assert status == 422, got
    assert got["message"] == ('APIService.apiregistration.k8s.io "wrong.example.com" is invalid: metadata.name: Invalid value: '
                              '"wrong.example.com": must be `spec.version+"."+spec.group`: "v1beta1.foo.example.com"')


def test_a_crd_group_gets_a_local_apiservice(api):
    group = f"{unique('crd')}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    assert api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)[0] == 201
    try:
        obj = poll(lambda: (lambda r: r[1] if r[0] == 200 else None)(api.get(f"{APISERVICES}/v1.{group}")))
        assert obj, f"no APIService v1.{group}"
        assert obj["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "true"}
        assert obj["spec"] == {"group": group, "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100}
        assert available(poll(lambda: (lambda o: o if available(o) else None)(api.get(f"{APISERVICES}/v1.{group}")[1])))["reason"] == "Local"
    finally:
        api.request("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")
    assert poll(lambda: api.get(f"{APISERVICES}/v1.{group}")[0] == 404, 30)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_with_an_unavailable_group(kube, api, ns, broken, tmp_path):
    group, _ = broken(service("noeps", ns))

    def kubectl(*args):
        return subprocess.run(["kubectl", "--kubeconfig", kube.kubeconfig, "--cache-dir", str(tmp_path / "cache"), *args],
                              capture_output=True, text=True, timeout=120)

    got = kubectl("get", "apiservices")
    assert got.returncode == 0, got.stderr
    rows = {line.split()[0]: line.split() for line in got.stdout.splitlines()[1:]}
    assert got.stdout.splitlines()[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    assert rows[f"v1beta1.{group}"][1:4] == [f"{ns}/noeps", "False", "(MissingEndpoints)"]
    assert rows["v1.apps"][1:3] == ["Local", "True"]
    got = kubectl("api-resources")  # kubectl 1.32 drops a stale group silently
    assert got.returncode == 0, got.stderr
    assert group not in got.stdout + got.stderr
    assert "deployments" in got.stdout and "apiservices" in got.stdout
