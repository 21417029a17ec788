"""context.py: what the verbs of one run share (``RunContext``), handed to each verb whole."""

import inspect
import threading

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.apply import Applier
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import RunContext, Verb
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.dryrun import DryRuns
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LockError
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.marks import Marker
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Observer
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import StackOptions
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prune import Pruner

VERBS = (Observer, Applier, Pruner, Marker, DryRuns)


class Lease:
    def __init__(self, lost=False):
        self.proofs, self.lost = [], lost

    def ensure(self, prove=False):
        self.proofs.append(prove)
        if self.lost:
            raise LockError("lost the lock")


@pytest.mark.parametrize("verb", VERBS)
def test_each_verb_takes_the_run_and_nothing_else(verb):
    assert list(inspect.signature(verb).parameters) == ["run"]
    assert issubclass(verb, Verb)


def test_the_verbs_read_the_run_they_share():
    run = RunContext("client", StackOptions("web", prune_grace="1h", concurrency=2))
    observer, pruner, marker = Observer(run), Pruner(run), Marker(run)
    assert (observer.client, observer.stack, pruner.record, marker.opts) == ("client", "web", run.record, run.opts)
    assert run.record.name == "stacksync-web" and run.record.namespace == "kube-system"
    assert pruner.grace == 3600
    run.grace = None  # state absent: the stack goes on purpose, without its grace period
    assert pruner.grace is None and run.opts.grace == 3600
    assert observer.discovery is run.discovery and run.discovery.cache_dir is None


def test_the_lease_is_checked_only_while_the_run_holds_it():
    run = RunContext(None, StackOptions("web"))
    verb = Marker(run)
    verb.ensure_lock(prove=True)  # no Lease held: nothing to check
    run.lock = Lease()
    verb.ensure_lock()
    verb.ensure_lock(prove=True)
    assert run.lock.proofs == [False, True]
    run.lock = Lease(lost=True)
    with pytest.raises(LockError, match="lost the lock"):
        verb.ensure_lock()


def test_the_run_has_its_own_workers_unless_given_a_map():
    run = RunContext(None, StackOptions("web", concurrency=3))
    me = threading.get_ident()
    assert set(run.map(lambda _i: threading.get_ident(), range(6))) - {me}  # worker threads
    run.close()
    given = RunContext(None, StackOptions("web"), map_fn=lambda fn, items: [fn(i) for i in items])
    assert given.pool is None and given.map(lambda i: i * 2, [1, 2]) == [2, 4]
    given.close()


def test_the_manager_hands_its_verbs_one_run():
    m = StackManager(None, "web", progress=lambda *a: None)
    assert m.observer.run is m.run and m.pruner.run is m.run and m.marker.run is m.run
    assert (m.stack, m.opts.stack, m.record.name) == ("web", "web", "stacksync-web")
    m.close()
