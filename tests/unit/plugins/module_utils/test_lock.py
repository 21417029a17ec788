"""lock.py: the Lease lock with an injected clock (renewal, loss, takeover, a second holder)."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.client import ApiError
from ansible_collections.stacksync.k8s.plugins.module_utils.lock import LeaseLock, LockError

from .test_record import FakeApi


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


# -- the lock -----------------------------------------------------------------------------------------
def lock(api, clock, **kw):
    return LeaseLock(api, "ns", "apps", duration=30, timeout=5, poll=1, clock=clock, sleep=lambda s: clock.__setattr__("t", clock.t + s), **kw)


def test_lock_renews_and_stays_held():
    api, clock = FakeApi(), Clock()
    lk = lock(api, clock)
    lk.acquire()
    try:
        clock.t += 20
        assert lk.renew() and lk.lost is None
        clock.t += 20  # 20 s after the last renewal: still ours
        lk.ensure()
    finally:
        lk.release()


def test_lock_lost_when_someone_else_takes_it():
    api, clock = FakeApi(), Clock()
    lk = lock(api, clock)
    lk.acquire()
    try:
        # the lease expires while this run is stalled; a second run takes it over
        clock.t += 31
        other = lock(api, clock).acquire()
        assert other.took_over
        assert not lk.renew()  # the Lease changed under us: 409
        with pytest.raises(LockError, match="lost the lock"):
            lk.ensure()
        other.release()
    finally:
        lk.release()


def test_lock_lost_when_renewals_keep_failing_until_expiry():
    api, clock = FakeApi(), Clock()
    lk = lock(api, clock)
    lk.acquire()
    try:
        api.fail["replace"] = [ApiError(503, "ServiceUnavailable")] * 3
        clock.t += 10
        assert lk.renew() and lk.lost is None  # a transient failure: still within the lease
        clock.t += 10
        lk.ensure()
        clock.t += 12  # 32 s since the last renewal: past the lease duration
        assert not lk.renew() and "renewing Lease" in lk.lost
        with pytest.raises(LockError, match="another run may hold it"):
            lk.ensure()
    finally:
        lk.release()


def test_lock_not_renewed_in_time_is_lost_even_without_an_error():
    api, clock = FakeApi(), Clock()
    lk = lock(api, clock)
    lk.acquire()
    try:
        clock.t += 28  # the renewal thread never ran (a stalled process): 90% of the duration has passed
        with pytest.raises(LockError, match="not renewed for 28s"):
            lk.ensure()
    finally:
        lk.release()


def test_second_holder_waits_then_fails_naming_the_holder():
    api, clock = FakeApi(), Clock()
    first = lock(api, clock).acquire()
    try:
        with pytest.raises(LockError, match="locked by another run"):
            lock(api, clock).acquire()
    finally:
        first.release()
    assert api.objects == {}
