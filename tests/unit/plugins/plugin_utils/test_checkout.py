"""plugin_utils/checkout.py against real git repositories (file:// URLs): versions, updates, the run token,
credentials kept out of the checkout and of every message."""

import os
import re
import subprocess

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import stack_name
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
        assert got["tree"] == git(work, "rev-parse", ref + "^{tree}"), version  # what the working tree holds
    one = git(work, "rev-parse", "v1^{commit}")
    for version in (one, one[:8]):  # a full commit is fetched by id, an abbreviated one by listing refs
        got = co.checkout(url, version, cache)
        assert got["commit"] == one and (tmp_path / "cache").exists()
        assert read(got["dir"], "a.yaml") == "one\n"


def test_checkout_dirs_are_per_repo_credentials_and_version():
    a = co.checkout_dir("/c", "https://user:tok@git.example.com/org/apps.git", "main")
    assert a == co.checkout_dir("/c", "https://user:tok@git.example.com/org/apps.git", "main")
    # a source without the credentials (or with others) never reuses what these credentials fetched
    assert a != co.checkout_dir("/c", "https://git.example.com/org/apps.git", "main")
    assert a != co.checkout_dir("/c", "https://user:other@git.example.com/org/apps.git", "main")
    assert a != co.checkout_dir("/c", "https://user:tok@git.example.com/org/apps.git", "v1")
    assert os.path.basename(a).startswith("git.example.com-org-apps-") and "tok" not in a
    # where a '#' falls in the repository or the version makes no two sources share a directory
    assert co.checkout_dir("/c", "/srv/a#b", "c") != co.checkout_dir("/c", "/srv/a", "b#c")


def test_a_source_without_the_credentials_does_not_get_the_checkout_they_fetched(tmp_path, repo):
    """Two tenants name one private repository, the URLs equal once their credentials are removed (here the query
    string, which redact_url removes as it removes user:token@): the second fetches for itself, and fails."""
    _work, url = repo
    cache = str(tmp_path / "cache")
    first = co.checkout(url, "main", cache, token="run")
    other = url + "?token=none"  # what git cannot fetch
    with pytest.raises(co.CheckoutError):
        co.checkout(other, "main", cache, token="run")
    assert co.checkout(url, "main", cache, token="run") == dict(first, fetched=False)


def test_a_local_repository_inside_the_checkout_cache_is_refused(tmp_path, repo):
    """Another source's checkout (fetched with its credentials) is never the repository of a source."""
    _work, url = repo
    cache = tmp_path / "cache"
    got = co.checkout(url, "main", str(cache))
    for other in (got["dir"], "file://" + got["dir"], str(cache), str(tmp_path / "link")):
        if other.endswith("link"):
            os.symlink(got["dir"], other)
        with pytest.raises(co.CheckoutError, match="inside the checkout cache") as e:
            co.checkout(other, "main", str(cache))
        assert e.value.reason == co.REFUSED


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
    assert second["tree"] != first["tree"]
    # a new commit of the same files: another commit, the same tree (rendercache.py keys renders by it)
    git(work, "commit", "-q", "--allow-empty", "-m", "nothing changed")
    git(work, "push", "-q", url, "main")
    third = co.checkout(url, "main", cache, token="run-3")
    assert third["commit"] != second["commit"] and third["tree"] == second["tree"]
    assert co.checkout(url, "main", cache, token="run-3") == dict(third, fetched=False)


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
    assert got == {"dir": dest, "commit": git(work, "rev-parse", "main"), "tree": git(work, "rev-parse", "main^{tree}"),
                   "fetched": True}
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
    assert co.source_stack(url, ".") == stack_name(url, ".") and co.source_stack(url, ".").startswith("apps-")
    assert co.source_stack(url, "clusters/prod").startswith("apps-clusters-prod-")
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
    assert str(e.value) == "cannot fetch https://127.0.0.1:9/nothing.git: cannot reach host 127.0.0.1 port 9: connection failed"
    assert "s3cret" not in str(e.value) and "user" not in str(e.value)


# -- user values never become git options, transports are restricted, repo config runs nothing (issue 28) ------
def _inject(marker):
    return f"--upload-pack=touch {marker}"


