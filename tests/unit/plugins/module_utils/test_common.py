"""common.py: credentials inside a kubeconfig given as a mapping are masked like no_log values."""

import json

from ansible_collections.stacksync.k8s.plugins.module_utils.common import (
    MASK,
    credential_values,
    kubeconfig_secrets,
    safe_params,
    summarize_resources,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import ARGUMENT_SPEC

KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "c",
    "clusters": [{"name": "k", "cluster": {"server": "https://k.example:6443", "certificate-authority-data": "Q0E="}}],
    "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    "users": [
        {"name": "u", "user": {"token": "tok-123456", "client-key-data": "S0VZ", "password": "pw-654321"}},
        {"name": "o", "user": {"auth-provider": {"name": "oidc", "config": {"id-token": "idt-1", "refresh-token": "rt-1",
                                                                            "client-secret": "cs-1"}}}},
        {"name": "e", "user": {"exec": {"command": "get-token", "env": [{"name": "TOKEN", "value": "env-secret-1"}]}}},
    ],
}


def test_kubeconfig_secrets_found():
    assert kubeconfig_secrets(KUBECONFIG) == {"tok-123456", "S0VZ", "pw-654321", "idt-1", "rt-1", "cs-1", "env-secret-1"}
    assert kubeconfig_secrets("/path/to/kubeconfig") == set()


def test_safe_params_masks_the_mapping_and_keeps_the_rest():
    params = dict((k, None) for k in ARGUMENT_SPEC)
    params.update(kubeconfig=KUBECONFIG, host="https://user:hostpass-1@k.example", resources=[])
    out = safe_params(params, ARGUMENT_SPEC)
    text = repr(out)
    for secret in kubeconfig_secrets(KUBECONFIG) | {"hostpass-1"}:
        assert secret not in text
    assert out["kubeconfig"]["users"][0]["user"]["token"] == MASK
    assert out["kubeconfig"]["clusters"][0]["cluster"]["server"] == "https://k.example:6443"
    assert KUBECONFIG["users"][0]["user"]["token"] == "tok-123456"  # the caller's mapping is untouched
    assert credential_values(params) == kubeconfig_secrets(KUBECONFIG) | {"user:hostpass-1"}


def test_invocation_lists_objects_by_identity_never_their_content():
    res = [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "app"},
         "data": {"k": "c2VjcmV0"}, "stringData": {"p": "pw"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
        {"kind": "ConfigMap", "metadata": "not a mapping"},
        None,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "ns"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 7, "namespace": ""}},
        {"metadata": {}},
    ]
    out = summarize_resources(res)
    assert out == ["v1 Secret app/s", "v1 Namespace app", "ConfigMap", "(NoneType)", "v1 ConfigMap ns", "v1 ConfigMap 7", ""]
    assert "c2VjcmV0" not in json.dumps(out) and "pw" not in json.dumps(out)
    assert res[0]["data"]["k"] == "c2VjcmV0"  # input untouched
    assert summarize_resources("not a list") == "not a list"


def test_an_approved_plan_is_named_in_the_invocation_not_listed():
    plan = {"format": "stacksync.k8s/plan/v1", "host": "h", "digest": "sha256:ab", "approved": ["apps"],
            "stacks": {"web": {"prune": {"v1 ConfigMap": {"ns": [["c", "uid", "1", "fp"]] * 1000}}}, "apps": {}}}
    out = safe_params({"approved_plan": plan, "resources": []}, ARGUMENT_SPEC)
    assert out["approved_plan"] == {"format": "stacksync.k8s/plan/v1", "host": "h", "digest": "sha256:ab",
                                    "stacks": ["apps", "web"]}
    assert safe_params({"approved_plan": "/plans/h.json"}, ARGUMENT_SPEC)["approved_plan"] == "/plans/h.json"
    assert len(plan["stacks"]["web"]["prune"]["v1 ConfigMap"]["ns"]) == 1000  # the caller's plan is untouched
