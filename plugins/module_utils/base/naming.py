# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stack names and credential-free repository URLs. Pure functions, no I/O.

Used by the ``stacksync.k8s.stack_name`` / ``stacksync.k8s.redact_url`` filters and the
``stacksync.k8s.source`` role; importable from modules too (Python >= 3.9, stdlib only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

#: Longest valid label value.
MAX_LABEL_LENGTH = 63
#: Hex digits of the hash appended to shortened names.
HASH_LENGTH = 10

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
# ``scheme://userinfo@`` anywhere in a text (userinfo: no '/', '@' or whitespace).
_URL_USERINFO_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)([^/@\s]*)@")
# the query string and fragment of a ``scheme://`` URL anywhere in a text (up to whitespace or a quote)
_URL_QUERY_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>?#]*)([?#][^\s'\"<>]*)")
#: ports a source identity leaves out (the scheme's own)
_DEFAULT_PORTS = {"https": "443", "http": "80", "ssh": "22", "git+ssh": "22", "ssh+git": "22", "git": "9418"}


def _url_parts(url):
    """``(scheme, authority, path)`` of a git URL, scp-like address (scheme ``scp``) or local path (scheme ``""``).

    Query strings and fragments of ``scheme://`` URLs are dropped (they can carry tokens); the authority
    has its ``user[:password]@`` part removed.
    """
    text = url.strip()
    scheme = _SCHEME_RE.match(text)
    if scheme:
        rest = re.split(r"[?#]", text[scheme.end():], maxsplit=1)[0]
        authority, _sep, path = rest.partition("/")
        return text[:scheme.end() - 3].lower(), authority.rpartition("@")[2], path
    # scp-like ``[user@]host:path`` (a ':' before any '/'), as git understands it.
    colon = text.find(":")
    slash = text.find("/")
    if colon > 0 and (slash < 0 or colon < slash) and not re.match(r"^[A-Za-z]:[\\/]", text):
        return "scp", text[:colon].rpartition("@")[2], text[colon + 1:]
    return "", "", text


def _split_url(url):
    """``(authority, path)`` of :func:`_url_parts` (the legacy names' view of a URL)."""
    return _url_parts(url)[1:]


def redact_url(text, mask=None):
    """Remove credentials from a URL, or from every URL inside a text: ``user:token@`` and the query string.

    ``https://user:tok@github.com/acme/infra.git?access_token=x`` -> ``https://github.com/acme/infra.git``;
    scp-like ``git@github.com:acme/infra.git`` -> ``github.com:acme/infra.git``. A query string or fragment
    (``?private_token=...``) is dropped whole: git never needs one to name a repository. With ``mask`` the
    credentials of ``scheme://`` URLs are replaced by it instead (``https://********@host/x?********``:
    module arguments show that something was given).
    """
    if not isinstance(text, str):
        raise TypeError("redact_url expects a string, got %s" % type(text).__name__)
    if mask is not None:
        text = _URL_USERINFO_RE.sub(lambda m: m.group(1) + mask + "@", text)
        return _URL_QUERY_RE.sub(lambda m: m.group(1) + m.group(2)[0] + mask, text)
    stripped = text.strip()
    if stripped and not _SCHEME_RE.match(stripped) and not re.search(r"\s", stripped):
        authority, path = _split_url(stripped)
        if authority:
            return authority + ":" + path
    return _URL_QUERY_RE.sub(r"\1", _URL_USERINFO_RE.sub(r"\1", text))


def url_userinfo(text):
    """The credentials of the ``scheme://`` URLs in ``text``: their ``user:password`` parts and query strings
    (to mask them elsewhere)."""
    found = set(m.group(2) for m in _URL_USERINFO_RE.finditer(text or "") if m.group(2))
    return found | set(m.group(2)[1:] for m in _URL_QUERY_RE.finditer(text or "") if len(m.group(2)) > 1)


def _slug(text):
    text = text.lower()
    text = re.sub(r"[^a-z0-9.]+", "-", text)
    text = re.sub(r"\.{2,}", ".", text)
    text = re.sub(r"[-.]*-[-.]*", "-", text)  # '-.', '.-', '--' -> '-'
    return text.strip("-.")


def _check_types(url, path):
    if not isinstance(url, str):
        raise TypeError("the repository URL must be a string, got %s" % type(url).__name__)
    if path is None:
        return ""
    if not isinstance(path, str):
        raise TypeError("path must be a string, got %s" % type(path).__name__)
    return path


