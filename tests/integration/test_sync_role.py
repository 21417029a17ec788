"""Role ``stacksync.k8s.sync`` inside an existing play (include_role / import_role), its argument
spec and its documentation."""

import contextlib
import json
import subprocess
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client

try:
    from .test_sync_helpers import BIN, GitRepo, clean_env, configmap, namespace, run_playbook
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import BIN, GitRepo, clean_env, configmap, namespace, run_playbook

PLAY = """
- name: An existing infrastructure play
  hosts: clusters
  connection: local
  gather_facts: false
  vars:
    my_setting: kept
  pre_tasks:
    - name: Something before
      ansible.builtin.set_fact:
        before_sync: true
  tasks:
    - name: Sync with include_role
      ansible.builtin.include_role:
        name: stacksync.k8s.sync
      vars:
        stacksync_repo: "{{ repo_url }}"
        stacksync_path: manifests
        stacksync_stack: "{{ stack }}"
    - name: The play goes on with the results
      ansible.builtin.assert:
        that:
          - before_sync
          - my_setting == 'kept'
          - stacksync_results | length == 1
          - stacksync_results[0].stack == stack
          - stacksync_results[0].commit | length == 40
          - stacksync_results[0].counts.created == (2 if first_run | bool else 0)
          - stacksync_results[0].counts.unchanged == (0 if first_run | bool else 2)
          - stacksync_results[0].failed == false
          # a variable of the role, not also a fact that every later task's variables would copy again
          - ansible_facts.stacksync_results is not defined

- name: Another play imports the role statically
  hosts: clusters
  connection: local
  gather_facts: false
  roles: []
  tasks:
    - name: Sync with import_role
      ansible.builtin.import_role:
        name: stacksync.k8s.sync
      vars:
        stacksync_sources:
          - repo: "{{ repo_url }}"
            path: manifests
            stack: "{{ stack }}"
        stacksync_summary: false
    - name: Nothing changed the second time
      ansible.builtin.assert:
        that:
          - stacksync_results[0].changed == false
          - stacksync_results[0].counts.unchanged == 2
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory, kube):
    tmp = tmp_path_factory.mktemp("sync-role")
    suffix = uuid.uuid4().hex[:6]
    ns = "role-" + suffix
    repo = GitRepo(tmp / "repo")
    repo.write("manifests/ns.yaml", namespace(ns))
    repo.write("manifests/cm.yaml", configmap("settings", ns, {"k": "v"}))
    repo.commit("initial")
    (tmp / "play.yml").write_text(PLAY)
    inventory = tmp / "hosts.yml"
    inventory.write_text(
        "clusters:\n  hosts:\n    the-cluster:\n"
        f"      stacksync_kubeconfig: {kube.kubeconfig}\n      ansible_python_interpreter: {BIN / 'python'}\n")
    variables = {"repo_url": repo.url, "stack": "role-" + suffix, "stacksync_cache_dir": str(tmp / "cache")}
    yield tmp, inventory, variables, ns
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    with contextlib.suppress(Exception):
        client.delete("/api/v1/namespaces/" + ns)


def test_role_included_and_imported_into_an_existing_play(setup, kube):
    tmp, inventory, variables, ns = setup
    run = run_playbook(inventory, dict(variables, first_run=True), playbook=tmp / "play.yml")
    assert run.rc == 0, run.tail()
    assert run.recap["the-cluster"]["failed"] == 0
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    cm = client.get(f"/api/v1/namespaces/{ns}/configmaps/settings")
    assert cm["metadata"]["labels"]["stacksync.io/stack"] == variables["stack"]


DIRECT = """
- name: The module without the role
  hosts: clusters
  connection: local
  gather_facts: false
  tasks:
    - name: Sync with the module
      stacksync.k8s.sources:
        kubeconfig: "{{ stacksync_kubeconfig }}"
        cache_dir: "{{ stacksync_cache_dir }}"
        summary: false
        sources:
          - repo: "{{ repo_url }}"
            path: manifests
            stack: "{{ stack }}"
      register: direct
    - name: Its results are a fact
      ansible.builtin.assert:
        that:
          - direct.stacksync_results is not defined
          - ansible_facts.stacksync_results | length == 1
          - stacksync_results[0].stack == stack
          - stacksync_results[0].failed == false
