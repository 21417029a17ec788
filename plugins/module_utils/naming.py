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


def _split_url(url):
    """Return ``(authority, path)`` of a git URL, scp-like address or local path.

    Query strings and fragments are dropped (they can carry tokens); the authority
    has its ``user[:password]@`` part removed.
    """
    text = url.strip()
    scheme = _SCHEME_RE.match(text)
    if scheme:
        rest = text[scheme.end():]
        rest = re.split(r"[?#]", rest, maxsplit=1)[0]
        authority, _sep, path = rest.partition("/")
        authority = authority.rpartition("@")[2]
        return authority, path
    # scp-like ``[user@]host:path`` (a ':' before any '/'), as git understands it.
    colon = text.find(":")
    slash = text.find("/")
    if colon > 0 and (slash < 0 or colon < slash) and not re.match(r"^[A-Za-z]:[\\/]", text):
        authority, path = text[:colon], text[colon + 1:]
        authority = authority.rpartition("@")[2]
        return authority, path
    return "", text


def redact_url(text, mask=None):
    """Remove credentials (``user:token@``) from a URL, or from every URL inside a text.

    ``https://user:tok@github.com/acme/infra.git`` -> ``https://github.com/acme/infra.git``;
    scp-like ``git@github.com:acme/infra.git`` -> ``github.com:acme/infra.git``. Query
    strings are kept (use :func:`stack_name` for a fully normalised name). With ``mask`` the
    credentials of ``scheme://`` URLs are replaced by it instead (``https://********@host``: module
    arguments show that something was given).
    """
    if not isinstance(text, str):
        raise TypeError("redact_url expects a string, got %s" % type(text).__name__)
    if mask is not None:
        return _URL_USERINFO_RE.sub(lambda m: m.group(1) + mask + "@", text)
    stripped = text.strip()
    if stripped and not _SCHEME_RE.match(stripped) and not re.search(r"\s", stripped):
        authority, path = _split_url(stripped)
        if authority:
            return authority + ":" + path
    return _URL_USERINFO_RE.sub(r"\1", text)


def url_userinfo(text):
    """The ``user:password`` parts of the ``scheme://`` URLs in ``text`` (to mask them elsewhere)."""
    return set(m.group(2) for m in _URL_USERINFO_RE.finditer(text or "") if m.group(2))


def _slug(text):
    text = text.lower()
    text = re.sub(r"[^a-z0-9.]+", "-", text)
    text = re.sub(r"\.{2,}", ".", text)
    text = re.sub(r"[-.]*-[-.]*", "-", text)  # '-.', '.-', '--' -> '-'
    return text.strip("-.")


def normalize_source(url, path=""):
    """Credential-free, lower-case ``[a-z0-9.-]`` form of a repository URL plus a path in it.

    Scheme, ``user:token@``, query, fragment, a trailing ``.git`` and punctuation are dropped.
    """
    if not isinstance(url, str):
        raise TypeError("the repository URL must be a string, got %s" % type(url).__name__)
    if path is None:
        path = ""
    if not isinstance(path, str):
        raise TypeError("path must be a string, got %s" % type(path).__name__)
    authority, repo_path = _split_url(url)
    repo_path = repo_path.rstrip("/")
    if repo_path.lower().endswith(".git"):
        repo_path = repo_path[:-4]
    parts = [authority, *repo_path.split("/"), *path.split("/")]
    parts = [p for p in parts if p not in ("", ".")]
    return _slug("-".join(parts))


def stack_name(url, path=""):
    """Default stack name for a repository URL (and a path inside it): a valid label value.

    Names longer than 63 characters are cut and end in ``-`` plus a stable hash of the
    whole normalised name, so distinct long sources keep distinct names.

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