@pytest.mark.parametrize("field", ["version", "repo"])
def test_an_option_in_the_version_or_the_url_is_refused_and_runs_nothing(tmp_path, repo, field):
    """A survey's ``version`` (docs/awx.md) or a ``repo`` of ``--upload-pack=cmd`` ran cmd on the controller."""
    _work, url = repo
    marker = tmp_path / "pwned"
    args = dict(repo=url, version="main", path="", cache_dir=str(tmp_path / "cache"))
    args[field] = _inject(marker)
    with pytest.raises(co.CheckoutError) as e:
        co.checkout_source(**args)
    assert e.value.reason == co.REFUSED
    assert "refused: it begins with '-', which git would read as an option" in str(e.value)
    assert not marker.exists() and not (tmp_path / "cache").exists()


def test_past_the_checks_git_still_reads_them_as_values(tmp_path, repo, monkeypatch):
    """Defence in depth: the values follow --end-of-options, so even unchecked they are a ref / a path to git, and
    git itself allows only https, ssh and file, whatever the job user's config allows."""
    _work, url = repo
    permissive = tmp_path / "gitconfig"
    permissive.write_text("[protocol]\n\tallow = always\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(permissive))
    marker = tmp_path / "pwned"
    dest = tmp_path / "dest"
    dest.mkdir()
    git_ = co.Git(str(dest), url)
    git_.run("init", "--quiet")
    with pytest.raises(co.CheckoutError):
        git_.fetch("x", [_inject(marker)])  # as the version
    with pytest.raises(co.CheckoutError):
        co.Git(str(dest), _inject(marker)).fetch("main", ["main"])  # as the URL
    with pytest.raises(co.CheckoutError, match="git refused transport 'ext'"):
        co.Git(str(dest), "ext::sh -c touch% " + str(marker)).fetch("main", ["main"])
    for other in ("http://127.0.0.1:9/x.git", "git://127.0.0.1:9/x.git"):
        with pytest.raises(co.CheckoutError, match="git refused transport '{}'".format(other.split(":")[0])):
            co.Git(str(dest), other).fetch("main", ["main"])
    assert not marker.exists()


@pytest.mark.parametrize("url, refused", [
    ("ext::sh -c touch% /tmp/x", "transport 'ext'"),
    ("fd::3", "transport 'fd'"),
    ("https::evil.example.com/x", "transport 'https'"),
    ("http://git.example.com/x.git", "unencrypted"),
    ("git://git.example.com/x.git", "unauthenticated"),
    ("ftp://git.example.com/x.git", "transport 'ftp' is not allowed"),
    ("ssh://-oProxyCommand=touch% /tmp/x/r", "host or user begins with '-'"),
    ("-oProxyCommand=touch /tmp/x:r", "begins with '-'"),
    ("https://h/x\n", "control characters"),
])
def test_only_https_ssh_and_file_transports(tmp_path, url, refused):
    with pytest.raises(co.CheckoutError) as e:
        co.checkout(url, "main", str(tmp_path / "cache"))
    assert e.value.reason == co.REFUSED and refused in str(e.value), str(e.value)
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("version", ["main..HEAD", "main@{1}", "HEAD~1", "main^", "a:b", "a b", "*", "refs/heads/",
                                     ".hidden", "x.lock", "x.", "@", "+main", "a//b", "a\\b", "a?", "x" * 256])
def test_versions_that_git_check_ref_format_refuses_are_refused(tmp_path, repo, version):
    _work, url = repo
    with pytest.raises(co.CheckoutError) as e:
        co.checkout(url, version, str(tmp_path / "cache"))
    assert e.value.reason == co.REFUSED and str(e.value).startswith(f"version {version[:255]!r} refused: ")
    assert not (tmp_path / "cache").exists()


def test_names_git_accepts_still_work(tmp_path, repo):
    work, url = repo
    git(work, "tag", "release/1.2")
    git(work, "push", "-q", url, "release/1.2")
    for version in ("release/1.2", "refs/tags/v1", "refs/heads/feature", "v1"):
        assert co.checkout(url, version, str(tmp_path / "cache"))["commit"]


def test_end_of_options_where_git_takes_it():
    assert co.end_of_options("fetch", (2, 39, 5)) == co.end_of_options("rev-parse", (2, 30)) == ["--end-of-options"]
    assert co.end_of_options("fetch", (2, 23, 1)) == ["--"]  # fetch's parser drops '--' as well
    assert co.end_of_options("rev-parse", (2, 29)) == [] and co.end_of_options("fetch", ()) == ["--"]
    assert co.git_version() >= (2, 0)


def test_hooks_submodules_and_fsmonitor_of_any_config_run_nothing(tmp_path, repo, monkeypatch):
    """The job user's global config may enable hooks or submodule recursion; a checkout's own config may be
    edited: git runs none of it (core.hooksPath, core.fsmonitor, submodule.recurse are overridden)."""
    work, url = repo
    marker = tmp_path / "pwned"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("post-checkout", "reference-transaction", "post-index-change"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}-{name}\n")
        (hooks / name).chmod(0o755)
    git(work, "-c", "protocol.file.allow=always", "submodule", "add", "-q", url, "sub")  # itself, as a submodule
    git(work, "commit", "-qam", "with a submodule")
    git(work, "push", "-q", url, "main")
    config = tmp_path / "gitconfig"
    config.write_text("[core]\n\thooksPath = {}\n[submodule]\n\trecurse = true\n[init]\n\ttemplateDir = {}\n".format(hooks, tmp_path / "template"))
    (tmp_path / "template" / "hooks").mkdir(parents=True)
    (tmp_path / "template" / "hooks" / "post-checkout").write_text((hooks / "post-checkout").read_text())
    (tmp_path / "template" / "hooks" / "post-checkout").chmod(0o755)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    cache = str(tmp_path / "cache")
    got = co.checkout(url, "main", cache, token="one")
    with open(os.path.join(got["dir"], ".git", "config"), "a") as f:
        f.write(f"[core]\n\tfsmonitor = touch {marker}-fsmonitor\n")
    co.checkout(url, "main", cache, token="two")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("pwned")] == []
    assert not os.listdir(os.path.join(got["dir"], "sub"))  # the submodule was not cloned