"""


def test_the_module_without_the_role_sets_the_fact(setup):
    tmp, inventory, variables, _ns = setup
    (tmp / "direct.yml").write_text(DIRECT)
    run = run_playbook(inventory, variables, playbook=tmp / "direct.yml")
    assert run.rc == 0, run.tail()
    assert run.recap["the-cluster"]["failed"] == 0


def test_check_mode_on_a_fresh_stack_changes_nothing(setup, kube, tmp_path):
    _tmp, inventory, variables, ns = setup
    stack = variables["stack"] + "-dry"
    repo = GitRepo(tmp_path / "repo")
    repo.write("manifests/cm.yaml", configmap("dry-run", ns, {"k": "v"}))
    repo.commit("initial")
    run = run_playbook(inventory, dict(variables, stacksync_repo=repo.url, stacksync_path="manifests",
                                       stacksync_stack=stack), "--check")
    assert run.rc == 0, run.tail()
    assert run.summary_rows()["the-cluster"][stack]["created"] == "1", run.tail()
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/dry-run") is None


@pytest.mark.parametrize("extra, message", [
    ({"stacksync_repo": "file:///nowhere", "stacksync_sources": [{"repo": "file:///elsewhere"}]},
     "Set either stacksync_sources"),
    ({}, "Set either stacksync_sources"),
    ({"stacksync_sources": [{"path": "x"}]}, "repo"),
    ({"stacksync_sources": [{"repo": "file:///x", "state": "gone"}]}, "state"),
    # a message names the role's variable that set what is wrong
    ({"stacksync_sources": [{"repo": "REPO_URL", "path": "manifests", "kubeconfig": "/nowhere/kubeconfig"}]},
     "Kubeconfig file not found: /nowhere/kubeconfig (check stacksync_sources[0].kubeconfig)"),
    ({"stacksync_repo": "REPO_URL", "stacksync_path": "manifests", "stacksync_kubeconfig": "/nowhere/kubeconfig"},
     "Kubeconfig file not found: /nowhere/kubeconfig (check stacksync_kubeconfig)"),
])
def test_bad_inputs_fail_with_a_clear_message(setup, extra, message):
    _tmp, inventory, variables, _ns = setup
    extra = json.loads(json.dumps(extra).replace("REPO_URL", variables["repo_url"]))
    run = run_playbook(inventory, dict(variables, **extra))
    assert run.rc != 0
    assert message in run.output, run.tail()


def test_ansible_doc_renders_the_role():
    proc = subprocess.run([str(BIN / "ansible-doc"), "-t", "role", "stacksync.k8s.sync"], capture_output=True,
                          text=True, env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "[WARNING]" not in proc.stderr, proc.stderr
    for option in ("stacksync_sources", "stacksync_kubeconfig", "stacksync_api_key", "stacksync_results"):
        assert option in proc.stdout


def test_changed_is_reported_when_some_objects_are_skipped(setup, kube, tmp_path):
    # A module result whose `skipped` key is a non-empty list makes Ansible count the task (or loop item)
    # as skipped (TaskResult.is_skipped), which hides `changed` from the callback, the PLAY RECAP and AWX.
    _tmp, inventory, variables, ns = setup
    ns += "-skip"
    repo = GitRepo(tmp_path / "repo")
    repo.write("manifests/ns.yaml", namespace(ns))
    repo.write("manifests/cm.yaml", configmap("applied", ns, {"k": "v"}))
    ignored = configmap("opted-out", ns, {"k": "v"})
    ignored["metadata"]["annotations"] = {"stacksync.io/ignore": "true"}
    repo.write("manifests/ignored.yaml", ignored)
    repo.commit("initial")
    extra = dict(variables, stacksync_repo=repo.url, stacksync_path="manifests", stacksync_stack=variables["stack"] + "-skip")
    try:
        run = run_playbook(inventory, extra)
        assert run.rc == 0, run.tail()
        row = run.summary_rows()["the-cluster"][extra["stacksync_stack"]]
        assert (row["created"], row["skipped"]) == ("2", "1"), run.summaries()
        # the sync task itself must be reported changed (not "skipping")
        block = run.stdout.split("TASK [stacksync.k8s.sync : Fetch, render, apply and prune every source]", 1)[1]
        assert "changed: [the-cluster]" in block.split("\nTASK [", 1)[0], block
    finally:
        with contextlib.suppress(Exception):
            build_client({"kubeconfig": kube.kubeconfig})[0].delete("/api/v1/namespaces/" + ns)


RESULTS_PLAY = """
- name: Sync and keep the results
  hosts: clusters
  connection: local
  gather_facts: false
  tasks:
    - name: Sync
      block:
        - name: Sync with include_role
          ansible.builtin.include_role:
            name: stacksync.k8s.sync
      rescue:
        - name: Note the failure
          ansible.builtin.set_fact:
            sync_failed: true
    - name: Write the results
      ansible.builtin.copy:
        content: "{{ {'results': stacksync_results, 'failed': sync_failed | default(false)} | to_json }}"
        dest: "{{ results_file }}"
        mode: "0600"
      check_mode: false
