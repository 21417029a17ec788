"""Drift done right (issue 16), on the simulator and on a real server (``make test-real``).

A. a resync of real-world manifests writes nothing; B. objects adopted from ``kubectl`` converge to
git; C. out-of-band additions by people's tools are reverted, controllers' fields are not touched.
"""

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH
from ansible_collections.stacksync.k8s.plugins.plugin_utils.render import render

from tests.reliability import helpers as H

REALWORLD = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
#: the ``ns`` fixture (tests/conftest.py) names its namespaces drift-<random>
NS_PREFIX = "drift"


def kubectl(kube, *args, stdin=None):
    proc = subprocess.run(["kubectl", "--kubeconfig", str(kube.kubeconfig), *args], input=stdin, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def sync(client, stack, resources, ns, **kw):
    kw.setdefault("poll_interval", 0.2)
    return StackManager(client, stack, namespace=ns, record_namespace=ns, **kw).sync(resources)


def writes_during(client, fn):
    """``(result, [(method, path)] of the writes fn made)``."""
    with H.recording(client) as seen:
        return fn(), seen


def cm(name, ns, labels=None, annotations=None, **data):
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def get_cm(admin, ns, name):
    return admin.get(f"/api/v1/namespaces/{ns}/configmaps/{name}")


# -- A. real-world manifests resync to nothing -----------------------------------------------------------
def test_realworld_corpus_resync_writes_nothing(admin):
    manifests = []
    for tree in sorted(p for p in REALWORLD.iterdir() if p.is_dir()):
        manifests.extend(render(str(tree), root=str(REALWORLD)))
    stack = "realworld-" + uuid.uuid4().hex[:6]
    try:
        first = StackManager(admin, stack, record_namespace="default", poll_interval=0.2).sync(manifests)
        assert first.counts["created"] + first.counts["configured"] == len(manifests), first.result()
        second, writes = writes_during(
            admin, lambda: StackManager(admin, stack, record_namespace="default", poll_interval=0.2).sync(manifests))
        assert not second.changed and second.counts["unchanged"] == len(manifests), [
            (e["kind"], e["name"], e.get("drift")) for e in second.applied if e["action"] != "unchanged"]
        assert writes == [], writes
    finally:
        StackManager(admin, stack, record_namespace="default", poll_interval=0.2).delete_all()


# -- B. adoption -----------------------------------------------------------------------------------------------
def test_configmap_adopted_from_client_side_apply_loses_what_git_removed(kube, admin, ns):
    kubectl(kube, "apply", "-f", "-", stdin=json.dumps(cm("app", ns, labels={"team": "x"}, annotations={"note": "y"},
                                                              a="1", b="2")))
    assert "kubectl.kubernetes.io/last-applied-configuration" in get_cm(admin, ns, "app")["metadata"]["annotations"]
    stack = "adopt-" + uuid.uuid4().hex[:6]
    cs = sync(admin, stack, [cm("app", ns, a="1")], ns)
    assert cs.changed
    live = get_cm(admin, ns, "app")
    assert live["data"] == {"a": "1"}
    assert "team" not in (live["metadata"].get("labels") or {})
    annotations = live["metadata"].get("annotations") or {}
    assert "note" not in annotations and "kubectl.kubernetes.io/last-applied-configuration" not in annotations
    cs, writes = writes_during(admin, lambda: sync(admin, stack, [cm("app", ns, a="1")], ns))
    assert not cs.changed and writes == []


def test_deployment_created_with_kubectl_create_loses_env_and_label_removed_from_git(kube, admin, ns):
    def deploy(env, labels):
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": ns, "labels": labels},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "env": env,
                                                               "resources": {"requests": {"cpu": "100m",
                                                                                          "memory": "64Mi"}}}]}}}}
    kubectl(kube, "create", "-f", "-", stdin=json.dumps(deploy([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                                                                {"app": "web", "extra": "yes"})))
    stack = "adoptd-" + uuid.uuid4().hex[:6]
    want = deploy([{"name": "A", "value": "1"}], {"app": "web"})
    sync(admin, stack, [want], ns)
    live = admin.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web")
    assert [e["name"] for e in live["spec"]["template"]["spec"]["containers"][0]["env"]] == ["A"]
    assert "extra" not in live["metadata"]["labels"]
    cs, writes = writes_during(admin, lambda: sync(admin, stack, [want], ns))
    assert not cs.changed and writes == []


def test_helm_release_migrated_as_documented_loses_helm_marks_only_with_helm_taken_over(kube, admin, ns):
    """docs/adoption.md, From Helm: Helm 3 writes as the Update manager ``helm``, not taken over by default."""
    marks = {"labels": {"app": "foo", "app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "foo-1.0"},
             "annotations": {"meta.helm.sh/release-name": "foo", "meta.helm.sh/release-namespace": ns}}
    kubectl(kube, "create", "--field-manager=helm", "-f", "-", stdin=json.dumps(cm("chart", ns, **marks, a="1", b="2")))
    stack = "helm-" + uuid.uuid4().hex[:6]
    want = [cm("chart", ns, labels={"app": "foo"}, a="1")]
    cs = sync(admin, stack, want, ns)
    assert any("managed by Helm (foo)" in w for w in cs.warnings), cs.warnings
    live = get_cm(admin, ns, "chart")  # by default Helm's fields stay: what the docs tell users to fix
    assert live["data"] == {"a": "1", "b": "2"} and live["metadata"]["labels"]["helm.sh/chart"] == "foo-1.0"
    with_helm = ["kubectl*", "before-first-apply", "OpenAPI-Generator", "helm"]
    sync(admin, stack, want, ns, takeover_managers=with_helm)
    live = get_cm(admin, ns, "chart")
    assert live["data"] == {"a": "1"}
    assert {k: v for k, v in live["metadata"]["labels"].items() if not k.startswith("stacksync.io/")} == {"app": "foo"}
    assert not [k for k in live["metadata"].get("annotations") or {} if k.startswith("meta.helm.sh/")]
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == ["stacksync"]
    cs, writes = writes_during(admin, lambda: sync(admin, stack, want, ns, takeover_managers=with_helm))
    assert not cs.changed and writes == [] and not cs.warnings, cs.warnings


# -- C. out-of-band additions -------------------------------------------------------------------------------
def test_out_of_band_label_annotation_and_patch_are_reverted_after_being_shown(kube, admin, ns):
    stack = "oob-" + uuid.uuid4().hex[:6]
    want = [cm("settings", ns, a="1")]
    sync(admin, stack, want, ns)
    kubectl(kube, "label", "configmap", "settings", "-n", ns, "team=ops")
    kubectl(kube, "annotate", "configmap", "settings", "-n", ns, "note=hand")
    kubectl(kube, "patch", "configmap", "settings", "-n", ns, "--type=merge", "-p", '{"data":{"extra":"x"}}')
    # check mode shows each drift first: object, field path, manager
    preview = sync(admin, stack, want, ns, check_mode=True)
    (entry,) = [e for e in preview.applied if e["name"] == "settings"]
    assert entry["action"] == "configured"
    found = {(d["manager"], f) for d in entry["drift"] for f in d["fields"]}
    assert {("kubectl-label", "metadata.labels.team"), ("kubectl-annotate", "metadata.annotations.note"),
            ("kubectl-patch", "data.extra")} <= found, found
    assert "extra" in get_cm(admin, ns, "settings")["data"]  # check mode changed nothing
    cs = sync(admin, stack, want, ns)
    assert cs.changed
    live = get_cm(admin, ns, "settings")
    assert live["data"] == {"a": "1"} and "team" not in live["metadata"]["labels"]
    assert "note" not in live["metadata"].get("annotations", {})
    cs, writes = writes_during(admin, lambda: sync(admin, stack, want, ns))
    assert not cs.changed and writes == []


def deployment(ns, env, labels, replicas=3):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "env": env,
                                                           "ports": [{"containerPort": 80}]}]}}}}


