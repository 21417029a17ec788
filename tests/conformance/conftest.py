"""Fixtures of the conformance tests, over raw HTTP (not the collection's client)."""

import pytest

from .helpers import unique


@pytest.fixture
def api(kube):
    """Admin HTTP client of the cluster under test (the simulator, or a real server)."""
    return kube.http


@pytest.fixture
def ns(api, request):
    """A fresh namespace, ``<NS_PREFIX of the test module>-<6 hex digits>``, deleted afterwards."""
    name = unique(getattr(request.module, "NS_PREFIX", "conf"))
    status, body, _ = api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert status == 201, body
    yield name
    api.request("DELETE", f"/api/v1/namespaces/{name}")
