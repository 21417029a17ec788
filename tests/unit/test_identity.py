import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import (
    ObjectId,
    group_kind_str,
    group_of,
    object_id,
    parse_group_kind,
    split_api_version,
)


@pytest.mark.parametrize(
    ("api_version", "expected"),
    [("v1", ("", "v1")), ("apps/v1", ("apps", "v1")), ("apps/v1beta1", ("apps", "v1beta1")), ("example.com/v1alpha1", ("example.com", "v1alpha1"))],
)
def test_split_api_version(api_version, expected):
    assert split_api_version(api_version) == expected


@pytest.mark.parametrize("bad", [None, "", 3, ["v1"]])
def test_split_api_version_rejects_non_strings(bad):
    with pytest.raises(ValueError, match="apiVersion"):
        split_api_version(bad)


def test_identity_uses_group_not_version():
    v1 = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}}
    beta = {"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}}
    assert object_id(v1) == object_id(beta) == ObjectId("apps", "Deployment", "prod", "web")
    assert group_of("v1") == ""


def test_object_id_namespace_override_and_cluster_scope():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}
    assert object_id(ns) == ObjectId("", "Namespace", "", "prod")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}
    assert object_id(cm, namespace="") == ObjectId("", "ConfigMap", "", "c")
    assert object_id(cm, namespace="y").namespace == "y"


def test_str_and_group_kind_round_trip():
    oid = ObjectId("apps", "Deployment", "prod", "web")
    assert str(oid) == "Deployment.apps prod/web"
    assert str(ObjectId("", "Namespace", "", "prod")) == "Namespace prod"
    assert group_kind_str("apps", "Deployment") == "Deployment.apps"
    assert group_kind_str("", "ConfigMap") == "ConfigMap"
    assert parse_group_kind("Deployment.apps") == ("apps", "Deployment")
    assert parse_group_kind("Widget.example.com") == ("example.com", "Widget")
    assert parse_group_kind("ConfigMap") == ("", "ConfigMap")
