"""gcpause.py: the garbage collector paused for the engine's bulk steps, and as it was after them."""

import gc

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import gcpause


@pytest.fixture
def collector():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_switches_the_collector_off_and_back_on(collector):
    with gcpause.paused():
        assert not gc.isenabled()
        with gcpause.paused():  # nested: the outer one switches it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_paused_leaves_a_collector_that_was_off_off(collector):
    gc.disable()
    with gcpause.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_gc_paused_decorator_restores_the_collector_after_an_error(collector):
    @gcpause.gc_paused
    def step(fail):
        """A step."""
        assert not gc.isenabled()
        if fail:
            raise ValueError("boom")
        return 42

    assert step(False) == 42 and gc.isenabled()
    with pytest.raises(ValueError):
        step(True)
    assert gc.isenabled()
    assert step.__name__ == "step" and step.__doc__ == "A step."