def diff_of(cs, kind):
    """The diff's after of the one object of ``kind``, without what controllers write after the fact."""
    (entry,) = [d for d in cs.diff if d["after_header"].startswith(kind + " ")]
    after = json.loads(json.dumps(entry["after"]))
    after.pop("status", None)
    after["metadata"].pop("annotations", None)  # the Deployment controller's revision comes later
    return after


def test_check_mode_diff_of_an_adoption_shows_what_the_takeover_removes(kube, admin, ns):
    """The dry-run apply cannot take over, so check mode's diff showed nothing of what the real run removes."""
    kubectl(kube, "create", "-f", "-", stdin=json.dumps(cm("app", ns, labels={"app": "web", "team": "x"}, a="1", b="2")))
    kubectl(kube, "create", "-f", "-", stdin=json.dumps(deployment(ns, [{"name": "A", "value": "1"},
                                                                         {"name": "B", "value": "2"}],
                                                                    {"app": "web", "extra": "yes"})))
    stack = "adoptcheck-" + uuid.uuid4().hex[:6]
    want = [cm("app", ns, labels={"app": "web"}, a="1"), deployment(ns, [{"name": "A", "value": "1"}], {"app": "web"})]
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    version, spec = get_cm(admin, ns, "app")["metadata"]["resourceVersion"], admin.get(path)["spec"]
    preview = sync(admin, stack, want, ns, check_mode=True, diff=True)
    # check mode wrote nothing (the Deployment's status is its controller's: its spec is compared)
    assert get_cm(admin, ns, "app")["metadata"]["resourceVersion"] == version and admin.get(path)["spec"] == spec
    after = diff_of(preview, "ConfigMap")
    assert after["data"] == {"a": "1"} and "team" not in after["metadata"]["labels"], after
    (entry,) = [e for e in preview.applied if e["kind"] == "ConfigMap"]
    assert ("kubectl-create", "data.b") in {(d["manager"], f) for d in entry["drift"] for f in d["fields"]}, entry
    cs = sync(admin, stack, want, ns, diff=True)
    for kind in ("ConfigMap", "Deployment.apps"):  # what check mode showed is what the run did, defaults included
        assert diff_of(preview, kind) == diff_of(cs, kind), kind
    env = diff_of(cs, "Deployment.apps")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "A", "value": "1"}]
    cs, writes = writes_during(admin, lambda: sync(admin, stack, want, ns))
    assert not cs.changed and writes == []


