"""Unit tests of the simulator's value normalisation (``tests/kubesim/normalise.py``), against values
recorded from kube-apiserver v1.36.2 (``quantities_v1_36.json``). No server needed."""

import json
from pathlib import Path

import pytest

from tests.kubesim.normalise import QuantityError, canonical_quantity, format_quantity, normalise, parse_quantity

RECORDED = json.loads((Path(__file__).parent / "quantities_v1_36.json").read_text())


def _cases(table):
    return [(json.loads(k[4:]) if k.startswith("num:") else k, v) for k, v in RECORDED[table].items()]


@pytest.mark.parametrize(("given", "served"), _cases("sizeLimit_create"))
def test_quantity_as_real_server_on_create(given, served):
    assert canonical_quantity(given) == served


@pytest.mark.parametrize(("given", "served"), _cases("resourceList_create"))
def test_resource_list_as_real_server_on_create(given, served):
    assert canonical_quantity(given, resource_list=True) == served


@pytest.mark.parametrize(("given", "served"), _cases("resourceList_apply"))
def test_resource_list_as_real_server_on_apply(given, served):
    assert canonical_quantity(given, resource_list=True, apply=True) == served


def test_parse_and_format():
    assert parse_quantity("1.5Gi")[:2] == (1610612736, "BinarySI")
    assert format_quantity(parse_quantity("1.5Gi")[0], "BinarySI") == "1536Mi"
    assert format_quantity(parse_quantity("-2000m")[0], "DecimalSI") == "-2"
    for bad in ("", "abc", "1Xi", "1.2.3", "."):
        with pytest.raises(QuantityError):
            parse_quantity(bad)
    with pytest.raises(QuantityError):
        canonical_quantity(True)


def test_normalise_drops_omitempty_zero_values_and_keeps_pointers():
    obj = {"kind": "Deployment", "metadata": {"name": "d", "labels": {}}, "spec": {
        "minReadySeconds": 0, "replicas": 0, "paused": False,
        "template": {"metadata": {"labels": {"a": ""}}, "spec": {
            "hostNetwork": False, "automountServiceAccountToken": False, "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
            "containers": [{"name": "c", "image": "i", "args": [], "env": [{"name": "E", "value": ""}],
                            "resources": {"limits": {"cpu": 2, "memory": "1024Mi"}, "requests": {"cpu": "0.5"}},
                            "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": False, "subPath": ""}],
                            "livenessProbe": {"initialDelaySeconds": 0, "exec": {"command": ["true"]}}}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "0.5Gi"}}, {"name": "h", "hostPath": {"path": "/", "type": ""}}]}}}}
    normalise(obj)
    spec = obj["spec"]
    assert "labels" not in obj["metadata"]
    assert "minReadySeconds" not in spec and "paused" not in spec and spec["replicas"] == 0
    pod = spec["template"]["spec"]
    assert spec["template"]["metadata"]["labels"] == {"a": ""}  # label values are data, never dropped
    assert "hostNetwork" not in pod and pod["automountServiceAccountToken"] is False
    assert pod["securityContext"] == {"runAsUser": 0, "runAsNonRoot": False}
    c = pod["containers"][0]
    assert "args" not in c and c["env"] == [{"name": "E"}]
    assert c["resources"] == {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m"}}
    assert c["volumeMounts"] == [{"name": "v", "mountPath": "/v"}]
    assert c["livenessProbe"] == {"exec": {"command": ["true"]}}
    assert pod["volumes"][0]["emptyDir"] == {"sizeLimit": "512Mi"}
    assert pod["volumes"][1]["hostPath"] == {"path": "/"}  # the type is defaulted back to "" by defaulting


def test_normalise_service_selector_and_hpa_targets():
    svc = normalise({"kind": "Service", "metadata": {}, "spec": {"selector": {}, "clusterIP": "", "type": ""}})
    assert svc["spec"] == {}
    hpa = normalise({"kind": "HorizontalPodAutoscaler", "metadata": {}, "spec": {"metrics": [
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1536Mi"}}}],
        "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}}}})
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageValue"] == "1536Mi"
    assert hpa["spec"]["behavior"]["scaleUp"]["policies"][0]["value"] == 0  # an int field, not a quantity or a string
