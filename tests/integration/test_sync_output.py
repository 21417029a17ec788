"""What a person sees: the output of the common runs of playbook ``stacksync.k8s.sync`` and of the role in a play of
one's own, on the simulator (``tests/tools/golden.py`` runs them once for this module).

The properties first (they hold on every ansible-core): a failed sync fails in the sync task, with the error as its
message and in the summary, next to no code of the collection but the sync task itself. Then the whole output against
the reviewed goldens of tests/golden/ (shown in docs/output.md). An intended change of the output:
``python -m tests.tools.golden --update``, review the diff of tests/golden/ and docs/output.md, commit it with the
change.
"""

import re

import pytest

from tests.tools import golden

pytestmark = pytest.mark.sim_only  # its own simulator; the goldens are the simulator's

SYNC_TASK = "TASK [stacksync.k8s.sync : Fetch, render, apply and prune every source]"
FAILING = ["missing-kubeconfig", "dead-server", "missing-repo", "bad-yaml", "failing-apply", "role"]


@pytest.fixture(scope="module")
def outputs():
    return golden.run_all()


def task_of(output, line):
    """The ``TASK [...]`` banner above ``line`` of ``output``."""
    before = output[:output.index(line)]
    return before[before.rindex("TASK ["):].split("\n", 1)[0].rstrip(" *")


@pytest.mark.parametrize("name", FAILING)
def test_a_failed_sync_fails_in_the_sync_task_with_the_error_as_its_message(outputs, name):
    out = outputs[name]
    fatal = [line for line in out.splitlines() if line.startswith("fatal: [")]
    assert len(fatal) == 1 and task_of(out, fatal[0]) == SYNC_TASK.rstrip(" *"), out
    # its message is the error: the summary's line of the stack says it too
    msg = re.search(r'"msg": "stack demo: (.*?)(?<!\\)"', fatal[0]).group(1)
    error = [line for line in out.splitlines() if line.startswith("    error: ")]
    assert len(error) == 1 and error[0][len("    error: "):12 + 40] in msg.replace("\\n", " "), (error, msg)
    assert "(the error is in" not in out and "in the task's message" not in out
    # no code of the collection but where the sync task is (ansible-core >= 2.19 prints the failed task's origin)
    assert "failed_when" not in out and "Fail if" not in out
    for i, line in enumerate(out.splitlines()):
        if "roles/" in line or "ansible_collections" in line:
            assert line.startswith("Origin: ") and line.endswith("/roles/sync/tasks/main.yml:35:7"), line
            excerpt = out.splitlines()[i + 2:i + 6]
            assert any(x.endswith("- name: Fetch, render, apply and prune every source") for x in excerpt), excerpt
    assert "Traceback" not in out


def test_the_messages_name_the_role_s_variables(outputs):
    assert "(check stacksync_kubeconfig)" in outputs["missing-kubeconfig"]
    assert "set stacksync_recreate_on_immutable or" in outputs["failing-apply"]


def test_a_dead_server_shows_no_urllib3_internals(outputs):
    out = outputs["dead-server"]
    for text in ("urllib3", "HTTPSConnection", "Errno", "ConnectionError"):
        assert text not in out, text


def test_a_rescue_reads_every_stack_s_outcome(outputs):
    out = outputs["role"]
    assert '"msg": "[\'demo\'] failed"' in out and re.search(r"rescued=1 ", out), out


def test_a_fleet_lists_the_failed_cluster_first_and_fails_only_it(outputs):
    out = outputs["fleet"]
    summary = out.split("TASK [Summary of every cluster]", 1)[1].splitlines()
    assert summary[1] == "stacksync: 1 of 2 clusters failed (prod-b), 1 synced", summary
    assert summary[3].split()[:2] == ["prod-b", "demo"] and "FAILED: " in summary[3], summary
    assert summary[4].split()[:2] == ["prod-a", "demo"] and summary[4].endswith(" ok"), summary
    assert re.search(r"^prod-a +: ok=\d+ +changed=0 .* failed=0 ", out, re.M), out
    assert re.search(r"^prod-b +: .* failed=1 ", out, re.M), out


def test_true_progress_lines(outputs):
    said = dict((name, [line.split(": ", 1)[1] for line in out.splitlines()
                        if line.startswith("stacksync [my-cluster] stack demo: ")]) for name, out in outputs.items())
    assert said["first-sync"][0].startswith("applying 6 objects from ") and said["first-sync"][1].startswith("created 6")
    assert said["no-op"] == [said["no-op"][0]] and said["no-op"][0].startswith("unchanged 6 in ")  # nothing announced
    assert said["missing-kubeconfig"] == [said["missing-kubeconfig"][0]]  # no "applying" before it fails
    assert said["prune"][0] == "pruning 1 object"
    table = [line for line in outputs["first-sync"].splitlines() if line.startswith("  demo ")]
    assert " not checked " in table[0]  # the sync did not wait: health was not checked


def test_a_diff_reads_as_yaml_without_our_stamps(outputs):
    out = outputs["check-diff"]
    assert "-  replicas: 2\n+  replicas: 3\n" in out and "-  LOG_LEVEL: info\n+  LOG_LEVEL: debug\n" in out
    assert "stacksync.io/checksum" not in out and "stacksync.io/owner" not in out and '"spec": {' not in out


def test_the_common_runs_print_what_the_goldens_say(outputs):
    recorded = (golden.GOLDEN / "VERSION").read_text().strip()
    if golden.core_version() != recorded:
        pytest.skip(f"the goldens are ansible-core {recorded}'s output (this is {golden.core_version()})")
    problems = golden.compare(outputs)
    assert not problems, "\n".join(problems) + (
        "\n\nThe output changed. If that is intended: python -m tests.tools.golden --update, review the diff, commit it.")