def test_a_value_edited_by_hand_is_written_back(kube, admin, ns):
    stack = "edit-" + uuid.uuid4().hex[:6]
    want = [cm("settings", ns, a="1")]
    sync(admin, stack, want, ns)
    kubectl(kube, "patch", "configmap", "settings", "-n", ns, "--type=merge", "-p", '{"data":{"a":"changed"}}')
    cs = sync(admin, stack, want, ns)
    assert cs.changed and get_cm(admin, ns, "settings")["data"] == {"a": "1"}


def test_a_controllers_fields_are_left_alone(admin, ns):
    stack = "ctl-" + uuid.uuid4().hex[:6]
    want = [cm("settings", ns, a="1")]
    sync(admin, stack, want, ns)
    admin.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/settings", params={"fieldManager": "my-operator"},
                  body={"metadata": {"labels": {"operator.example.com/seen": "yes"}}}, content_type=MERGE_PATCH)
    cs, writes = writes_during(admin, lambda: sync(admin, stack, want, ns))
    assert not cs.changed and writes == []
    assert get_cm(admin, ns, "settings")["metadata"]["labels"]["operator.example.com/seen"] == "yes"


def test_an_autoscalers_replicas_are_kept_unless_git_sets_them(admin, ns):
    """docs/adoption.md, Autoscalers: the HPA controller scales through the scale subresource."""
    stack = "hpa-" + uuid.uuid4().hex[:6]
    omits = deployment(ns, [], {"app": "web"})
    del omits["spec"]["replicas"]
    sets = json.loads(json.dumps(omits).replace('"web"', '"fixed"'))
    sets["spec"]["replicas"] = 2
    sync(admin, stack, [omits, sets], ns)

    def scale(name, replicas, manager="kube-controller-manager"):
        admin.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale",
                      params={"fieldManager": manager}, body={"spec": {"replicas": replicas}},
                      content_type=MERGE_PATCH)

    def replicas(name):
        return admin.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}")["spec"]["replicas"]

    scale("web", 5)
    scale("fixed", 5)
    cs = sync(admin, stack, [omits, sets], ns)
    assert [(e["name"], e["action"]) for e in cs.applied] == [("web", "unchanged"), ("fixed", "configured")]
    assert (replicas("web"), replicas("fixed")) == (5, 2)  # git's value written back: they fight
    scale("fixed", 4)
    del sets["spec"]["replicas"]  # git hands replicas to the autoscaler after it scaled: its value stays
    sync(admin, stack, [omits, sets], ns)
    assert replicas("fixed") == 4
    cs, writes = writes_during(admin, lambda: sync(admin, stack, [omits, sets], ns))
    assert not cs.changed and writes == []
    scale("web", 6, manager="kubectl")  # kubectl scale: kept too while git leaves replicas out
    cs, writes = writes_during(admin, lambda: sync(admin, stack, [omits, sets], ns))
    assert not cs.changed and writes == [] and replicas("web") == 6


