"""Playbook ``stacksync.k8s.sync`` through ``ansible-runner`` (the engine AWX uses), with the cluster
credentials injected the way AWX's "OpenShift or Kubernetes API Bearer Token" credential does:
``K8S_AUTH_HOST``, ``K8S_AUTH_API_KEY``, ``K8S_AUTH_VERIFY_SSL`` and ``K8S_AUTH_SSL_CA_CERT`` (a file)
in the job's environment, against a simulator serving TLS."""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client

try:
    from .test_sync_helpers import BIN, GitRepo, clean_env, configmap, namespace
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import BIN, GitRepo, clean_env, configmap, namespace

ANSIBLE_RUNNER = BIN / "ansible-runner"


def stats_of(artifacts):
    """The playbook_on_stats event data of a runner job."""
    for name in sorted(os.listdir(artifacts / "job_events")):
        with open(artifacts / "job_events" / name) as f:
            event = json.load(f)
        if event.get("event") == "playbook_on_stats":
            return event["event_data"]
    raise AssertionError("no playbook_on_stats event in " + str(artifacts))


@pytest.mark.skipif(not ANSIBLE_RUNNER.exists(), reason="ansible-runner is not installed (tests/requirements.txt)")
def test_sync_through_ansible_runner_with_awx_kubernetes_credential(tmp_path, kubesim_factory):
    cluster = kubesim_factory(tls=True)
    assert cluster.server.startswith("https://") and cluster.ca_cert

    repo = GitRepo(tmp_path / "manifests")
    repo.write("apps/namespace.yaml", namespace("awx-demo"))
    repo.write("apps/settings.yaml", configmap("settings", "awx-demo", {"from": "awx"}))
    sha = repo.commit("initial")

    # private data dir, as AWX lays it out for a job
    pdd = tmp_path / "runner"
    (pdd / "project").mkdir(parents=True)
    (pdd / "inventory").mkdir()
    (pdd / "env").mkdir()
    (pdd / "project" / "sync.yml").write_text(
        "---\n- name: Sync the clusters\n  ansible.builtin.import_playbook: stacksync.k8s.sync\n")
    # one cluster host, no stacksync_* connection variables: the credential's environment is used
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump(
        {"all": {"hosts": {"prod": {"ansible_python_interpreter": str(BIN / "python")}}}}))
    ca_file = pdd / "env" / "k8s_ca.crt"  # AWX writes the CA data of the credential to a file
    shutil.copy(cluster.ca_cert, ca_file)
    (pdd / "env" / "envvars").write_text(yaml.safe_dump({
        "K8S_AUTH_HOST": cluster.server,
        "K8S_AUTH_API_KEY": cluster.token,
        "K8S_AUTH_VERIFY_SSL": "True",
        "K8S_AUTH_SSL_CA_CERT": str(ca_file),
        "ANSIBLE_COLLECTIONS_PATH": os.environ["ANSIBLE_COLLECTIONS_PATH"],
    }))
    (pdd / "env" / "extravars").write_text(yaml.safe_dump({
        "stacksync_cache_dir": str(tmp_path / "cache"),
        "stacksync_sources": [{"repo": repo.url, "version": "main", "path": "apps", "stack": "awx-apps"}],
    }))

    env = clean_env(PATH=str(BIN) + os.pathsep + os.environ.get("PATH", ""))

    def run(ident):
        proc = subprocess.run([str(ANSIBLE_RUNNER), "run", str(pdd), "-p", "sync.yml", "--ident", ident],
                              capture_output=True, text=True, env=env, timeout=600)
        artifacts = pdd / "artifacts" / ident
        stdout = (artifacts / "stdout").read_text() if (artifacts / "stdout").exists() else proc.stdout
        status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else "?"
        assert proc.returncode == 0 and status == "successful", stdout[-5000:] + proc.stderr[-3000:]
        return artifacts, stdout

    artifacts, stdout = run("first")
    client = build_client({"host": cluster.server, "api_key": cluster.token, "ca_cert": cluster.ca_cert})[0]
    cm = client.get("/api/v1/namespaces/awx-demo/configmaps/settings")
    assert cm["data"] == {"from": "awx"}
    assert cm["metadata"]["labels"]["stacksync.io/stack"] == "awx-apps"
    stats = stats_of(artifacts)
    assert stats["changed"].get("prod", 0) > 0 and not stats["failures"] and not stats["dark"]
    assert re.search(rf"^  awx-apps +{sha[:12]} +2 +0 +0 +0 +0 +not checked +[0-9.]+ +ok$", stdout, re.M), stdout
    # the sync's set_stats data: the job's artifacts in AWX
    (entry,) = stats["artifact_data"]["stacksync"]["prod"].items()
    assert entry[0] == "awx-apps" and entry[1]["commit"] == sha and entry[1]["counts"]["created"] == 2, entry
    # every request was authenticated with the credential's token over TLS
    assert {r["user"] for r in cluster.sim.requests if r["path"].startswith("/api/v1/namespaces")} == {"admin"}

    artifacts, stdout = run("second")
    stats = stats_of(artifacts)
    assert not stats["changed"] and not stats["failures"], stats
    # the job's output and events never show the token (runner's own `command` file records the env)
    for ident in ("first", "second"):
        for path in [pdd / "artifacts" / ident / "stdout", *(pdd / "artifacts" / ident / "job_events").iterdir()]:
            assert cluster.token not in path.read_text(errors="replace"), path


