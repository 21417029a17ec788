"""identity.py: ObjectId, apiVersion parsing, Kind.group strings."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import (
    ObjectId,
    group_kind_str,
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


def test_str_and_group_kind_round_trip():
    oid = ObjectId("apps", "Deployment", "prod", "web")
    assert str(oid) == "Deployment.apps prod/web"
    assert str(ObjectId("", "Namespace", "", "prod")) == "Namespace prod"
    assert group_kind_str("apps", "Deployment") == "Deployment.apps"
    assert group_kind_str("", "ConfigMap") == "ConfigMap"
    assert parse_group_kind("Deployment.apps") == ("apps", "Deployment")
    assert parse_group_kind("Widget.example.com") == ("example.com", "Widget")
    assert parse_group_kind("ConfigMap") == ("", "ConfigMap")
