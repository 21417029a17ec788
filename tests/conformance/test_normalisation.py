"""What a server stores for real-world-shaped manifests, pinned to kube-apiserver v1.36.

The corpus (``tests/fixtures/realworld``: Deployments with quantities in several notations, probes,
volumes with default-valued fields, Services with defaulted ports, StatefulSets, DaemonSets, Jobs,
CronJobs, Ingresses, HPAs, PDBs, NetworkPolicies, RBAC, webhooks, a CRD with schema defaults and custom
resources relying on them, ConfigMaps and Secrets) is applied with server-side apply; the answers
(spec/data, labels, annotations, managedFields managers/operations/field sets) must equal what a real
kube-apiserver v1.36 answered (``realworld_expected.json``, written by
``python -m tests.conformance.realworld --record KUBECONFIG``). The same tests run on the simulator and,
with STACKSYNC_TEST_KUBECONFIG, on a real server, so a difference fails one of the two.
"""

import json
import secrets
import shutil
import subprocess

import pytest

from .realworld import EXPECTED, Run, diff, kubectl_snapshots, snapshot

RECORDED = json.loads(EXPECTED.read_text())


@pytest.fixture(scope="module")
def corpus(kube):
    """The corpus applied once (server-side apply, manager ``stacksync``): (run, {key: (status, answer)})."""
    run = Run(kube.http)
    try:
        yield run, run.apply_all()
    finally:
        run.cleanup()


def _report(differences):
    return "\n".join(f"{key}:\n  " + "\n  ".join(lines) for key, lines in sorted(differences.items()))


def test_corpus_is_stored_as_the_real_server_stores_it(corpus):
    run, answers = corpus
    assert set(answers) == set(RECORDED["objects"])
    failed = {k: v for k, v in answers.items() if v[0] not in (200, 201)}
    assert not failed, failed
    differences = {}
    for key, (_, body) in answers.items():
        lines = diff(RECORDED["objects"][key], snapshot(body, run.mapping))
        if lines:
            differences[key] = lines
    assert not differences, "stored differently from kube-apiserver v1.36:\n" + _report(differences)