"""


def test_single_source_applies_and_prunes_in_one_run(setup, kube, tmp_path):
    # One source: the role runs the module once (phase all) instead of an apply and a prune run;
    # stacksync_results and the summary read as with two runs.
    _tmp, inventory, variables, ns = setup
    ns += "-one"
    stack = variables["stack"] + "-one"
    repo = GitRepo(tmp_path / "repo")
    repo.write("manifests/ns.yaml", namespace(ns))
    repo.write("manifests/keep.yaml", configmap("keep", ns, {"k": "v"}))
    repo.write("manifests/gone.yaml", configmap("gone", ns, {"k": "v"}))
    repo.commit("initial")
    play = tmp_path / "play.yml"
    play.write_text(RESULTS_PLAY)
    results_file = tmp_path / "results.json"
    extra = dict(variables, stacksync_repo=repo.url, stacksync_path="manifests", stacksync_stack=stack,
                 results_file=str(results_file))
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    try:
        run = run_playbook(inventory, extra, playbook=play)
        assert run.rc == 0, run.tail()
        out = json.loads(results_file.read_text())
        assert not out["failed"]
        (r,) = out["results"]
        assert r["counts"]["created"] == 3 and r["pruning"] == "done" and r["changed"], r

        repo.remove("manifests/gone.yaml")
        repo.commit("remove gone")
        run = run_playbook(inventory, extra, "--check", playbook=play)
        assert run.rc == 0, run.tail()
        (r,) = json.loads(results_file.read_text())["results"]
        assert r["counts"]["pruned"] == 1 and r["pruning"] == "done", r
        assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/gone") is not None

        run = run_playbook(inventory, extra, playbook=play)
        assert run.rc == 0, run.tail()
        (r,) = json.loads(results_file.read_text())["results"]
        assert r["counts"] == {"created": 0, "configured": 0, "recreated": 0, "unchanged": 2, "pruned": 1,
                               "skipped": 0}, r
        assert r["pruning"] == "done" and r["changed"] and not r["failed"], r
        assert [o["name"] for o in r["pruned"]] == ["gone"], r
        assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/gone") is None
        # one module run (phase all): what it deletes as it starts, then one end line that counts it too
        said = [line for line in run.stdout.splitlines() if line.startswith(f"stacksync [the-cluster] stack {stack}: ")]
        assert len(said) == 2 and said[0].endswith(": pruning 1 object") and ": unchanged 2, pruned 1 in " in said[1], said
        row = run.summary_rows()["the-cluster"][stack]
        assert (row["pruned"], row["result"]) == ("1", "ok"), run.summaries()

        # an empty source is refused by the prune part: reported as a pruning failure, as with two runs
        for path in (tmp_path / "repo/manifests").iterdir():
            path.write_text("")
        repo.commit("empty")
        run = run_playbook(inventory, extra, playbook=play)
        assert run.rc != 0 or json.loads(results_file.read_text())["failed"], run.tail()
        out = json.loads(results_file.read_text())
        (r,) = out["results"]
        assert out["failed"] and r["failed"] and r["pruning"] == "failed", r
        assert "refusing to prune" in r["msg"], r
        assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/keep") is not None
    finally:
        with contextlib.suppress(Exception):
            client.delete("/api/v1/namespaces/" + ns)


def test_summary_says_how_many_more(setup, kube, tmp_path):
    _tmp, inventory, variables, ns = setup
    ns += "-more"
    stack = variables["stack"] + "-more"
    repo = GitRepo(tmp_path / "repo")
    repo.write("manifests/ns.yaml", namespace(ns))
    for i in range(24):
        repo.write(f"manifests/cm{i:02d}.yaml", configmap(f"cm{i:02d}", ns, {"k": "v"}))
    repo.commit("initial")
    play = tmp_path / "play.yml"
    play.write_text(RESULTS_PLAY)
    extra = dict(variables, stacksync_repo=repo.url, stacksync_path="manifests", stacksync_stack=stack,
                 results_file=str(tmp_path / "results.json"))
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    try:
        run = run_playbook(inventory, extra, playbook=play)
        assert run.rc == 0, run.tail()
        lines = run.summaries()["the-cluster"]
        assert sum(1 for line in lines if line.strip().startswith("created ")) == 20, lines
        assert any(line.strip() == "... and 5 more" for line in lines), lines
    finally:
        with contextlib.suppress(Exception):
            client.delete("/api/v1/namespaces/" + ns)
