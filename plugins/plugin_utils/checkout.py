# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Git checkouts of the sources, on the controller, with the ``git`` command.

One directory per repository and version under the cache directory (the same names role
``stacksync.k8s.source`` uses). The repository URL is given to each ``git fetch`` and never stored in
the checkout (no ``origin`` remote), so credentials in a URL stay out of the cache. A checkout is
fetched once per ``token`` (the action plugin's: this ``ansible-playbook`` run, see :func:`run_token`, and
the task): every host the task runs for, in any fork, syncs the same commit, and the git work is done
once. A lock on the checkout directory serialises forks working on one checkout.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import hashlib
import json
import os
import posixpath
import re
import subprocess

from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import legacy_stack_name, redact_url, stack_name
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.validation import valid_label_value
from ansible_collections.stacksync.k8s.plugins.plugin_utils.gitcheck import (
    ALLOWED_PROTOCOLS,
    FULL_SHA_RE,
    SHA_RE,
    check_version,
    plain_error,
    repo_transport,
)

MARKER = "stacksync-fetched"  # in the checkout's .git directory: the run token of the last fetch
_ALL_REFS = ("+refs/heads/*:refs/stacksync/heads/*", "+refs/tags/*:refs/stacksync/tags/*")
GIT_TIMEOUT = 600
#: configuration every git command runs with: only :data:`.gitcheck.ALLOWED_PROTOCOLS` (git's ``protocol.allow``,
#: for redirects and anything git starts too), no hooks, no fsmonitor, no submodules
GIT_CONFIG = (
    ("protocol.allow", "never"), *(("protocol.%s.allow" % p, "always") for p in ALLOWED_PROTOCOLS),
    ("core.hooksPath", os.devnull), ("core.fsmonitor", "false"), ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"), ("safe.bareRepository", "explicit"))
#: first git versions whose ``fetch`` / ``rev-parse`` take ``--end-of-options``
END_OF_OPTIONS = {"fetch": (2, 24), "rev-parse": (2, 30)}


#: why :func:`checkout_source` failed (``CheckoutError.reason``)
INVALID, REFUSED, NOT_CHECKED_OUT, NO_DIRECTORY = "invalid", "refused", "checkout", "no directory"


class CheckoutError(Exception):
    """A checkout failed; the message never holds the credentials of the URL.

    ``reason``: :data:`INVALID` (path or stack), :data:`REFUSED` (a repository URL or version not given to git,
    :mod:`.gitcheck`), :data:`NOT_CHECKED_OUT` (git failed) or :data:`NO_DIRECTORY`.
    """

    def __init__(self, msg, reason=NOT_CHECKED_OUT):
        super(CheckoutError, self).__init__(msg)
        self.reason = reason


def repo_subpath(path):
    """``path`` (a directory inside the repository) normalised, ``.`` for the root.

    :raises ValueError: if it is absolute or leaves the repository.
    """
    norm = posixpath.normpath(path or ".")
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise ValueError("path must be a relative path inside the repository, not %r" % path)
    return norm


def check_source(repo, version):
    """Raise ValueError unless ``repo`` and ``version`` are safe to give git (:mod:`.gitcheck`)."""
    repo_transport(repo)
    check_version(version)


def source_stack(repo, path, stack=""):
    """``stack``, or the name derived from ``repo`` and ``path`` when it is empty.

    :raises ValueError: if no name can be derived or the name is not a valid label value.
    """
    name = stack or stack_name(repo, path)
    if not valid_label_value(name) or not name:
        raise ValueError("stack %r is not a valid label value (at most 63 characters, alphanumeric at both ends)"
                         % name)
    return name


def checkout_dir(cache_dir, repo, version):
    """The checkout directory of ``repo`` at ``version`` under ``cache_dir`` (as role stacksync.k8s.source names it).

    Its digest covers the URL as given, credentials included: a source naming a private repository without the
    credentials (or with others) never gets the checkout that another source's credentials fetched. ``repo`` and
    ``version`` are hashed as a JSON pair, so no two pairs share a digest by where a ``#`` falls."""
    digest = hashlib.sha256(json.dumps([repo, version]).encode("utf-8")).hexdigest()[:16]
    return os.path.abspath(os.path.join(os.path.expanduser(cache_dir), "%s-%s" % (legacy_stack_name(repo)[:40], digest)))


def local_path(repo):
    """The directory a local repository (a path or a ``file://`` URL) names, or None for a remote one."""
    if repo_transport(repo) != "file":
        return None
    path = repo[len("file://"):] if repo[:7].lower() == "file://" else repo
    return os.path.realpath(os.path.expanduser(path))


def check_not_cached(repo, cache_dir):
    """Raise ValueError if ``repo`` is a local path inside ``cache_dir``: another source's checkout (fetched with
    that source's credentials) is never a repository of its own."""
    path = local_path(repo)
    cache = os.path.realpath(os.path.expanduser(cache_dir))
    if path is not None and (path == cache or path.startswith(cache.rstrip(os.sep) + os.sep)):
        raise ValueError("repository %r refused: it is inside the checkout cache %s (the checkouts of other sources)"
                         % (redact_url(repo), cache_dir))


#: every path of a checkout without a filter: the repository's ``.gitattributes`` cannot name a filter driver
#: (git-lfs's smudge, which fetches from the URL of the repository's ``.lfsconfig``, or any command the job
#: user's git configuration defines): the files are checked out as they were committed
NO_FILTERS = "* -filter\n"


def _no_filters(dest):
    """Write :data:`NO_FILTERS` as the checkout's ``info/attributes`` (they override the repository's own)."""
    info = os.path.join(dest, ".git", "info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "attributes"), "w") as f:
        f.write(NO_FILTERS)


def run_token():
    """This ansible-playbook run: the process that forked the workers (its pid and, on Linux, its start time)."""
    ppid = os.getppid()
    try:
        with open("/proc/%d/stat" % ppid) as f:
            started = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        started = ""
    return "%d:%s" % (ppid, started)


def redact(text, repo):
    """``text`` (git's output) without the credentials of ``repo`` or of any URL."""
    return redact_url(text.replace(repo, redact_url(repo))).strip()


_VERSIONS = {}


def git_version():
    """The ``git`` command's version as a tuple (``(2, 39, 5)``; ``()`` if it does not say), asked once."""
    if "git" not in _VERSIONS:
        try:
            out = subprocess.run(("git", "version"), capture_output=True, text=True, timeout=60, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
        _VERSIONS["git"] = tuple(int(x) for x in match.groups() if x is not None) if match else ()
    return _VERSIONS["git"]


def end_of_options(command, version):
    """What ends the options of git ``command`` before user values, for git ``version`` (a tuple).

    ``--end-of-options`` where the command takes it; before that, ``--`` for ``fetch`` (its parser drops it
    the same way) and nothing for ``rev-parse`` (whose values are then only names checked to not begin with
    ``-``, see :func:`.gitcheck.check_version`).
    """
    if version and version >= END_OF_OPTIONS[command]:
        return ["--end-of-options"]
    return ["--"] if command == "fetch" else []


class Git:
    """``git`` in one checkout; ``run`` raises :class:`CheckoutError` with the redacted output.

    Every command runs with :data:`GIT_CONFIG`, ``GIT_ALLOW_PROTOCOL``, no terminal prompt and the checkout's
    ``.git`` given explicitly (no repository discovery).
    """

    def __init__(self, cwd, repo, timeout=GIT_TIMEOUT):
        self.cwd, self.repo, self.timeout = cwd, repo, timeout
        self.label = redact_url(repo)

    def run(self, *args):
        env = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_ALLOW_PROTOCOL=":".join(ALLOWED_PROTOCOLS),
                   GIT_LFS_SKIP_SMUDGE="1")
        if args[0] != "init":
            env.update(GIT_DIR=os.path.join(self.cwd, ".git"), GIT_WORK_TREE=self.cwd)
        config = [x for name, value in GIT_CONFIG for x in ("-c", "%s=%s" % (name, value))]
        try:
            proc = subprocess.run(("git", *config, *args), cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=self.timeout, check=False)
        except OSError as e:
            raise CheckoutError("cannot run git: %s" % e) from None
        except subprocess.TimeoutExpired:
            raise CheckoutError("git %s of %s did not finish within %d s" % (args[0], self.label, self.timeout)) from None
        if proc.returncode != 0:
            raise CheckoutError(redact(proc.stderr or proc.stdout or "git %s failed" % args[0], self.repo))
        return proc.stdout.strip()

    def fetch(self, version, refs, prune=False):
        """``git fetch`` of ``refs`` from the repository; errors in plain words (:func:`.gitcheck.plain_error`)."""
        options = ["--quiet", "--force", "--no-tags"] + (["--prune"] if prune else [])
        try:
            self.run("fetch", *options, *end_of_options("fetch", git_version()), self.repo, *refs)
        except CheckoutError as e:
            raise CheckoutError(plain_error(str(e), self.label, version)) from None

    def commit(self, rev):
        """The full commit id ``rev`` names (it exists locally), or :class:`CheckoutError`."""
        out = self.run("rev-parse", "--verify", "--quiet", *end_of_options("rev-parse", git_version()),
                       "%s^{commit}" % rev)
        if not FULL_SHA_RE.match(out):
            raise CheckoutError("git rev-parse of %s gave %r, not a commit id" % (rev, out[:80]))
        return out

    def fetch_commit(self, version):
        """Fetch ``version`` (a branch, tag, full or abbreviated commit, or ``HEAD``) and return its commit."""
        try:
            self.fetch(version, [version])
            return self.commit("FETCH_HEAD")
        except CheckoutError:
            if not SHA_RE.match(version):
                raise
        # an abbreviated commit (or a server that does not serve commits by id): every branch and tag
        self.fetch(version, _ALL_REFS, prune=True)
        try:
            return self.commit(version)
        except CheckoutError:
            raise CheckoutError("%s has no branch, tag or commit %s" % (self.label, version)) from None


def _locked(directory):
    """``directory`` (made if missing) locked against other processes: its descriptor, to close."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except IOError as e:
        if e.errno != errno.ENOENT:
            raise
        return ""


def checkout(repo, version, cache_dir, token=None):
    """Check out ``version`` of ``repo`` under ``cache_dir``; ``{"dir", "commit", "tree", "fetched"}`` (``tree``: the
    commit's root tree, what the working tree holds).

    With ``token`` (see :func:`run_token`) a checkout already fetched under the same token is reused as it is.
    ``repo`` and ``version`` are checked first (:func:`check_source`: reason :data:`REFUSED`).
    """
    try:
        check_source(repo, version)
        check_not_cached(repo, cache_dir)
    except ValueError as e:
        raise CheckoutError(str(e), REFUSED) from None
    dest = checkout_dir(cache_dir, repo, version)
    os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
    fd = _locked(dest)  # the checkout itself: no lock file next to it
    try:
        git = Git(dest, repo)
        marker = os.path.join(dest, ".git", MARKER)
        if not os.path.isdir(os.path.join(dest, ".git")):
            git.run("init", "--quiet")
        elif token and _read(marker) == token:
            commit, tree = git.run("rev-parse", "HEAD", "HEAD^{tree}").split()
            return {"dir": dest, "commit": commit, "tree": tree, "fetched": False}
        else:
            # a clone by ansible.builtin.git (role stacksync.k8s.source before 0.2.0) keeps the URL in a remote
            for remote in git.run("remote").split():
                git.run("remote", "remove", remote)
        commit = git.fetch_commit(version)
        _no_filters(dest)
        git.run("checkout", "--quiet", "--force", "--detach", commit)
        git.run("clean", "--quiet", "-ffdx")
        with open(marker, "w") as f:
            f.write(token or "")
        return {"dir": dest, "commit": commit, "tree": git.run("rev-parse", "HEAD^{tree}"), "fetched": True}
    finally:
        os.close(fd)


def checkout_source(repo, version, path, cache_dir, stack="", token=None):
    """Check out the directory ``path`` of ``repo`` at ``version``: what role ``stacksync.k8s.source`` sets.

    ``{"repo" (credentials removed), "version", "checkout", "path", "commit", "stack", "fetched"}``; the
    repository, version, path and stack are checked before anything is fetched. Raises :class:`CheckoutError`
    with its ``reason`` and a message that names the URL without credentials.
    """
    label = redact_url(repo)
    try:
        check_source(repo, version)
    except ValueError as e:
        raise CheckoutError(str(e), REFUSED) from None
    try:
        subpath = repo_subpath(path)
        stack = source_stack(repo, subpath, stack)
    except ValueError as e:
        raise CheckoutError(str(e), INVALID) from None
    got = checkout(repo, version, cache_dir, token)
    directory = got["dir"] if subpath == "." else os.path.join(got["dir"], subpath)
    if not os.path.isdir(directory):
        raise CheckoutError("%s is not a directory in %s at %s" % (path, label, got["commit"]), NO_DIRECTORY)
    return {"repo": label, "version": version, "checkout": got["dir"], "path": directory, "commit": got["commit"],
            "stack": stack, "fetched": got["fetched"]}
