# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubeconfig semantics as kubectl applies them: which files, how they merge, what a context means
(server, TLS, credentials), and how module options override it. Pure functions, no I/O: reading the
files and running credential plugins is :mod:`.auth`'s job.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import os

try:
    import urllib3
except ImportError:  # pragma: no cover - checked with CLIENT_REQUIREMENTS before anything runs
    urllib3 = None

DEFAULT_KUBECONFIG = "~/.kube/config"


class AuthError(Exception):
    pass


class ClusterConfig(object):
    """Where the API server is and how to authenticate to it (what :class:`KubeClient` needs).

    ``*_file`` are paths, ``*_data`` PEM bytes (data wins). ``authorization``, when set, is called
    per request for the ``Authorization`` header (exec / auth-provider / in-cluster, loaded by the
    ``kubernetes`` package). ``needs_kubernetes`` names the kubeconfig plugin ("exec",
    "auth-provider") that only the ``kubernetes`` package can run.
    """

    def __init__(self, host=None):
        self.host = host
        self.verify_ssl = True
        self.ca_file = None
        self.ca_data = None
        self.cert_file = None
        self.cert_data = None
        self.key_file = None
        self.key_data = None
        self.tls_server_name = None
        self.assert_hostname = None
        self.proxy = None
        self.no_proxy = None
        self.proxy_headers = None
        self.token = None
        self.token_file = None
        self.username = None
        self.password = None
        self.namespace = None
        self.authorization = None
        self.needs_kubernetes = None


# -- kubeconfig: pure functions -------------------------------------------------------------------
def kubeconfig_paths(value=None, environ=None):
    """The kubeconfig files to read: ``value`` (the option), else ``KUBECONFIG``, else ``~/.kube/config``.

    Each may list several files separated by ``os.pathsep`` (like ``KUBECONFIG``).
    """
    environ = os.environ if environ is None else environ
    text = value or environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    return [os.path.expanduser(p) for p in text.split(os.pathsep) if p]


def _entries(doc, section, key):
    """``(name, value dict)`` of the named entries of a kubeconfig section (``clusters``: ``cluster``...)."""
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name"):
            value = entry.get(key)
            yield entry["name"], value if isinstance(value, dict) else {}


def merge_kubeconfigs(docs):
    """Merge ``[(path or None, kubeconfig dict)]`` like kubectl: the first definition of a name wins.

    Returns ``{"source", "current-context", "clusters"|"users"|"contexts": {name: (value, base_dir)}}``
    where ``base_dir`` is the directory relative paths of that entry are resolved against (None for a dict).
    """
    merged = dict(clusters={}, users={}, contexts={})
    merged["current-context"] = None
    merged["source"] = ", ".join(path for path, dummy in docs if path) or "the kubeconfig dictionary"
    for path, doc in docs:
        base = os.path.dirname(os.path.abspath(path)) if path else None
        for section, key in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for name, value in _entries(doc, section, key):
                merged[section].setdefault(name, (value, base))
        if not merged["current-context"]:
            merged["current-context"] = doc.get("current-context") or None
    return merged


def _path(base, path):
    """A file path of a kubeconfig entry, resolved against its file's directory."""
    path = os.path.expanduser(str(path))
    return os.path.join(base, path) if base and not os.path.isabs(path) else path


def _data(value, what):
    """Base64 ``*-data`` value as bytes (the message names the field, never the value)."""
    try:
        return base64.b64decode("".join(str(value).split()), validate=True)
    except (binascii.Error, ValueError):
        raise AuthError("Invalid kubeconfig: %s is not valid base64" % what) from None


def _file_or_data(entry, base, key, what):
    """``(path, None)`` or ``(None, bytes)`` for ``key`` / ``key-data`` (data wins, like kubectl)."""
    if entry.get(key + "-data"):
        return None, _data(entry[key + "-data"], "%s-data of %s" % (key, what))
    if entry.get(key):
        return _path(base, entry[key]), None
    return None, None


