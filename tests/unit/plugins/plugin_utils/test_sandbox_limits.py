"""sandbox_limits.py: a render's sandboxed templates render in a child process whose CPU time and memory are bounded,
so that what the sandbox's checks do not foresee fails the template, not the controller."""

import threading
import time

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sandbox as S
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sandbox_limits as L

pytestmark = pytest.mark.skipif(not L._CAN_FORK, reason="no os.fork or resource module here: rendered in-process")


@pytest.fixture
def templates(tmp_path):
    made = []

    def make(**kwargs):
        made.append(L.BoundedTemplates(str(tmp_path), {"name": "web"}, 100000, **kwargs))
        return made[-1]

    yield make
    for t in made:
        t.close()


def failure(templates, text, tmp_path, **kwargs):
    with pytest.raises(S.TemplateFailure) as info:
        templates(**kwargs)(text, str(tmp_path / "t.yaml.j2"))
    return info.value


def test_templates_render_in_one_process_as_they_would_here(templates, tmp_path):
    text = "name: {{ name | upper }}\n{% for i in range(3) %}- {{ i }}\n{% endfor %}"
    bounded = templates()
    expected = S.render_template(text, str(tmp_path / "t.yaml.j2"), str(tmp_path), {"name": "web"}, 100000)
    assert [bounded(text, str(tmp_path / "t.yaml.j2")) for _ in range(3)] == [expected] * 3
    pid = bounded._child[0]
    # its refusals and errors come back as they are, with their line; the same process renders the next
    err = failure(lambda: bounded, "a\n{{ lookup('pipe', 'id') }}\n", tmp_path)
    assert err.problem.startswith("template refused: 'lookup'") and err.line == 2
    assert bounded("{{ name }}", str(tmp_path / "u.j2")) == "web" and bounded._child[0] == pid
    bounded.close()
    assert bounded._child is None and bounded("{{ name }}!", str(tmp_path / "u.j2")) == "web!"  # a new one if asked again


@pytest.mark.parametrize("text", [
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",  # nested loops
    "{{ ('a' * 40 + '!') is match('(a+)+$') }}",  # a regular expression that backtracks for ever
])
def test_templates_that_do_not_end_are_stopped_at_the_cpu_limit(templates, tmp_path, text):
    started = time.monotonic()
    err = failure(templates, text, tmp_path, cpu_seconds=1)
    assert "the templates of this render used more than 1 s of CPU" in err.problem and "trusted: true" in err.problem
    assert time.monotonic() - started < 30


def test_a_template_that_builds_what_the_checks_do_not_foresee_is_stopped_at_the_memory_limit(templates, tmp_path):
    # str.translate is not bounded by the sandbox: 30,000 characters for each of 50,000 (1.5 GB)
    err = failure(templates, "{{ ('x' * 50000).translate({120: 'y' * 30000}) | length }}", tmp_path,
                  memory=200 * 2 ** 20)
    assert "it needed more than 200 MB of memory" in err.problem, err.problem


def test_the_parents_threads_go_on_while_templates_render(templates, tmp_path):
    ticks, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        bounded = templates()
        assert [bounded("{{ name }}-" + str(i), str(tmp_path / "t.j2")) for i in range(5)] == [f"web-{i}" for i in range(5)]
    finally:
        stop.set()
        thread.join()
    assert ticks


def test_a_process_that_does_not_answer_is_ended(templates, tmp_path, monkeypatch):
    monkeypatch.setattr(L, "ANSWER_GRACE", 1)
    bounded = templates(cpu_seconds=1)
    monkeypatch.setattr(L.BoundedTemplates, "_rendered", lambda self, text, path: time.sleep(3600))  # waits, no CPU
    started = time.monotonic()
    with pytest.raises(S.TemplateFailure, match="its rendering process did not answer within 3 s"):
        bounded("{{ name }}", str(tmp_path / "t.j2"))
    assert time.monotonic() - started < 30 and bounded._child is None


@pytest.mark.skipif(not L.os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_the_templates_process_holds_none_of_its_parents_files(templates, tmp_path):
    """Whatever a template might reach beyond the sandbox, its process has no descriptor of its parent's (a
    kubeconfig or a vault password file it read, the connection to the API server): its pipes, /dev/null."""
    secret = tmp_path / "secret"
    secret.write_text("token")
    with open(secret) as held:
        bounded = templates()
        assert bounded("{{ name }}", str(tmp_path / "t.j2")) == "web"
        pid = bounded._child[0]
        fds = L.os.listdir(f"/proc/{pid}/fd")
        targets = sorted(L.os.readlink(f"/proc/{pid}/fd/{fd}") for fd in fds)
        assert len(fds) == 5, targets  # 0, 1, 2 on /dev/null and the two pipes
        assert targets.count(L.os.devnull) == 3 and all(t.startswith("pipe:") for t in targets if t != L.os.devnull)
        assert str(secret) not in targets and held.fileno() > 2