def test_quantities_are_canonical_and_zero_values_omitted(corpus):
    """The normalisations issue 16 is about, spelled out (the recorded snapshots hold them all)."""
    _, answers = corpus
    sts = answers["StatefulSet rw-monitoring/prometheus"][1]["spec"]["template"]["spec"]
    prom = sts["containers"][0]
    assert prom["resources"] == {"limits": {"cpu": "2", "ephemeral-storage": "1536Mi", "memory": "2Gi"},
                                 "requests": {"cpu": "500m", "memory": "1k"}}
    assert sts["containers"][1]["resources"]["limits"] == {"cpu": "1500m", "memory": "134217728"}
    assert "readOnly" not in prom["volumeMounts"][0] and "subPath" not in prom["volumeMounts"][2]
    assert sts["volumes"][0]["configMap"]["defaultMode"] == 420
    web = answers["Deployment rw-app/web"][1]["spec"]
    assert "minReadySeconds" not in web
    assert web["template"]["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
    applied = next(e for e in answers["Deployment rw-app/web"][1]["metadata"]["managedFields"] if e["manager"] == "stacksync")
    assert "f:minReadySeconds" in applied["fieldsV1"]["f:spec"]  # owned although the value is not stored


def test_custom_resources_get_their_schema_defaults(corpus):
    _, answers = corpus
    spec = answers["ScrapeConfig rw-monitoring/node-exporter"][1]["spec"]
    assert spec["interval"] == "30s" and spec["scheme"] == "HTTP" and spec["honorLabels"] is False and spec["sampleLimit"] == 0
    assert spec["tls"] == {"insecureSkipVerify": False}
    assert [t["weight"] for t in spec["targets"]] == [1, 3]
    assert spec["relabelings"][0]["action"] == "replace" and spec["relabelings"][1]["action"] == "keep"
    assert spec["port"] == "web" and answers["ScrapeConfig rw-monitoring/kubelet"][1]["spec"]["port"] == 10250  # int-or-string kept


def test_reapplying_the_corpus_writes_nothing(corpus):
    run, _ = corpus
    # the real server's first apply to an object that has no managedFields (a Namespace created by apply
    # with nothing but its name) gives its fields to "before-first-apply", a write; after that, none
    assert sorted(run.reapply_writes()) == RECORDED["reapply_writes"]
    writes = run.reapply_writes()
    assert writes == {}, _report(writes)


def test_git_edits_apply_as_on_the_real_server(corpus):
    """A later commit: items removed from list-maps (env, volumeMounts, volumes, Service ports, CR targets),
    a field dropped, data keys removed and added, quantities changed; and a commit that only writes the
    same values in other notations, which must not write at all."""
    run, _ = corpus
    steps = run.edit_and_apply_steps()
    assert [k for k, _ in steps] == [k for k, _, _ in RECORDED["edits"]]
    differences = {}
    for i, ((key, (snap, wrote)), (_, expected, expected_wrote)) in enumerate(zip(steps, RECORDED["edits"])):
        lines = diff(expected, snap)
        if wrote != expected_wrote:
            lines.append(f"wrote: {wrote}, the real server: {expected_wrote}")
        if lines:
            differences[f"{i}: {key}"] = lines
    assert not differences, "edits applied differently from kube-apiserver v1.36:\n" + _report(differences)
    assert RECORDED["edits"][0][2] is False  # same values, other notations: no write


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_field_managers_as_the_real_server_records_them(kube, tmp_path):
    """kubectl apply (client-side), create -f, label, annotate, patch, edit, replace, scale, set image:
    each command's manager, operation and field set, and what the objects hold after them."""
    got = kubectl_snapshots(kube.http, kube.kubeconfig, str(tmp_path))
    differences = {}
    for key, expected in RECORDED["kubectl"].items():
        lines = diff(expected, got.get(key))
        if lines:
            differences[key] = lines
    assert not differences, "kubectl's writes recorded differently from kube-apiserver v1.36:\n" + _report(differences)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_client_side_apply_of_the_corpus(kube, tmp_path):
    """The corpus written with ``kubectl apply -f`` (Update operations: the defaults the server fills in are
    owned by ``kubectl-client-side-apply``, unlike with server-side apply)."""
    run = Run(kube.http)
    try:
        got = run.kubectl_apply_all(kube.kubeconfig, str(tmp_path))
    finally:
        run.cleanup()
    assert set(got) == set(RECORDED["client_side_apply"])
    differences = {}
    for key, expected in RECORDED["client_side_apply"].items():
        lines = diff(expected, got[key])
        if lines:
            differences[key] = lines
    assert not differences, "kubectl apply -f stored differently from kube-apiserver v1.36:\n" + _report(differences)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_create_configmap_dry_run_server(kube, tmp_path):
    """kubectl's typed client sends a protobuf body: the server decodes it, answers the dry-run object and
    stores nothing."""
    name = f"pb-{secrets.token_hex(3)}"
    proc = subprocess.run(["kubectl", "--kubeconfig", kube.kubeconfig, "--cache-dir", str(tmp_path), "-n", "default", "create", "configmap",
                           name, "--from-literal=a=b", "--from-literal=empty=", "--dry-run=server", "-o", "json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    assert obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == name and obj["metadata"]["namespace"] == "default"
    assert obj["data"] == {"a": "b", "empty": ""}
    assert obj["metadata"]["uid"] and "resourceVersion" not in obj["metadata"]
    status, _, _ = kube.http.get(f"/api/v1/namespaces/default/configmaps/{name}")
    assert status == 404


UNDECLARED = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "undeclared", "bogusMeta": 1},
              "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                  "containers": [{"name": "c", "image": "x", "typo": True, "resources": {"limitz": {}}, "ports": [{"containerPort": 80, "nme": "p"}]}],
                  "volumes": [{"name": "v", "emptyDir": {"x": 1}}]}}}}


