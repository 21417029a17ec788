"""lock.py: the Lease lock with an injected clock (renewal, loss, takeover, a second holder)."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LeaseLock, LockError
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

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
        clock.t += 12  # 32 s since the last renewal: past the lease duration (not even tried: it may be another's)
        assert not lk.renew() and "not renewed for 32s" in lk.lost
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


def test_a_run_that_waits_says_once_who_holds_the_lock_and_when_it_expires_and_counts_the_wait_apart():
    api, clock = FakeApi(), Clock()
    first = lock(api, clock).acquire()
    said = []
    second = lock(api, clock, on_wait=said.append)
    clock.t += 27  # the first run stopped renewing 27 s ago (interrupted): its lease of 30 s expires in 3 s
    second.acquire()
    try:
        assert said == [f"stack 'apps' is locked by another run (Lease ns/stacksync-apps held by {first.identity}; it expires in 3 s "
                        "unless that run renews it: a run that was interrupted stops renewing it); waiting up to 5 s "
                        "for it"]
        assert second.took_over and 3 <= second.waited <= 5 and second.held_by in said[0]
    finally:
        second.release()
        first._stop.set()
    third = lock(api, clock)
    third.acquire()
    assert third.waited == 0.0 and third.held_by is None
    third.release()


def test_a_wait_that_times_out_says_who_holds_the_lock_and_which_option_waits():
    api, clock = FakeApi(), Clock()
    first = lock(api, clock).acquire()
    try:
        with pytest.raises(LockError) as err:
            lock(api, clock).acquire()
        assert str(err.value).startswith(f"stack 'apps' is locked by another run (Lease ns/stacksync-apps held by {first.identity}; "
                                          "it expires in ")
        assert str(err.value).endswith("; waited 5 s (wait_timeout)")
    finally:
        first.release()


# -- proofs: the server, not the clock, says the lock is still ours ----------------------------------------
def test_a_proof_writes_the_lease_and_fails_at_once_when_another_run_wrote_it():
    api, clock = FakeApi(), Clock()
    lk = lock(api, clock)
    lk.acquire()
    try:
        lease = api.objects[lk.path]
        lk.ensure(prove=0)  # proved now: a write the server accepted
        assert lk.proofs == 1 and api.objects[lk.path]["metadata"]["resourceVersion"] != lease["metadata"]["resourceVersion"]
        # someone else writes the Lease (a newer run that took it over); our clock still says all is well
        api.replace(lk.path, dict(api.objects[lk.path], spec=dict(api.objects[lk.path]["spec"], holderIdentity="other")))
        clock.t += 1
        lk.ensure()  # the clock alone cannot tell
        with pytest.raises(LockError, match="was changed by someone else"):
            lk.ensure(prove=0)
        with pytest.raises(LockError, match="lost the lock"):
            lk.ensure()
    finally:
        lk.release()


def test_a_recent_accepted_write_is_reused_as_proof_and_an_old_one_is_not():
    api, clock = FakeApi(), Clock()
    lk = lock(api, clock)  # duration 30: proofs are good for 3 s
    lk.acquire()
    try:
        assert lk.proof_age == 3
        clock.t += 2
        lk.ensure(prove=True)
        assert lk.proofs == 0  # the acquisition 2 s ago was a write the server accepted
        clock.t += 1.5
        lk.ensure(prove=True)
        assert lk.proofs == 1
        clock.t += 10
        assert lk.renew()  # a renewal is as good as a proof
        lk.ensure(prove=True)
        assert lk.proofs == 1
    finally:
        lk.release()


def test_a_proof_of_a_deleted_lease_fails_and_other_errors_stop_the_prune_too():
    api, clock = FakeApi(), Clock()
    lk = lock(api, clock)
    lk.acquire()
    try:
        api.fail["replace"] = [ApiError(500, "InternalError", "etcd is down")]
        with pytest.raises(LockError, match=r"cannot prove that this run still holds its lock.*etcd is down"):
            lk.ensure(prove=0)
        assert lk.lost is None  # not known to be lost: the next proof may succeed
        lk.ensure(prove=0)
        del api.objects[lk.path]
        with pytest.raises(LockError, match="changed by someone else"):
            lk.ensure(prove=0)
    finally:
        lk.release()


def test_a_stopped_run_that_outlived_its_lease_stops_even_if_nobody_took_it():
    api, clock = FakeApi(), Clock()
    lk = lock(api, clock)
    lk.acquire()
    try:
        clock.t += 40  # SIGSTOP past the lease: the renewal thread did not run either
        assert not lk.renew()  # the renewal thread wakes first: it does not bring the lock back
        with pytest.raises(LockError, match="not renewed for 40s"):
            lk.ensure(prove=True)
        assert lk.proofs == 0
    finally:
        lk.release()