def config_from_kubeconfig(merged, context=None):
    """:class:`ClusterConfig` of ``context`` (default: the current-context) of a merged kubeconfig.

    ``tokenFile`` is only resolved (``token_file``), not read. A user with an ``exec`` or
    ``auth-provider`` plugin gives a config with ``needs_kubernetes`` set.
    """
    source = merged["source"]
    name = context or merged["current-context"]
    if not name:
        raise AuthError("No context selected: %s sets no current-context and no context option was given" % source)
    if name not in merged["contexts"]:
        raise AuthError('Context "%s" not found in %s (contexts: %s)'
                        % (name, source, ", ".join(sorted(merged["contexts"])) or "none"))
    ctx = merged["contexts"][name][0]
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    if cluster_name not in merged["clusters"]:
        raise AuthError('Cluster "%s" of context "%s" not found in %s' % (cluster_name, name, source))
    if user_name and user_name not in merged["users"]:
        raise AuthError('User "%s" of context "%s" not found in %s' % (user_name, name, source))
    cluster, cluster_base = merged["clusters"][cluster_name]
    user, user_base = merged["users"][user_name] if user_name else ({}, None)
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise AuthError('Cluster "%s" of context "%s" has no server in %s' % (cluster_name, name, source))

    cfg = ClusterConfig(server)
    cfg.namespace = ctx.get("namespace") or None
    insecure = cluster.get("insecure-skip-tls-verify")
    cfg.verify_ssl = not (insecure is True or str(insecure).lower() == "true")
    cfg.ca_file, cfg.ca_data = _file_or_data(cluster, cluster_base, "certificate-authority", 'cluster "%s"' % cluster_name)
    cfg.tls_server_name = cluster.get("tls-server-name") or None
    cfg.proxy = cluster.get("proxy-url") or None
    who = 'user "%s"' % user_name
    cfg.cert_file, cfg.cert_data = _file_or_data(user, user_base, "client-certificate", who)
    cfg.key_file, cfg.key_data = _file_or_data(user, user_base, "client-key", who)
    cfg.token = user.get("token") or None
    cfg.token_file = _path(user_base, user["tokenFile"]) if user.get("tokenFile") else None
    cfg.username = user.get("username")
    cfg.password = user.get("password")
    for plugin in ("exec", "auth-provider"):
        if user.get(plugin):
            cfg.needs_kubernetes = plugin
    return cfg


def apply_auth_options(cfg, auth):
    """Let the module options / ``K8S_AUTH_*`` values (``auth``) override ``cfg``; returns ``cfg``."""
    host = (auth.get("host") or "").rstrip("/")
    if host:
        cfg.host = host
    if auth.get("username") and auth.get("password") is not None and not auth.get("api_key"):
        cfg.token = cfg.authorization = None  # basic auth from the options replaces kubeconfig credentials
    if auth.get("api_key"):
        cfg.token = auth["api_key"]
        cfg.authorization = None
    if auth.get("username") is not None:
        cfg.username = auth["username"]
    if auth.get("password") is not None:
        cfg.password = auth["password"]
    if auth.get("validate_certs") is not None:
        cfg.verify_ssl = auth["validate_certs"]
    if auth.get("ca_cert"):
        cfg.ca_file, cfg.ca_data = auth["ca_cert"], None
    if auth.get("client_cert"):
        cfg.cert_file, cfg.cert_data = auth["client_cert"], None
    if auth.get("client_key"):
        cfg.key_file, cfg.key_data = auth["client_key"], None
    for name in ("proxy", "no_proxy"):
        if auth.get(name):
            setattr(cfg, name, auth[name])
    if auth.get("proxy_headers"):
        cfg.proxy_headers = urllib3.util.make_headers(**auth["proxy_headers"])
    return cfg


def static_authorization(cfg):
    """The ``Authorization`` header value of a bearer token or basic credentials (None if neither)."""
    if cfg.token:
        return "Bearer " + cfg.token
    if cfg.username and cfg.password is not None:
        return urllib3.util.make_headers(basic_auth="%s:%s" % (cfg.username, cfg.password)).get("authorization")
    return None