def test_undeclared_fields_as_the_real_server_treats_them(corpus):
    """Fields no schema declares: server-side apply refuses them (500, structured-merge-diff paths); a create
    drops them with a warning per field, or refuses them with fieldValidation=Strict (what kubectl sends);
    custom resources alike, by their CRD's structural schema."""
    run, _ = corpus
    ns = run.mapping["rw-app"]
    api = run.api
    body = json.loads(json.dumps(UNDECLARED))
    body["metadata"]["namespace"] = ns
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    status, answer, _ = api.apply(f"{path}/undeclared", body, dryRun="All")
    assert status == 500 and "reason" not in answer, answer
    prefix = f"failed to create typed patch object ({ns}/undeclared; apps/v1, Kind=Deployment): errors:\n  "
    assert answer["message"].startswith(prefix), answer
    reported = answer["message"][len(prefix):].split("\n  ")
    # the real validator stops visiting a map at its first undeclared field, in Go's random map order: the
    # fields nested below a container's own undeclared "typo" may or may not be reported
    always = ['.metadata.bogusMeta', '.spec.template.spec.containers[name="c"].typo', '.spec.template.spec.volumes[name="v"].emptyDir.x']
    maybe = ['.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"].nme',
             '.spec.template.spec.containers[name="c"].resources.limitz']
    assert {p + ": field not declared in schema" for p in always} <= set(reported) <= {p + ": field not declared in schema" for p in always + maybe}
    unknown = ["metadata.bogusMeta", "spec.template.spec.containers[0].typo", "spec.template.spec.containers[0].resources.limitz",
               "spec.template.spec.containers[0].ports[0].nme", "spec.template.spec.volumes[0].emptyDir.x"]
    status, answer, headers = api.request("POST", path, body, dryRun="All")
    assert status == 201, answer
    assert headers.get("Warning") == ", ".join("299 - " + json.dumps(f'unknown field "{p}"') for p in unknown)
    container = answer["spec"]["template"]["spec"]["containers"][0]
    assert "typo" not in container and container["resources"] == {} and container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    status, answer, headers = api.request("POST", path, body, dryRun="All", fieldValidation="Strict")
    assert status == 400 and answer["reason"] == "BadRequest", answer
    assert answer["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
                                 + ", ".join(f'unknown field "{p}"' for p in unknown))
    status, answer, headers = api.request("POST", path, body, dryRun="All", fieldValidation="Ignore")
    assert status == 201 and headers.get("Warning") is None
    group = run.mapping["rw.stacksync.io/v1alpha1"]
    custom = {"apiVersion": group, "kind": "ScrapeConfig", "metadata": {"name": "undeclared", "namespace": run.mapping["rw-monitoring"]},
              "spec": {"interval": "1m", "bogus": 1, "tls": {"x": 2}, "extra": {"free": 1}}}
    cpath = f"/apis/{group}/namespaces/{run.mapping['rw-monitoring']}/scrapeconfigs"
    status, answer, _ = api.apply(f"{cpath}/undeclared", custom, dryRun="All")
    assert status == 500 and "Kind=ScrapeConfig): " in answer["message"], answer
    reported = answer["message"].split("Kind=ScrapeConfig): ", 1)[1].removeprefix("errors:\n  ").split("\n  ")
    assert ".spec.bogus: field not declared in schema" in reported
    assert set(reported) <= {".spec.bogus: field not declared in schema", ".spec.tls.x: field not declared in schema"}
    status, answer, headers = api.request("POST", cpath, custom, dryRun="All")
    assert status == 201 and headers.get("Warning") == '299 - "unknown field \\"spec.bogus\\"", 299 - "unknown field \\"spec.tls.x\\""'
    assert answer["spec"]["tls"] == {"insecureSkipVerify": False} and answer["spec"]["extra"] == {"free": 1} and "bogus" not in answer["spec"]


