"""``make demo`` end to end: ``bash examples/demo.sh`` (the checkout installed, simulator, example git repo,
first sync, no-op, changes and a removal previewed with --check --diff, then synced and pruned), and the
two commands it prints for one's own cluster, run as printed."""

import os
import re
import shlex
import subprocess

import pytest

try:
    from .test_sync_helpers import REPO_ROOT, GitRepo, clean_env, configmap, kubeconfig_of
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import REPO_ROOT, GitRepo, clean_env, configmap, kubeconfig_of

VENV = REPO_ROOT / ".venv"


def demo_output():
    """``bash examples/demo.sh`` as ``make demo`` runs it (it installs this checkout itself), with .venv."""
    env = clean_env(STACKSYNC_DEMO_VENV=str(VENV))
    proc = subprocess.run(["bash", str(REPO_ROOT / "examples" / "demo.sh")],
                          cwd=REPO_ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def demo():
    if not (VENV / "bin" / "python").exists():
        pytest.skip("examples/demo.sh runs here with the repository's .venv (make venv)")
    return demo_output()


#: a row of the summary table of stack demo: created, configured, unchanged, pruned, skipped; health not checked; ok
ROW = r"  demo +[0-9a-f]{{12}} +{} +{} +{} +{} +{} +not checked +[0-9.]+ +ok"


def summary_rows(out, *counts):
    """The rows of stack demo's summary tables in ``out`` with these counts."""
    return re.findall("^" + ROW.format(*counts) + "$", out, re.MULTILINE)


@pytest.mark.slow
def test_demo_script_runs_end_to_end(demo):
    out, err = demo
    assert len(summary_rows(out, 6, 0, 0, 0, 0)) == 1
    assert len(summary_rows(out, 0, 0, 6, 0, 0)) == 1  # the no-op run
    # previewed (check mode), then done: the same counts
    assert re.search(r"check mode: nothing was changed.*\n.*STACK .*\n" + ROW.format(0, 2, 3, 1, 0), out)
    assert len(summary_rows(out, 0, 2, 3, 1, 0)) == 2
    # the diff of the prune: one line per pruned object (the whole object only with -vv)
    assert re.search(r"^- ConfigMap demo/feature-flags \(deleted, \d+ bytes\)$", out, re.MULTILINE)
    assert "OK: exactly one object was pruned: ConfigMap demo/feature-flags" in out
    assert "ConfigMaps left in namespace demo: app-config" in out
    assert "Demo complete in" in out
    # every sync shows its recap line, the same every time: nothing skipped, nothing failed
    recaps = re.findall(r"^demo-cluster +: ok=(\d+) +changed=(\d) +unreachable=0 +failed=0 +skipped=0 ", out, re.M)
    assert [changed for _ok, changed in recaps] == ["1", "0", "1", "1"] and len({ok for ok, _c in recaps}) == 1, recaps
    steps = re.findall(r"^==> \[ *\d+s\] (.*)$", out, re.MULTILINE)
    assert steps[0].startswith("Starting the Kubernetes API simulator") and len(steps) >= 7
    assert steps[1].startswith("Installing the collection from this checkout")
    assert "WARNING" not in err and "not part of the configured" not in out + err


def printed_commands(out):
    """The two commands the demo prints at the end, for one's own cluster."""
    tail = out[out.index("==> Next:"):]
    commands = [line.strip() for line in tail.splitlines() if line.startswith("  .")]
    assert len(commands) == 2, tail
    return [shlex.split(c) for c in commands]


@pytest.mark.slow
def test_the_readme_quick_start_shows_the_printed_commands(demo):
    readme = (REPO_ROOT / "README.md").read_text()
    for command in printed_commands(demo[0]):
        line = shlex.join(command).replace(".venv/bin/", ".venv-demo/bin/", 1)
        assert "$ " + line + "\n" in readme, line


@pytest.mark.slow
def test_the_printed_commands_work_against_a_cluster(demo, kube, tmp_path):
    """The printed commands, run as printed: the collection is installed into ~/.ansible/collections (a
    temporary HOME) and the sync playbook previews a repository with examples/local.yml. Only the repo URL
    (a placeholder) and, in this test, the kubeconfig are supplied."""
    install, sync = printed_commands(demo[0])
    venv_bin = VENV / "bin"
    assert install[:4] == [".venv/bin/ansible-galaxy", "collection", "install", "--force"], install
    assert sync[:4] == [".venv/bin/ansible-playbook", "stacksync.k8s.sync", "-i", "examples/local.yml"], sync
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in clean_env().items() if not k.startswith("ANSIBLE_COLLECTIONS")}
    env.update(HOME=str(home), PATH=f"{venv_bin}{os.pathsep}{env['PATH']}")
    proc = subprocess.run(install, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr and "not part of the configured" not in proc.stdout + proc.stderr
    assert (home / ".ansible" / "collections" / "ansible_collections" / "stacksync" / "k8s" / "MANIFEST.json").exists()

    repo = GitRepo(tmp_path / "repo")
    repo.write("deploy/cm.yaml", configmap("printed-command", "default", {"from": "demo"}))
    repo.commit("one ConfigMap")
    sync = [a.replace("https://github.com/YOU/REPO.git", repo.url) for a in sync]
    sync += ["-e", f"stacksync_kubeconfig={kubeconfig_of(kube)}", "-e", f"stacksync_cache_dir={tmp_path / 'cache'}"]
    proc = subprocess.run(sync, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"^stacksync \[\S+\] stack \S+: would create 1 \(", proc.stdout, re.M)  # previewed (check mode)
    assert "created ConfigMap default/printed-command" in proc.stdout
