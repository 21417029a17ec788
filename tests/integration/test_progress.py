"""Progress lines of a long `stacksync.k8s.stack` run, seen with `ansible-playbook -v`.

STACKSYNC_PROGRESS_INTERVAL is set tiny so a few hundred objects on the simulator (or a real
kube-apiserver with STACKSYNC_TEST_KUBECONFIG) are enough to see several lines per phase.
"""

import re
import uuid

from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import Progress
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackManager

try:
    from .test_sync_helpers import client_fixture, localhost_play, module_task, run_play
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import client_fixture, localhost_play, module_task, run_play

N = 300

PLAYBOOK = localhost_play(module_task("stack", {"resources": "{{ resources }}", "allow_empty": True, "max_prune": "100%"}))

NS_PREFIX = "ss-prog"  # tests/conftest.py's ns fixture
client = client_fixture()


def configmaps(n):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:03d}"}, "data": {"i": str(i)}} for i in range(n)]


def run(tmp_path, kube, variables, args, interval):
    played = run_play(tmp_path, PLAYBOOK, dict(variables, kc=kube.kubeconfig), *args, timeout=600,
                      env=dict(ANSIBLE_NOCOLOR="1", STACKSYNC_PROGRESS_INTERVAL=interval))
    return played.result, played.log


def lines(log, stack, verb):
    """``[(done, total, seconds)]`` of the progress lines of ``verb`` in the output."""
    # named as the sources action's lines are: several hosts may sync a stack of one name at once
    pattern = re.compile(rf"^stacksync \[localhost\] stack {re.escape(stack)}: {verb} (\d+)/(\d+) objects \((\d+) s\)$",
                         re.M)
    return [tuple(int(x) for x in m.groups()) for m in pattern.finditer(log)]


def test_playbook_verbose_prints_progress_of_apply_and_prune(tmp_path, kube, ns):
    stack = "prog-" + uuid.uuid4().hex[:6]
    variables = dict(stack=stack, ns=ns, resources=configmaps(N))
    result, log = run(tmp_path, kube, variables, ["-v"], "0.02")
    assert result["counts"]["created"] == N
    applied = lines(log, stack, "applied")
    assert len(applied) >= 2, log[-3000:]
    assert applied[-1][:2] == (N, N)  # the end of the phase
    assert [d for d, _t, _s in applied] == sorted(d for d, _t, _s in applied) and {t for _d, t, _s in applied} == {N}
    assert not lines(log, stack, "pruned")

    variables["resources"] = configmaps(N // 3)  # two thirds go
    result, log = run(tmp_path, kube, variables, ["-v"], "0.02")
    assert result["counts"]["pruned"] == N - N // 3
    pruned = lines(log, stack, "pruned")
    assert len(pruned) >= 2 and pruned[-1][:2] == (N - N // 3, N - N // 3), log[-3000:]
    assert not lines(log, stack, "applied")  # the ones kept are unchanged

    variables["resources"] = configmaps(N)
    result, log = run(tmp_path, kube, variables, [], "0.02")  # without -v: quiet
    assert result["counts"]["created"] == N - N // 3
    assert "objects (" not in log


def test_engine_reports_apply_wait_and_prune(kube, client, ns):
    calls = []
    stack = "prog-" + uuid.uuid4().hex[:6]
    kw = dict(namespace=ns, record_namespace=ns, wait=True, allow_empty=True, max_prune="100%", poll_interval=0.1)
    StackManager(client, stack, progress=lambda *a: calls.append(a), **kw).sync(configmaps(40))
    assert [d for v, d, t in calls if v == "applied"] == list(range(1, 41))  # each object, in order
    assert ("ready", 40, 40) in calls
    del calls[:]
    emitted = []
    progress = Progress(emitted.append, interval=0, prefix=f"stack {stack}: ")
    StackManager(client, stack, progress=progress, **kw).sync([])
    assert re.fullmatch(rf"stack {stack}: gone 40/40 objects \(\d+ s\)", emitted[-1]), emitted
    assert f"stack {stack}: pruned 40/40 objects" in "\n".join(emitted)