@pytest.mark.parametrize("ctype", ["application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json"])
def test_undeclared_fields_in_a_patch(kube, ctype):
    """A patch whose result has an undeclared field: dropped with a warning, or 422 with fieldValidation=Strict."""
    api = kube.http
    name = f"patched-{secrets.token_hex(3)}"
    path = "/api/v1/namespaces/default/configmaps"
    status, body, _ = api.request("POST", path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}})
    assert status == 201, body
    try:
        patch = [{"op": "add", "path": "/dta", "value": {"x": "y"}}] if ctype.startswith("application/json-patch") else {"dta": {"x": "y"}}
        status, body, headers = api.request("PATCH", f"{path}/{name}", patch, content_type=ctype, dryRun="All")
        assert status == 200 and "dta" not in body and body["data"] == {"a": "b"}, body
        assert headers.get("Warning") == '299 - "unknown field \\"dta\\""'
        status, body, _ = api.request("PATCH", f"{path}/{name}", patch, content_type=ctype, dryRun="All", fieldValidation="Strict")
        assert status == 422 and body["reason"] == "Invalid", body
        assert body["message"].startswith(' "" is invalid: patch: Invalid value: ') and body["message"].endswith(': strict decoding error: unknown field "dta"')
        assert body["details"]["causes"][0]["field"] == "patch"
        status, _, headers = api.request("PATCH", f"{path}/{name}", patch, content_type=ctype, dryRun="All", fieldValidation="Ignore")
        assert status == 200 and headers.get("Warning") is None
    finally:
        api.request("DELETE", f"{path}/{name}")


def test_daemonset_template_generation_annotation(kube):
    """The DaemonSet strategy keeps its template generation in an annotation: 1 on create, +1 per pod template
    change, never what a writer puts there."""
    api = kube.http
    name = f"ds-{secrets.token_hex(3)}"
    path = f"/apis/apps/v1/namespaces/default/daemonsets/{name}"
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}},
                                                                            "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}
    key = "deprecated.daemonset.template.generation"
    try:
        seen = []
        for change in (None, ("image", "x:2"), ("minReadySeconds", 5), ("annotation", "9")):
            if change and change[0] == "image":
                ds["spec"]["template"]["spec"]["containers"][0]["image"] = change[1]
            elif change and change[0] == "minReadySeconds":
                ds["spec"]["minReadySeconds"] = change[1]
            elif change:
                ds["metadata"]["annotations"] = {key: change[1]}
            status, body, _ = api.apply(path, ds)
            assert status in (200, 201), body
            seen.append(body["metadata"]["annotations"][key])
        assert seen == ["1", "2", "2", "2"]
    finally:
        api.request("DELETE", path)


def test_service_update_keeps_allocated_node_port(kube):
    """A PUT without the allocated nodePort keeps it (same port and protocol); a new port gets one; the
    writer owns neither (nor the cluster IP)."""
    api = kube.http
    name = f"np-{secrets.token_hex(3)}"
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
           "spec": {"type": "NodePort", "selector": {"app": name}, "ports": [{"name": "http", "port": 80}]}}
    status, created, _ = api.request("POST", "/api/v1/namespaces/default/services", svc)
    assert status == 201, created
    try:
        allocated = created["spec"]["ports"][0]["nodePort"]
        assert 30000 <= allocated <= 32767
        svc["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
        svc["spec"]["ports"].append({"name": "https", "port": 443})
        status, updated, _ = api.request("PUT", f"/api/v1/namespaces/default/services/{name}", svc)
        assert status == 200, updated
        ports = updated["spec"]["ports"]
        assert ports[0]["nodePort"] == allocated and 30000 <= ports[1]["nodePort"] <= 32767 and ports[1]["nodePort"] != allocated
        assert updated["spec"]["clusterIP"] == created["spec"]["clusterIP"]
        owned = updated["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
        assert "f:clusterIP" not in owned and "f:ipFamilies" not in owned
        assert all("f:nodePort" not in item for item in owned["f:ports"].values() if isinstance(item, dict))
    finally:
        api.request("DELETE", f"/api/v1/namespaces/default/services/{name}")