@pytest.mark.skipif(not ANSIBLE_RUNNER.exists(), reason="ansible-runner is not installed (tests/requirements.txt)")
def test_the_check_jobs_plan_artifact_approved_is_exactly_what_the_run_deletes(tmp_path, kube):
    """The approval workflow of docs/awx.md: a check job emits the plan (set_stats), AWX passes the node's artifacts
    to the next node as extra variables, and the run after the approval node deletes exactly the plan's deletions --
    11 of the stack's 12 objects, over the default prune budget. Simulator and real server."""
    suffix = os.urandom(3).hex()
    ns, stack = f"awx-plan-{suffix}", f"awx-plan-{suffix}"
    repo = GitRepo(tmp_path / "manifests")
    repo.write("apps/namespace.yaml", namespace(ns))
    for i in range(12):
        repo.write(f"apps/c{i}.yaml", configmap(f"c{i}", ns, {"n": str(i)}))
    repo.commit("initial")

    pdd = tmp_path / "runner"
    for d in ("project", "inventory", "env"):
        (pdd / d).mkdir(parents=True)
    (pdd / "project" / "sync.yml").write_text(
        "---\n- name: Sync the clusters\n  ansible.builtin.import_playbook: stacksync.k8s.sync\n")
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump(
        {"all": {"hosts": {"prod": {"ansible_python_interpreter": str(BIN / "python")}}}}))
    ca_file = pdd / "env" / "k8s_ca.crt"
    shutil.copy(kube.ca_cert, ca_file)
    (pdd / "env" / "envvars").write_text(yaml.safe_dump({
        "K8S_AUTH_HOST": kube.server, "K8S_AUTH_API_KEY": kube.token, "K8S_AUTH_VERIFY_SSL": "True",
        "K8S_AUTH_SSL_CA_CERT": str(ca_file), "ANSIBLE_COLLECTIONS_PATH": os.environ["ANSIBLE_COLLECTIONS_PATH"]}))
    base = {"stacksync_cache_dir": str(tmp_path / "cache"), "stacksync_discovery_cache_dir": "",
            "stacksync_sources": [{"repo": repo.url, "version": "main", "path": "apps", "stack": stack}]}
    env = clean_env(PATH=str(BIN) + os.pathsep + os.environ.get("PATH", ""))

    def run(ident, extravars, *cmdline):
        (pdd / "env" / "extravars").write_text(json.dumps(extravars))
        (pdd / "env" / "cmdline").unlink(missing_ok=True)  # ansible-runner keeps the last --cmdline there
        args = [str(ANSIBLE_RUNNER), "run", str(pdd), "-p", "sync.yml", "--ident", ident]
        if cmdline:  # AWX's job type Check
            args.append("--cmdline=" + " ".join(cmdline))
        proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
        artifacts = pdd / "artifacts" / ident
        status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else "?"
        stdout = (artifacts / "stdout").read_text() if (artifacts / "stdout").exists() else proc.stdout
        return status, stdout, stats_of(artifacts) if (artifacts / "job_events").exists() else {}

    client = build_client({"host": kube.server, "api_key": kube.token, "ca_cert": kube.ca_cert})[0]
    try:
        status, stdout, _stats = run("sync", base)
        assert status == "successful", stdout[-5000:]
        uids = dict((f"c{i}", client.get(f"/api/v1/namespaces/{ns}/configmaps/c{i}")["metadata"]["uid"]) for i in range(12))
        for i in range(1, 12):
            repo.remove(f"apps/c{i}.yaml")
        repo.commit("drop 11 of 12")
        # the check job: what AWX stores as the job's artifacts
        status, stdout, stats = run("check", dict(base, stacksync_emit_plan=True), "--check")
        assert status == "successful", stdout[-5000:]
        artifacts = stats["artifact_data"]
        plan = artifacts["stacksync_plan_prod"]
        listed = {row[0]: row[1] for rows in plan["stacks"][stack]["prune"]["v1 ConfigMap"].values() for row in rows}
        assert listed == {n: uids[n] for n in uids if n != "c0"}
        assert all(client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/{n}") for n in uids)  # nothing written
        # approved: the run node gets the check node's artifacts as extra variables, and uses the plan of its host
        status, stdout, stats = run("run", dict(base, **artifacts, stacksync_approved_plan=True))
        assert status == "successful", stdout[-5000:]
        assert "syncing the approved plan (1 stacks)" in stdout
        assert re.search(rf"^  {re.escape(stack)} +[0-9a-f]{{12}} +0 +0 +2 +11 +0 +not checked +[0-9.]+ +ok$", stdout, re.M), stdout
        left = client.list(f"/api/v1/namespaces/{ns}/configmaps", label_selector="stacksync.io/stack=" + stack)
        assert [(o["metadata"]["name"], o["metadata"]["uid"]) for o in left] == [("c0", uids["c0"])]
    finally:
        client.delete(f"/api/v1/namespaces/{ns}")
