"""Integration tests for the stacksync.k8s.source role: real ansible-playbook, real local git repos."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import stack_name

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
HOSTS = ["cluster-a", "cluster-b", "cluster-c"]

pytestmark = [pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"), pytest.mark.slow]


def git(*args, cwd):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=str(cwd), env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


class Repo:
    """A bare repository (``url``) and a work tree to push commits from."""

    def __init__(self, base):
        self.bare = base / "infra.git"
        self.work = base / "work"
        base.mkdir(parents=True, exist_ok=True)
        git("init", "-q", "--bare", "-b", "main", str(self.bare), cwd=base)
        git("init", "-q", "-b", "main", str(self.work), cwd=base)
        git("remote", "add", "origin", str(self.bare), cwd=self.work)
        self.url = f"file://{self.bare}"

    def commit(self, files, message="change", tag=None):
        for rel, text in files.items():
            path = self.work / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        git("add", "-A", cwd=self.work)
        git("commit", "-qm", message, cwd=self.work)
        if tag:
            git("tag", tag, cwd=self.work)
        git("push", "-q", "--tags", "origin", "main", cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)


@pytest.fixture
def repo(tmp_path):
    repo = Repo(tmp_path)
    repo.first = repo.commit({"clusters/prod/ns.yaml": CM.format(name="ns"), "README.md": "hi"}, "one", tag="v1")
    repo.second = repo.commit({"clusters/prod/app.yaml": CM.format(name="app")}, "two")
    return repo


def run_role(tmp_path, role_vars, extra_tasks=(), verbosity=None, loop=None, env=None):
    """Play over three 'cluster' hosts that includes the role and dumps each host's facts."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    include = {"name": "Check out the source", "ansible.builtin.include_role": {"name": "stacksync.k8s.source"},
               "vars": role_vars}
    if loop is not None:
        include["loop"] = loop
        include["loop_control"] = {"loop_var": "src"}
        dump_content = "{{ collected | to_json }}"
        include_tasks = [
            {"name": "Collect", "ansible.builtin.include_tasks": "collect.yml", "loop": loop,
             "loop_control": {"loop_var": "src"}},
        ]
        (tmp_path / "collect.yml").write_text(yaml.safe_dump([
            {"name": "Check out the source", "ansible.builtin.include_role": {"name": "stacksync.k8s.source"},
             "vars": role_vars},
            {"name": "Remember", "ansible.builtin.set_fact": {
                "collected": "{{ collected | default([]) + [stacksync_source] }}"}},
        ]))
        tasks = include_tasks
    else:
        dump_content = "{{ {'source': stacksync_source, 'checkout': stacksync_source_checkout, " \
                       "'path': stacksync_source_path, 'commit': stacksync_source_commit, " \
                       "'stack': stacksync_source_stack, 'repo': stacksync_source_repo} | to_json }}"
        tasks = [include]
    tasks = tasks + list(extra_tasks) + [
        {"name": "Dump", "ansible.builtin.copy": {"content": dump_content,
                                                  "dest": str(out) + "/{{ inventory_hostname }}.json", "mode": "0600"}},
    ]
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "tasks": tasks}], sort_keys=False))
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("".join(
        f"{h} ansible_connection=local ansible_python_interpreter={sys.executable}\n"
        for h in [*HOSTS, "localhost"]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", GIT_TERMINAL_PROMPT="0", ANSIBLE_STDOUT_CALLBACK="default",
               **(env or {}))
    args = [ANSIBLE_PLAYBOOK, "-i", str(inventory), "--limit", ",".join(HOSTS), str(playbook)]
    if verbosity:
        args.append("-" + "v" * verbosity)
    result = subprocess.run(args, cwd=str(tmp_path), capture_output=True, text=True, env=env, timeout=300)
    facts = {}
    for host in HOSTS:
        path = out / (f"{host}.json")
        if path.exists():
            facts[host] = json.loads(path.read_text())
    return result, facts


def assert_ok(result):
    assert result.returncode == 0, result.stdout + result.stderr


def test_default_branch_checkout_sets_facts_on_every_host(tmp_path, repo):
    cache = tmp_path / "cache"
    result, facts = run_role(tmp_path, {"stacksync_repo": repo.url, "stacksync_path": "clusters/prod",
                                        "stacksync_cache_dir": str(cache)})
    assert_ok(result)
    assert sorted(facts) == HOSTS
    first = facts[HOSTS[0]]
    assert all(f == first for f in facts.values())
    checkout = Path(first["checkout"])
    assert checkout.parent == cache and (checkout / ".git").is_dir()
    assert first["commit"] == repo.second
    assert first["path"] == str(checkout / "clusters" / "prod")
    assert first["stack"] == stack_name(repo.url, "clusters/prod")
    assert first["repo"] == repo.url
    assert first["source"] == {"repo": repo.url, "version": "HEAD", "checkout": str(checkout),
                               "path": first["path"], "commit": repo.second, "stack": first["stack"]}
    assert git("rev-parse", "HEAD", cwd=checkout) == repo.second
    # One clone for the whole play, not one per host.
    clone = result.stdout.split("TASK [stacksync.k8s.source : Clone or update the repository]")[1].split("TASK [")[0]
    assert len(re.findall(r"^(ok|changed): \[", clone, re.M)) == 1, clone
    assert len(list(cache.iterdir())) == 1


def test_tag_and_commit_versions_and_updates(tmp_path, repo):
    cache = str(tmp_path / "cache")
    _result, facts = run_role(tmp_path, {"stacksync_repo": repo.url, "stacksync_version": "v1",
                                         "stacksync_cache_dir": cache})
    assert facts[HOSTS[0]]["commit"] == repo.first
    assert not (Path(facts[HOSTS[0]]["path"]) / "clusters" / "prod" / "app.yaml").exists()

    _result, facts = run_role(tmp_path, {"stacksync_repo": repo.url, "stacksync_version": repo.first,
                                         "stacksync_cache_dir": cache})
    assert facts[HOSTS[0]]["commit"] == repo.first

    _result, facts = run_role(tmp_path, {"stacksync_repo": repo.url, "stacksync_version": "main",
                                         "stacksync_cache_dir": cache})
    assert facts[HOSTS[0]]["commit"] == repo.second
    third = repo.commit({"clusters/prod/more.yaml": CM.format(name="more")}, "three")
    # Local edits in the cache are discarded on update.
    (Path(facts[HOSTS[0]]["checkout"]) / "README.md").write_text("local edit")
    result, facts = run_role(tmp_path, {"stacksync_repo": repo.url, "stacksync_version": "main",
                                        "stacksync_cache_dir": cache})
    assert_ok(result)
    assert facts[HOSTS[0]]["commit"] == third
    assert (Path(facts[HOSTS[0]]["checkout"]) / "README.md").read_text() == "hi"
    # One cache directory per (repository, version): v1, the SHA and main.
    assert len(os.listdir(cache)) == 3


def test_stack_override_and_lookup_on_the_checkout(tmp_path, repo):
    render = {"name": "Render", "ansible.builtin.set_fact": {
        "rendered": "{{ query('stacksync.k8s.manifests', stacksync_source_path, root=stacksync_source_checkout) }}"}}
    save = {"name": "Save", "ansible.builtin.copy": {"content": "{{ rendered | to_json }}",
                                                     "dest": str(tmp_path) + "/rendered.json", "mode": "0600"},
            "run_once": True}
    result, facts = run_role(tmp_path, {"stacksync_repo": repo.url, "stacksync_path": "clusters/prod/",
                                        "stacksync_stack": "my-stack", "stacksync_cache_dir": str(tmp_path / "c")},
                             extra_tasks=[render, save])
    assert_ok(result)
    assert facts[HOSTS[1]]["stack"] == "my-stack"
    rendered = json.loads((tmp_path / "rendered.json").read_text())
    assert [m["metadata"]["name"] for m in rendered] == ["app", "ns"]


def test_loop_over_several_sources(tmp_path, repo):
    other = Repo(tmp_path / "other")
    other_sha = other.commit({"x.yaml": CM.format(name="x")}, "o")
    sources = [{"repo": repo.url, "path": "clusters/prod"}, {"repo": other.url, "path": ""}]
    result, facts = run_role(tmp_path, {"stacksync_repo": "{{ src.repo }}", "stacksync_path": "{{ src.path }}",
                                        "stacksync_cache_dir": str(tmp_path / "cache")}, loop=sources)
    assert_ok(result)
    collected = facts[HOSTS[2]]
    assert [c["commit"] for c in collected] == [repo.second, other_sha]
    assert [c["stack"] for c in collected] == [stack_name(repo.url, "clusters/prod"), stack_name(other.url)]
    assert collected[0]["checkout"] != collected[1]["checkout"]
    assert collected[1]["path"] == collected[1]["checkout"]


@pytest.mark.parametrize("role_vars, message", [
    ({"stacksync_path": "does/not/exist"}, "does/not/exist is not a directory in"),
    ({"stacksync_path": "../outside"}, "stacksync_path must be a relative path inside the repository"),
    ({"stacksync_path": "/etc"}, "stacksync_path must be a relative path inside the repository"),
    ({"stacksync_stack": "Not A Label!"}, "stacksync_stack a valid label value"),
    ({"stacksync_version": "no-such-branch"}, "infra.git has no branch or tag no-such-branch"),
    ({"stacksync_version": "--upload-pack=touch /tmp/x"}, "stacksync.k8s.source: version '--upload-pack=touch /tmp/x' "
                                                          "refused: it begins with '-'"),
])
def test_bad_input_fails_clearly(tmp_path, repo, role_vars, message):
    result, facts = run_role(tmp_path, dict({"stacksync_repo": repo.url, "stacksync_cache_dir": str(tmp_path / "c")},
                                            **role_vars))
    assert result.returncode != 0
    assert message in result.stdout + result.stderr
    assert facts == {}


def test_missing_repo_is_rejected_by_the_argument_spec(tmp_path):
    result, _facts = run_role(tmp_path, {"stacksync_cache_dir": str(tmp_path / "c")})
    assert result.returncode != 0
    assert "missing required arguments: stacksync_repo" in result.stdout + result.stderr


def test_credentials_never_printed_even_with_vvv(tmp_path):
    token = "ghp_S3cr3tT0kenValue"
    url = f"https://x-access-token:{token}@127.0.0.1:9/acme/infra.git"
    cache = tmp_path / "cache"
    result, facts = run_role(tmp_path, {"stacksync_repo": url, "stacksync_path": "clusters/prod",
                                        "stacksync_cache_dir": str(cache)}, verbosity=3)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and facts == {}
    assert "cannot fetch https://127.0.0.1:9/acme/infra.git: cannot reach host 127.0.0.1 port 9" in output
    assert token not in output and "x-access-token" not in output
    for dirpath, dirnames, filenames in os.walk(str(cache)):
        for name in dirnames + filenames + [dirpath]:
            assert token not in name


def test_credentials_not_printed_on_success_vvv(tmp_path, repo):
    # A file:// URL cannot carry credentials, so check the success path prints no repo URL
    # beyond the redacted one: use a user name that must not be printed.
    url = f"file://{repo.bare}"
    result, facts = run_role(tmp_path, {"stacksync_repo": url, "stacksync_cache_dir": str(tmp_path / "c")},
                             verbosity=3)
    assert_ok(result)
    assert facts[HOSTS[0]]["commit"] == repo.second
    clone = result.stdout.split("TASK [stacksync.k8s.source : Clone or update the repository]")[1].split("TASK [")[0]
    assert "censored" in clone and str(repo.bare) not in clone


@pytest.mark.parametrize("spelling", ["https://x-access-token:{token}@git.example.invalid/acme/infra.git",
                                      "https://git.example.invalid/acme/infra.git?private_token={token}",
                                      "https://x-access-token:{token}@git.example.invalid/acme/infra.git?access_token={token}"])
def test_credential_url_clones_and_never_prints_the_token_vvv(tmp_path, repo, spelling):
    """A real clone through an https URL carrying a token (user info or query string): git rewrites it to the local
    bare repo."""
    token = "ghp_Sup3rS3cretT0ken"
    url = spelling.format(token=token)
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f'[url "file://{repo.bare}"]\n\tinsteadOf = {url}\n')
    cache = tmp_path / "cache"
    result, facts = run_role(tmp_path, {"stacksync_repo": url, "stacksync_path": "clusters/prod",
                                        "stacksync_cache_dir": str(cache)},
                             verbosity=3, env={"GIT_CONFIG_GLOBAL": str(gitconfig)})
    assert_ok(result)
    output = result.stdout + result.stderr
    assert token not in output and "x-access-token" not in output
    first = facts[HOSTS[0]]
    assert first["commit"] == repo.second
    assert first["repo"] == "https://git.example.invalid/acme/infra.git"
    assert first["stack"] == stack_name("https://git.example.invalid/acme/infra.git", "clusters/prod")
    assert first["stack"].startswith("infra-clusters-prod-")
    for dirpath, dirnames, filenames in os.walk(str(cache)):
        for name in [dirpath, *dirnames, *filenames]:
            assert token not in name
