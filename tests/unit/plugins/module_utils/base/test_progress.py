"""Unit tests: the progress throttle (injected clock), phase counting, and the wait loops' progress calls."""

import threading
from types import SimpleNamespace

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import (
    DEFAULT_INTERVAL,
    INTERVAL_ENV,
    NO_PROGRESS,
    Progress,
    Steps,
    interval_from_env,
    note,
    paused,
    progress_line,
    tee,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import compile_conditions, wait_for, wait_gone


class Clock:
    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def recorder(interval=5.0, clock=None):
    lines = []
    return Progress(lines.append, interval=interval, prefix="stack web: ", clock=clock or Clock()), lines


def test_a_wait_for_the_lock_is_said_at_once_and_left_out_of_the_times():
    clock = Clock()
    p, lines = recorder(clock=clock)
    note(p, "the stack is locked by another run; waiting up to 300 s for it")
    assert lines == ["stack web: the stack is locked by another run; waiting up to 300 s for it"]
    clock.now += 58
    paused(p, 58)
    p("applied", 1, 522)  # the first object after the wait: no line (the wait was no work)
    clock.now += 6
    p("applied", 200, 522)
    assert lines[1:] == ["stack web: applied 200/522 objects (6 s)"]


def test_tee_tells_each_its_notes_and_pauses_and_plain_callables_nothing():
    calls, a_lines = [], []
    a, a_lines = recorder()
    both = tee(lambda verb, done, total: calls.append((verb, done, total)), a)
    note(both, "waiting")
    paused(both, 3)
    both("applied", 1, 1)
    assert a_lines == ["stack web: waiting"] and calls == [("applied", 1, 1)]
    note(NO_PROGRESS, "nothing")  # a plain callable is told nothing


def test_line_format():
    assert progress_line("stack web: ", "applied", 400, 1000, 12.7) == "stack web: applied 400/1000 objects (12 s)"
    assert progress_line("", "pruned", 0, 3, 0) == "pruned 0/3 objects (0 s)"


def test_nothing_before_the_first_interval():
    clock = Clock()
    progress, lines = recorder(5.0, clock)
    for done in range(1, 11):
        clock.now += 0.4  # 10 objects in 4 s
        progress("applied", done, 10)
    assert lines == []  # a short phase prints nothing, not even its end


def test_at_most_one_line_per_interval_and_the_last_one():
    clock = Clock()
    progress, lines = recorder(5.0, clock)
    for done in range(1, 1001):
        clock.now += 0.03  # 1,000 objects in 30 s
        progress("applied", done, 1000)
    assert lines[0] == "stack web: applied 167/1000 objects (5 s)"
    assert len(lines) == 6  # every 5 s; the end falls on the 6th
    assert lines[-1] == "stack web: applied 1000/1000 objects (30 s)"
    seconds = [int(line.rsplit("(", 1)[1].split()[0]) for line in lines]
    assert seconds == [5, 10, 15, 20, 25, 30]
    progress("applied", 1000, 1000)  # a finished phase says nothing more
    clock.now += 60
    progress("applied", 1000, 1000)
    assert len(lines) == 6


def test_the_end_of_a_phase_that_printed_is_printed():
    clock = Clock()
    progress, lines = recorder(5.0, clock)
    clock.now += 6
    progress("pruned", 1, 3)
    clock.now += 1
    progress("pruned", 2, 3)
    progress("pruned", 3, 3)
    assert lines == ["stack web: pruned 1/3 objects (6 s)", "stack web: pruned 3/3 objects (7 s)"]


def test_phases_share_the_clock_since_the_run_started():
    clock = Clock()
    progress, lines = recorder(2.0, clock)
    clock.now += 3
    progress("applied", 1, 2)
    progress("applied", 2, 2)
    clock.now += 1
    progress("pruned", 1, 5)  # 1 s since the last line: not yet
    clock.now += 1.5
    progress("pruned", 2, 5)
    progress("pruned", 5, 5)
    assert lines == ["stack web: applied 1/2 objects (3 s)", "stack web: applied 2/2 objects (3 s)",
                     "stack web: pruned 2/5 objects (5 s)", "stack web: pruned 5/5 objects (5 s)"]


def test_zero_interval_reports_every_call():
    progress, lines = recorder(0)
    for done in range(1, 4):
        progress("ready", done, 3)
    assert [line.split(": ")[1] for line in lines] == ["ready 1/3 objects (0 s)", "ready 2/3 objects (0 s)", "ready 3/3 objects (0 s)"]


def test_steps_count_from_many_threads():
    calls = []
    lock = threading.Lock()

    def progress(verb, done, total):
        with lock:
            calls.append((verb, done, total))

    step = Steps(progress, "applied", 800)
    threads = [threading.Thread(target=lambda: [step() for _ in range(100)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [done for _v, done, _t in calls] == list(range(1, 801))  # in order
    assert {(v, t) for v, _d, t in calls} == {("applied", 800)}


@pytest.mark.parametrize("value,want", [(None, DEFAULT_INTERVAL), ("0.5", 0.5), ("0", 0.0), ("-1", DEFAULT_INTERVAL),
                                        ("soon", DEFAULT_INTERVAL), ("12", 12.0)])
def test_interval_from_env(value, want):
    env = {} if value is None else {INTERVAL_ENV: value}
    assert interval_from_env(env) == want


def test_no_progress_accepts_the_calls():
    assert NO_PROGRESS("applied", 1, 2) is None


class Objects:
    """A client whose objects change as the clock advances: ``{path: [(from time, object or None)]}``."""

    def __init__(self, clock, timeline):
        self.clock = clock
        self.timeline = timeline

    def get_or_none(self, path):
        current = None
        for since, obj in self.timeline[path]:
            if self.clock() >= since:
                current = obj
        return current


def cm(name, ready):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "web"}, "data": {"ready": ready}}


def desired(name):
    info = SimpleNamespace(object_path=lambda ns, n: f"/api/v1/namespaces/{ns}/configmaps/{n}")
    return SimpleNamespace(oid=ObjectId("", "ConfigMap", "web", name), info=info)


def test_wait_for_reports_how_many_are_ready():
    clock = Clock(0)
    rules = compile_conditions([{"kind": "ConfigMap", "expression": "data.ready == 'yes'"}])
    names = ["a", "b", "c"]
    client = Objects(clock, {f"/api/v1/namespaces/web/configmaps/{n}": [(0, cm(n, "no")), (i * 10, cm(n, "yes"))]
                             for i, n in enumerate(names, 1)})
    calls = []
    errors = wait_for(client, [(desired(n), cm(n, "no")) for n in names], rules, 60, 5, clock=clock, sleep=clock.sleep,
                      progress=lambda *a: calls.append(a))
    assert errors == []
    assert calls == [("ready", 0, 3), ("ready", 0, 3), ("ready", 1, 3), ("ready", 1, 3), ("ready", 2, 3), ("ready", 2, 3),
                     ("ready", 3, 3)]


def test_wait_gone_reports_how_many_are_gone():
    clock = Clock(0)
    paths = [f"/p/{i}" for i in range(3)]
    client = Objects(clock, {p: [(0, {"kind": "x"}), ((i + 1) * 4, None)] for i, p in enumerate(paths)})
    calls = []
    left = wait_gone(client, [(p, p) for p in paths], 60, 2, clock=clock, sleep=clock.sleep, progress=lambda *a: calls.append(a))
    assert left == []
    assert [done for _v, done, _t in calls] == [0, 0, 1, 1, 2, 2, 3] and {v for v, _d, _t in calls} == {"gone"}


def test_tee_calls_each_progress_in_turn():
    from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import tee

    calls = []
    one = tee(lambda *a: calls.append(("a", *a)), None, lambda *a: calls.append(("b", *a)))
    one("applied", 1, 2)
    assert calls == [("a", "applied", 1, 2), ("b", "applied", 1, 2)]
    only = lambda *a: None  # noqa: E731
    assert tee(only, None) is only