def normalize_source(url, path=""):
    """Credential-free, lower-case ``[a-z0-9.-]`` form of a repository URL plus a path in it (the legacy names).

    Scheme, ``user:token@``, query, fragment, a trailing ``.git`` and punctuation are dropped.
    """
    path = _check_types(url, path)
    authority, repo_path = _split_url(url)
    repo_path = repo_path.rstrip("/")
    if repo_path.lower().endswith(".git"):
        repo_path = repo_path[:-4]
    parts = [authority, *repo_path.split("/"), *path.split("/")]
    parts = [p for p in parts if p not in ("", ".")]
    return _slug("-".join(parts))


def legacy_stack_name(url, path=""):
    """The default stack name of releases before 0.2.0: :func:`normalize_source`, cut to 63 characters.

    Not injective (``acme/apps`` with path ``prod`` and ``acme/apps-prod`` give one name): kept to find the
    stacks those releases named, so that they can be renamed (see :func:`stack_name`).

    :raises ValueError: if nothing usable is left (e.g. an empty URL).
    """
    name = normalize_source(url, path)
    if not name:
        raise ValueError("cannot derive a stack name from %r" % redact_url(url))
    if len(name) <= MAX_LABEL_LENGTH:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:HASH_LENGTH]
    head = name[: MAX_LABEL_LENGTH - HASH_LENGTH - 1].rstrip("-.")
    return head + "-" + digest


def _segments(path):
    """The ``/``-separated segments of ``path`` without empty and ``.`` ones."""
    return [p for p in path.split("/") if p not in ("", ".")]


def _escaped(segments):
    """``segments`` joined by ``/`` with ``%`` and ``#`` percent-encoded (``#`` separates the path in a source id)."""
    return "/".join(s.replace("%", "%25").replace("#", "%23") for s in segments)


def _host_port(scheme, authority):
    """The authority lower-cased, without the scheme's default port (or an empty one)."""
    host, port = authority.lower(), ""
    match = re.match(r"^(.*?):(\d*)$", host)
    if match and not host.endswith("]"):
        host, port = match.groups()
    if port and port != _DEFAULT_PORTS.get("ssh" if scheme == "scp" else scheme):
        return "%s:%s" % (host, port)
    return host


def source_id(url, path=""):
    """The canonical identity of a source: its repository and the directory in it, as one string.

    ``github.com/acme/infra#clusters/prod``, ``file:///srv/git/infra``. Pure and free of credentials:
    scheme, ``user:token@``, a default port, query, fragment, a trailing ``.git`` or ``/`` and empty or ``.``
    segments are dropped and the host is lower-cased, so every spelling of one repository gives one id
    (``https://host/x.git``, ``https://host/x``, ``git@host:x.git``, ``ssh://git@host/x``); the rest (the
    repository's path and the directory, case included) is kept, so distinct sources never share one. Local
    paths and ``file://`` URLs become ``file://`` plus the path (relative paths stay relative).

    :raises ValueError: if the URL names nothing (no host and no path).
    """
    path = _check_types(url, path)
    scheme, authority, repo_path = _url_parts(url)
    segments = _segments(repo_path)
    if segments and segments[-1].lower().endswith(".git"):
        segments[-1] = segments[-1][:-4]
        segments = [s for s in segments if s]
    if scheme == "file" or (scheme == "" and not authority):  # file://host/x is the local /x, as for git
        base = "file://" + ("/" if scheme == "file" or repo_path.strip().startswith("/") else "") + _escaped(segments)
    else:
        base = _host_port(scheme, authority).rstrip(":") + "/" + _escaped(segments)
    if base in ("file://", "file:///", "/"):
        raise ValueError("cannot derive a stack name from %r" % redact_url(url))
    sub = _segments(path)
    return base + ("#" + _escaped(sub) if sub else "")


def stack_name(url, path=""):
    """Default stack name of a source: its repository's last path segment and the path, then a hash.

    ``infra-clusters-prod-3f0c9a1b2d`` for ``https://github.com/acme/infra.git`` and ``clusters/prod``. A valid
    label value of at most 63 characters; the last 10 hex digits are a SHA-256 of :func:`source_id`, so the
    spellings of one repository give one name and distinct sources distinct names (``acme/apps`` with path
    ``prod`` and ``acme/apps-prod`` no longer meet). The readable part is cut to fit.

    :raises ValueError: if the URL names nothing.
    """
    sid = source_id(url, path)
    repo_part = sid.split("#", 1)[0]
    words = [repo_part.rstrip("/").rsplit("/", 1)[-1], *_segments(path or "")]
    digest = hashlib.sha256(sid.encode("utf-8")).hexdigest()[:HASH_LENGTH]
    head = _slug("-".join(words).replace("%23", "-").replace("%25", "-"))[: MAX_LABEL_LENGTH - HASH_LENGTH - 1]
    head = head.rstrip("-.")
    return (head + "-" + digest) if head else digest