def test_a_value_git_sets_inside_a_list_item_is_written_back_whoever_changed_it(admin, ns):
    """README, Drift: a field git sets that the stack no longer owns is applied again, inside list items too (a
    container's image changed by a bot, a webhook's caBundle injected over the one git sets)."""
    stack = "item-" + uuid.uuid4().hex[:6]
    want = [deployment(ns, [{"name": "A", "value": "1"}], {"app": "web"})]
    sync(admin, stack, want, ns)
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    admin.request("PATCH", path, params={"fieldManager": "image-bot"}, content_type="application/json-patch+json",
                  body=[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:9"}])
    cs = sync(admin, stack, want, ns)
    (entry,) = cs.applied
    assert entry["action"] == "configured", entry
    assert entry["drift"][0]["fields"] == ["spec.template.spec.containers[name=web].image"], entry
    assert admin.get(path)["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    cs, writes = writes_during(admin, lambda: sync(admin, stack, want, ns))
    assert not cs.changed and writes == []


def test_takeover_managers_option_adds_in_house_tools(admin, ns):
    stack = "tool-" + uuid.uuid4().hex[:6]
    want = [cm("settings", ns, a="1")]
    sync(admin, stack, want, ns)
    admin.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/settings", params={"fieldManager": "acme-deployer"},
                  body={"data": {"extra": "x"}}, content_type=MERGE_PATCH)
    assert not sync(admin, stack, want, ns).changed  # not a people's tool by default
    cs = sync(admin, stack, want, ns, takeover_managers=["kubectl*", "acme-*:Update"])
    assert cs.changed and get_cm(admin, ns, "settings")["data"] == {"a": "1"}


# -- policies -----------------------------------------------------------------------------------------------------
def test_prune_disabled_keeps_the_object_once_removed_from_git(admin, ns):
    stack = "pol-" + uuid.uuid4().hex[:6]
    keep = cm("keep", ns, annotations={"stacksync.io/prune": "disabled"}, a="1")
    sync(admin, stack, [keep, cm("other", ns)], ns)
    keep2 = cm("keep", ns, annotations={"stacksync.io/prune": "disabled"}, a="2")
    sync(admin, stack, [keep2, cm("other", ns)], ns)
    assert get_cm(admin, ns, "keep")["data"] == {"a": "2"}  # still updated while in git
    cs = sync(admin, stack, [cm("other", ns)], ns)
    assert not cs.pruned and {e["name"]: e["code"] for e in cs.skipped}["keep"] == "prune-disabled"
    assert get_cm(admin, ns, "keep") is not None


def test_if_not_present_creates_then_never_changes(admin, ns):
    stack = "inp-" + uuid.uuid4().hex[:6]
    boot = cm("bootstrap", ns, annotations={"stacksync.io/ssa": "if-not-present"}, token="initial")
    sync(admin, stack, [boot], ns)
    admin.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/bootstrap", params={"fieldManager": "kubectl-edit"},
                  body={"data": {"token": "rotated"}}, content_type=MERGE_PATCH)
    cs, writes = writes_during(admin, lambda: sync(admin, stack, [boot], ns))
    assert get_cm(admin, ns, "bootstrap")["data"] == {"token": "rotated"} and not cs.changed and writes == []


def test_merge_policy_keeps_others_fields(kube, admin, ns):
    stack = "mrg-" + uuid.uuid4().hex[:6]
    want = [cm("shared", ns, annotations={"stacksync.io/ssa": "merge"}, a="1")]
    sync(admin, stack, want, ns)
    kubectl(kube, "label", "configmap", "shared", "-n", ns, "team=ops")
    cs, writes = writes_during(admin, lambda: sync(admin, stack, want, ns))
    assert not cs.changed and writes == []
    assert get_cm(admin, ns, "shared")["metadata"]["labels"]["team"] == "ops"


def test_objects_of_another_deployment_tool_warn_or_fail(admin, ns):
    helm = cm("chart-config", ns, labels={"app.kubernetes.io/managed-by": "Helm"},
              annotations={"meta.helm.sh/release-name": "shop"}, a="1")
    admin.create(f"/api/v1/namespaces/{ns}/configmaps", helm)
    want = [cm("chart-config", ns, a="1")]
    with pytest.raises(StackError, match=r"Helm \(shop\)"):
        writes_during(admin, lambda: sync(admin, "helm-" + uuid.uuid4().hex[:6], want, ns, fail_on_shared=True))
    cs = sync(admin, "helm-" + uuid.uuid4().hex[:6], want, ns)
    assert any("Helm (shop)" in w for w in cs.warnings)


def test_takeover_retries_when_a_controller_writes_the_object_meanwhile(kube, admin, ns):
    stack = "race-" + uuid.uuid4().hex[:6]
    want = [cm("settings", ns, a="1")]
    sync(admin, stack, want, ns)
    kubectl(kube, "label", "configmap", "settings", "-n", ns, "team=ops")
    path = f"/api/v1/namespaces/{ns}/configmaps/settings"
    real = admin.request
    bumped = []

    def request(method, p, *a, **kw):
        if method == "PATCH" and kw.get("content_type") == "application/json-patch+json" and not bumped:
            # a controller writes the object between the list and the takeover: the guard refuses the first try
            bumped.append(real("PATCH", path, params={"fieldManager": "acme-controller"},
                               body={"metadata": {"annotations": {"acme/seen": "1"}}}, content_type=MERGE_PATCH))
        return real(method, p, *a, **kw)

    admin.request = request
    try:
        cs = sync(admin, stack, want, ns)
    finally:
        admin.__dict__.pop("request", None)
    assert bumped and cs.changed
    live = get_cm(admin, ns, "settings")
    assert "team" not in live["metadata"]["labels"] and live["metadata"]["annotations"]["acme/seen"] == "1"
    cs, writes = writes_during(admin, lambda: sync(admin, stack, want, ns))
    assert not cs.changed and writes == []
