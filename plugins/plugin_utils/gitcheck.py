# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a source may hand to ``git``, and git's errors in plain words. Pure functions, no I/O.

A repository URL and a version come from people the job's author does not always trust (a survey
field, a tenant's inventory): neither may become a git option or pick a transport that runs
commands. :func:`repo_transport` and :func:`check_version` refuse them before git runs;
:mod:`.checkout` also puts ``--end-of-options`` before them and restricts git's protocols
(:data:`ALLOWED_PROTOCOLS`), so a value that got past the checks still cannot do either.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import redact_url

#: git's protocol names (``protocol.<name>.allow``) a source may use; ``file`` covers local paths too
ALLOWED_PROTOCOLS = ("https", "ssh", "file")
#: URL schemes and the protocol each is
SCHEMES = {"https": "https", "ssh": "ssh", "git+ssh": "ssh", "ssh+git": "ssh", "file": "file"}
#: schemes refused with a reason of their own
REFUSED_SCHEMES = {
    "http": "http:// sends the manifests (and any credentials) unencrypted, so anyone on the network path could "
            "change what is applied: use https://",
    "git": "git:// is unauthenticated and unencrypted: use https:// or ssh://",
}
MAX_VERSION_LENGTH = 255
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_HELPER_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9+.\-]*)::")  # git's <transport>::<address> (ext::, fd::, ...)
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
#: a commit id, full (SHA-1 or SHA-256) or abbreviated
SHA_RE = re.compile(r"^[0-9a-fA-F]{4,64}$")
FULL_SHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def repo_transport(url):
    """The git protocol (one of :data:`ALLOWED_PROTOCOLS`) ``url`` uses; raises ValueError saying what was refused.

    Refused: anything beginning with ``-`` (it would be a git option), control characters, remote-helper
    addresses (``ext::sh -c ...``, ``fd::``), and schemes other than ``https://``, ``ssh://`` (and
    ``git+ssh://``), ``file://``; scp-like ``[user@]host:path`` is ssh, a path is file. The messages name
    the URL without its credentials.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError("the repository URL is empty")
    shown = redact_url(url)
    if url != url.strip() or _CONTROL_RE.search(url):
        raise ValueError("repository URL %r refused: it has leading or trailing spaces or control characters"
                         % shown)
    if url.startswith("-"):
        raise ValueError("repository URL %r refused: it begins with '-', which git would read as an option" % shown)
    helper = _HELPER_RE.match(url)
    if helper:
        raise ValueError("repository URL %r refused: transport %r (a <transport>::<address> remote helper) is not "
                         "allowed; use https://, ssh:// or a local path" % (shown, helper.group(1)))
    scheme = _SCHEME_RE.match(url)
    if scheme:
        name = scheme.group(1).lower()
        if name in REFUSED_SCHEMES:
            raise ValueError("repository URL %r refused: %s" % (shown, REFUSED_SCHEMES[name]))
        if name not in SCHEMES:
            raise ValueError("repository URL %r refused: transport %r is not allowed (allowed: https://, ssh://, "
                             "file://, git@host:path, a local path)" % (shown, name))
        _check_host(url[scheme.end():].split("/", 1)[0].rpartition("@"), shown)
        return SCHEMES[name]
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash < 0 or colon < slash):  # scp-like [user@]host:path
        _check_host(url[:colon].rpartition("@"), shown)
        return "ssh"
    return "file"


def _check_host(user_host, shown):
    """Refuse a user or host beginning with ``-`` (ssh would read it as an option)."""
    user, _sep, host = user_host
    if host.startswith("-") or user.startswith("-"):
        raise ValueError("repository URL %r refused: its host or user begins with '-', which ssh would read as an "
                         "option" % shown)


def check_version(version):
    """Raise ValueError unless ``version`` is ``HEAD``, a commit id or a branch / tag name git would accept.

    Names follow ``git check-ref-format`` (no ``..``, ``@{``, ``//``, control characters, space, ``~ ^ : ? * [ \\``,
    no component beginning with ``.`` or ending with ``.lock``, no ``/`` or ``.`` at the end), and may not begin
    with ``-`` (an option) or ``+`` (a forced refspec).
    """
    if not isinstance(version, str) or not version:
        raise ValueError("version is empty: give a branch, a tag, a commit or HEAD")
    problem = _ref_problem(version)
    if problem:
        raise ValueError("version %r refused: %s" % (version[:MAX_VERSION_LENGTH], problem))


def _ref_problem(ref):
    """Why ``ref`` is not a name git accepts as a branch or tag (``git check-ref-format --allow-onelevel``)."""
    if len(ref) > MAX_VERSION_LENGTH:
        return "longer than %d characters" % MAX_VERSION_LENGTH
    if ref.startswith("-"):
        return "it begins with '-', which git would read as an option"
    if ref.startswith("+"):
        return "it begins with '+' (a refspec, not a name)"
    if _CONTROL_RE.search(ref) or " " in ref:
        return "it holds a space or a control character"
    bad = [c for c in "~^:?*[\\" if c in ref]
    if bad:
        return "it holds %s, which git does not allow in a branch or tag name" % " ".join(repr(c) for c in bad)
    for seq, why in (("..", "'..'"), ("@{", "'@{'"), ("//", "'//'")):
        if seq in ref:
            return "it holds %s, which git does not allow in a branch or tag name" % why
    if ref == "@" or ref.startswith("/") or ref.endswith("/") or ref.endswith("."):
        return "git does not allow a branch or tag name that is '@' or begins or ends with '/' or ends with '.'"
    for part in ref.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            return "a part of it begins with '.' or ends with '.lock', which git does not allow"
    return None


# -- git's errors in plain words ------------------------------------------------------------------
_REACH = (
    (re.compile(r"Could not resolve host(?:name)?:? ([^\s:']+)", re.I), "cannot reach host %s: no such host (DNS)"),
    (re.compile(r"Failed to connect to (\S+) port (\d+)", re.I), "cannot reach host %s port %s: connection failed"),
    (re.compile(r"ssh: connect to host (\S+) port (\d+): ([^\n]+)", re.I), "cannot reach host %s port %s: %s"),
    (re.compile(r"(Connection timed out|Operation timed out|Network is unreachable|Connection refused)", re.I),
     "cannot reach the host: %s"),
)
_TLS = re.compile(r"(SSL certificate problem: [^\n]+|server certificate verification failed[^\n]*)", re.I)
_AUTH = re.compile(r"Authentication failed|could not read (Username|Password)|terminal prompts disabled|"
                   r"Permission denied \(publickey|HTTP Basic: Access denied|returned error: 40[13]|"
                   r"Invalid username or password", re.I)
_HOST_KEY = re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED", re.I)
_NO_REPO = re.compile(r"does not appear to be a git repository|Repository not found|repository '[^']*' not found|"
                      r"returned error: 404|Could not read from remote repository", re.I)
_NO_REF = re.compile(r"couldn't find remote ref", re.I)
_NOT_ALLOWED = re.compile(r"transport '([^']+)' not allowed", re.I)


def plain_error(output, label, version):
    """What a failed ``git fetch`` of ``version`` from ``label`` (a redacted URL) means, in a sentence.

    ``output`` is git's own (already redacted) error output; it is quoted only when nothing below matches.
    """
    if _NOT_ALLOWED.search(output):
        return ("cannot fetch %s: git refused transport %r (allowed: %s)"
                % (label, _NOT_ALLOWED.search(output).group(1), ", ".join(ALLOWED_PROTOCOLS)))
    if _NO_REF.search(output):
        return "%s has no branch or tag %s" % (label, version)
    for pattern, words in _REACH:
        found = pattern.search(output)
        if found:
            return "cannot fetch %s: %s" % (label, words % found.groups())
    if _TLS.search(output):
        return "cannot fetch %s: the server's TLS certificate is not trusted (%s)" % (label, _TLS.search(output).group(1))
    if _HOST_KEY.search(output):
        return "cannot fetch %s: the SSH host key is unknown or changed (check known_hosts)" % label
    if _AUTH.search(output):
        return "cannot fetch %s: authentication failed (check the credentials or SSH key for it)" % label
    if _NO_REPO.search(output):
        return "cannot fetch %s: no such repository (or no access to it)" % label
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return "cannot fetch %s: git failed: %s" % (label, "; ".join(lines[-3:]) or "no output")
