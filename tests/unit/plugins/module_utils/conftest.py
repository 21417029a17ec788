"""Fixtures of the module_utils tests that run on the Kubernetes API simulator."""

import pytest

from .simengine import client_of


@pytest.fixture(scope="module")
def sim_client(kubesim):
    """A client of the simulator, one per test module."""
    c = client_of(kubesim)
    yield c
    c.close()
