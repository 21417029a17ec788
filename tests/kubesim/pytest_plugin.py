"""pytest fixtures: ``kube`` (real cluster or simulator), ``kubesim``, ``kubesim_factory``; marker ``sim_only``.

``STACKSYNC_TEST_KUBECONFIG`` points ``kube`` at a real cluster (``STACKSYNC_TEST_LIMITED_KUBECONFIG``
optionally at a user without rights); otherwise ``kube`` is a fresh in-process simulator per module.
"""

import os
import tempfile

import pytest

from .client import KubeHTTP, read_kubeconfig
from .simulator import Simulator

ENV_KUBECONFIG = "STACKSYNC_TEST_KUBECONFIG"
ENV_LIMITED = "STACKSYNC_TEST_LIMITED_KUBECONFIG"


class KubeTarget:
    """A cluster to test against. Attribute lookups not found here go to the simulator (if any)."""

    def __init__(self, kubeconfig, server, token, ca_cert, sim=None, limited_kubeconfig=None):
        self.kubeconfig = kubeconfig
        self.server = server
        self.token = token
        self.ca_cert = ca_cert
        self.sim = sim
        self.is_sim = sim is not None
        self.limited_kubeconfig = limited_kubeconfig
        self._http = None

    @property
    def http(self):
        """A :class:`KubeHTTP` client with the admin token."""
        if self._http is None:
            self._http = KubeHTTP(self.server, self.token, self.ca_cert)
        return self._http

    def limited_http(self):
        """A :class:`KubeHTTP` client for the limited user (None if there is none)."""
        if not self.limited_kubeconfig:
            return None
        _, token, _ = read_kubeconfig(self.limited_kubeconfig)
        return KubeHTTP(self.server, token, self.ca_cert)

    def __getattr__(self, name):
        sim = self.__dict__.get("sim")
        if sim is None:
            raise AttributeError(name)
        return getattr(sim, name)


def sim_target(sim):
    """KubeTarget for a started simulator."""
    return KubeTarget(sim.kubeconfig_path, sim.url, sim.token, sim.ca_cert, sim, sim.limited_kubeconfig_path)


def real_target(kubeconfig, tmpdir):
    """KubeTarget for a real cluster's kubeconfig."""
    server, token, ca = read_kubeconfig(kubeconfig, os.path.join(tmpdir, "ca.crt"))
    return KubeTarget(kubeconfig, server, token, ca, None, os.environ.get(ENV_LIMITED) or None)


def running_against_real():
    """True when the suite targets a real cluster."""
    return bool(os.environ.get(ENV_KUBECONFIG))


def pytest_configure(config):
    """Register the ``sim_only`` marker."""
    config.addinivalue_line("markers", "sim_only: needs the simulator (skipped against a real cluster)")


def pytest_runtest_setup(item):
    """Skip ``sim_only`` tests when STACKSYNC_TEST_KUBECONFIG is set."""
    if item.get_closest_marker("sim_only") and running_against_real():
        pytest.skip("simulator-only test (STACKSYNC_TEST_KUBECONFIG is set)")


@pytest.fixture(scope="module")
def kube():
    """The cluster under test: real (STACKSYNC_TEST_KUBECONFIG) or a fresh simulator."""
    if running_against_real():
        with tempfile.TemporaryDirectory(prefix="kube-real-") as d:
            yield real_target(os.environ[ENV_KUBECONFIG], d)
        return
    sim = Simulator(tls=True).start()
    try:
        yield sim_target(sim)
    finally:
        sim.stop()


@pytest.fixture(scope="module")
def kubesim():
    """Always a simulator (KubeTarget; ``.sim`` is the Simulator, its attributes are reachable directly)."""
    sim = Simulator(tls=True).start()
    try:
        yield sim_target(sim)
    finally:
        sim.stop()


@pytest.fixture
def kubesim_factory():
    """Start extra simulators: ``kubesim_factory(**Simulator kwargs)`` -> KubeTarget; all stopped at teardown."""
    started = []

    def make(**kwargs):
        sim = Simulator(**kwargs).start()
        started.append(sim)
        return sim_target(sim)

    yield make
    for sim in started:
        sim.stop()
