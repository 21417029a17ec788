"""plugin_utils/checkout.py against real git repositories (file:// URLs): versions, updates, the run token,
credentials kept out of the checkout and of every message."""

import os
import re
import subprocess

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import checkout as co

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]


def git(cwd, *args):
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def read(*path):
    with open(os.path.join(*path)) as f:
        return f.read()


@pytest.fixture
def repo(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    (work / "a.yaml").write_text("one\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "one")
    git(work, "tag", "v1")
    (work / "a.yaml").write_text("two\n")
    git(work, "commit", "-qam", "two")
    git(work, "checkout", "-qb", "feature")
    (work / "b.yaml").write_text("feature\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "feature")
    git(work, "checkout", "-q", "main")
    bare = tmp_path / "repo.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return work, "file://" + str(bare)


def test_versions_resolve_like_git(tmp_path, repo):
    work, url = repo
    cache = str(tmp_path / "cache")
    for version, ref in (("HEAD", "main"), ("main", "main"), ("feature", "feature"), ("v1", "v1^{commit}")):
        got = co.checkout(url, version, cache)
        assert got["commit"] == git(work, "rev-parse", ref), version
        assert git(got["dir"], "rev-parse", "HEAD") == got["commit"]
    one = git(work, "rev-parse", "v1^{commit}")
    for version in (one, one[:8]):  # a full commit is fetched by id, an abbreviated one by listing refs
        got = co.checkout(url, version, cache)
        assert got["commit"] == one and (tmp_path / "cache").exists()
        assert read(got["dir"], "a.yaml") == "one\n"


def test_checkout_dirs_are_per_repo_and_version_and_match_the_source_role():
    a = co.checkout_dir("/c", "https://user:tok@git.example.com/org/apps.git", "main")
    assert a == co.checkout_dir("/c", "https://git.example.com/org/apps.git", "main")
    assert a != co.checkout_dir("/c", "https://git.example.com/org/apps.git", "v1")
    assert os.path.basename(a).startswith("git.example.com-org-apps-") and "tok" not in a


def test_updates_are_fetched_and_local_changes_discarded(tmp_path, repo):
    work, url = repo
    cache = str(tmp_path / "cache")
    first = co.checkout(url, "main", cache, token="run-1")
    (work / "a.yaml").write_text("three\n")
    git(work, "commit", "-qam", "three")
    git(work, "push", "-q", url, "main")
    with open(os.path.join(first["dir"], "stray.yaml"), "w") as f:
        f.write("left behind\n")
    with open(os.path.join(first["dir"], "a.yaml"), "w") as f:
        f.write("edited\n")
    # the same run: the checkout is reused as it is (every host of a run syncs one commit)
    same = co.checkout(url, "main", cache, token="run-1")
    assert same == dict(first, fetched=False)
    # the next run fetches, and the checkout holds exactly the commit
    second = co.checkout(url, "main", cache, token="run-2")
    assert second["fetched"] and second["commit"] == git(work, "rev-parse", "HEAD") != first["commit"]
    assert read(second["dir"], "a.yaml") == "three\n"
    assert not os.path.exists(os.path.join(second["dir"], "stray.yaml"))


def test_credentials_stay_out_of_the_checkout_and_the_messages(tmp_path, repo):
    _work, url = repo
    with pytest.raises(co.CheckoutError) as e:
        co.checkout("https://user:s3cret@127.0.0.1:9/nothing.git", "main", str(tmp_path / "cache"))
    assert "s3cret" not in str(e.value) and "127.0.0.1:9/nothing.git" in str(e.value)
    with pytest.raises(co.CheckoutError) as e:
        co.checkout(url, "no-such-branch", str(tmp_path / "cache"))
    assert "no-such-branch" in str(e.value)
    with pytest.raises(co.CheckoutError, match="no branch, tag or commit abcdef12"):
        co.checkout(url, "abcdef12", str(tmp_path / "cache"))
    got = co.checkout(url, "main", str(tmp_path / "cache"))
    config = read(got["dir"], ".git", "config")
    assert "[remote" not in config and url not in config


def test_run_token_names_the_parent_process():
    token = co.run_token()
    assert token.split(":")[0] == str(os.getppid())
    assert co.run_token() == token


def test_a_clone_with_a_remote_loses_it_on_the_next_fetch(tmp_path, repo):
    """Checkouts cloned by the source role's former ansible.builtin.git kept the URL (and its credentials)."""
    work, url = repo
    cache = str(tmp_path / "cache")
    dest = co.checkout_dir(cache, url, "main")
    os.makedirs(cache)
    git(cache, "clone", "-q", url, dest)
    assert url in read(dest, ".git", "config")
    got = co.checkout(url, "main", cache)
    assert got == {"dir": dest, "commit": git(work, "rev-parse", "main"), "fetched": True}
    config = read(dest, ".git", "config")
    assert "[remote" not in config and url not in config


def test_repo_subpath_is_normalised_and_stays_inside_the_repository():
    assert co.repo_subpath("") == co.repo_subpath(".") == co.repo_subpath("./") == "."
    assert co.repo_subpath("clusters/prod/") == co.repo_subpath("clusters/./x/../prod") == "clusters/prod"
    for bad in ("..", "../x", "a/../../x", "/etc", "//x"):
        with pytest.raises(ValueError, match=re.escape(f"path must be a relative path inside the repository, not {bad!r}")):
            co.repo_subpath(bad)


def test_source_stack_is_given_or_derived_and_always_a_label_value():
    url = "https://user:tok@git.example.com/org/apps.git"
    assert co.source_stack(url, ".") == "git.example.com-org-apps"
    assert co.source_stack(url, "clusters/prod") == "git.example.com-org-apps-clusters-prod"
    assert co.source_stack(url, "clusters/prod", "mine") == "mine"
    for bad in ("-bad-", "x" * 64, "has space"):
        with pytest.raises(ValueError, match="is not a valid label value"):
            co.source_stack(url, ".", bad)
    with pytest.raises(ValueError, match="cannot derive a stack name"):
        co.source_stack("", ".")


def test_checkout_source_checks_first_then_checks_out_the_directory(tmp_path, repo):
    work, url = repo
    cache = tmp_path / "cache"
    for path, stack in (("../up", ""), ("", "Not A Label!")):
        with pytest.raises(co.CheckoutError) as e:
            co.checkout_source(url, "main", path, str(cache), stack)
        assert e.value.reason == co.INVALID
    assert not cache.exists()  # nothing fetched for bad input
    got = co.checkout_source(url, "feature", "./", str(cache))
    commit = git(work, "rev-parse", "feature")
    assert got == {"repo": url, "version": "feature", "checkout": co.checkout_dir(str(cache), url, "feature"),
                   "path": co.checkout_dir(str(cache), url, "feature"), "commit": commit,
                   "stack": co.source_stack(url, "."), "fetched": True}
    with pytest.raises(co.CheckoutError) as e:
        co.checkout_source(url, "main", "a.yaml", str(cache))  # a file of main's tree, not a directory
    assert e.value.reason == co.NO_DIRECTORY
    assert str(e.value) == f"a.yaml is not a directory in {url} at {git(work, 'rev-parse', 'main')}"


def test_checkout_source_messages_name_the_url_without_credentials(tmp_path):
    with pytest.raises(co.CheckoutError) as e:
        co.checkout_source("https://user:s3cret@127.0.0.1:9/nothing.git", "v2", "", str(tmp_path / "cache"))
    assert e.value.reason == co.NOT_CHECKED_OUT
    assert str(e.value).startswith("cannot check out v2 of https://127.0.0.1:9/nothing.git: ")
    assert "s3cret" not in str(e.value) and "user" not in str(e.value)