def test_filters_of_the_repository_attributes_run_nothing(tmp_path, repo, monkeypatch):
    """A repository's .gitattributes naming a filter (git-lfs's, whose smudge fetches from the URL of the
    repository's .lfsconfig, or any the job user's git configuration defines) is not run: files as committed."""
    work, url = repo
    marker = tmp_path / "pwned"
    config = tmp_path / "gitconfig"
    config.write_text(f"[filter \"fetcher\"]\n\tsmudge = touch {marker}; cat\n\tprocess = touch {marker}\n"
                      "\trequired = true\n")
    (work / ".gitattributes").write_text("*.yaml filter=fetcher\n")
    git(work, "add", ".")
    git(work, "commit", "-qm", "lfs")
    git(work, "push", "-q", url, "main")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    got = co.checkout(url, "main", str(tmp_path / "cache"))
    assert not marker.exists()
    assert read(got["dir"], "a.yaml") == (work / "a.yaml").read_text()


def test_a_local_repository_config_cannot_run_commands_through_upload_pack(tmp_path, repo):
    """A file:// source is served by a local git-upload-pack, which reads that repository's config."""
    _work, url = repo
    marker = tmp_path / "pwned"
    bare = url[len("file://"):]
    git(bare, "config", "uploadpack.packObjectsHook", f"touch {marker}; git")
    git(bare, "config", "core.fsmonitor", f"touch {marker}")
    assert co.checkout(url, "main", str(tmp_path / "cache"))["commit"]
    assert not marker.exists()


def test_git_errors_in_plain_words_with_the_redacted_url(tmp_path, repo):
    _work, url = repo
    cache = str(tmp_path / "cache")
    missing = "file://" + str(tmp_path / "nothing.git")
    with pytest.raises(co.CheckoutError) as e:
        co.checkout(missing, "main", cache)
    assert str(e.value) == f"cannot fetch {missing}: no such repository (or no access to it)"
    with pytest.raises(co.CheckoutError) as e:
        co.checkout(url, "v9", cache)
    assert str(e.value) == f"{url} has no branch or tag v9"
    with pytest.raises(co.CheckoutError) as e:
        co.checkout("https://user:s3cret@127.0.0.1:9/x.git?access_token=T0ken#T0ken", "main", cache)
    assert str(e.value) == "cannot fetch https://127.0.0.1:9/x.git: cannot reach host 127.0.0.1 port 9: connection failed"
    assert "does not appear" not in str(e.value) and "fatal" not in str(e.value)
