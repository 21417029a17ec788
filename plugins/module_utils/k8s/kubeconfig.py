# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubeconfig semantics as kubectl applies them: which files, how they merge, what a context means
(server, TLS, credentials, impersonation), what kubectl refuses as contradictory, and how module
options override it. Pure functions, no I/O: reading the files and running credential plugins is
:mod:`.auth`'s and :mod:`.execcred`'s job.
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
PROXY_SCHEMES = ("http", "https", "socks5")


class AuthError(Exception):
    pass


class ClusterConfig(object):
    """Where the API server is and how to authenticate to it (what :class:`KubeClient` needs).

    ``*_file`` are paths, ``*_data`` PEM bytes. ``authorization``, when set, is called per request for
    the ``Authorization`` header (exec plugin, auth-provider, in-cluster). ``exec`` is the user's exec
    plugin (see :mod:`.execcred`), ``auth_provider`` its auth-provider (loaded by the ``kubernetes``
    package). ``impersonate``: the user entry's ``as`` / ``as-uid`` / ``as-groups`` / ``as-user-extra``.
    """

    def __init__(self, host=None):
        self.host = host
        self.verify_ssl = True
        self.ca_file = self.ca_data = None
        self.cert_file = self.cert_data = None
        self.key_file = self.key_data = None
        self.tls_server_name = None
        self.assert_hostname = None
        self.proxy = self.no_proxy = self.proxy_headers = None
        self.token = self.token_file = None
        self.username = self.password = None
        self.namespace = None
        self.authorization = None
        self.exec = None
        self.auth_provider = None
        self.user_name = None
        self.impersonate = dict(user=None, uid=None, groups=[], extra={})


# -- kubeconfig: pure functions -------------------------------------------------------------------
def kubeconfig_paths(value=None, environ=None):
    """The kubeconfig files to read: ``value`` (the option), else ``KUBECONFIG``, else ``~/.kube/config``.

    Each may list several files separated by ``os.pathsep`` (like ``KUBECONFIG``; kubernetes.core's
    option, read by the ``kubernetes`` package, is split the same way).
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
    return os.path.normpath(os.path.join(base, path)) if base and not os.path.isabs(path) else path


def _data(value, what):
    """Base64 ``*-data`` value as bytes (the message names the field, never the value)."""
    try:
        return base64.b64decode("".join(str(value).split()), validate=True)
    except (binascii.Error, ValueError):
        raise AuthError("Invalid kubeconfig: %s is not valid base64" % what) from None


def _file_or_data(entry, base, key, what):
    """``(path, None)`` or ``(None, bytes)`` for ``key`` / ``key-data``."""
    if entry.get(key + "-data"):
        return None, _data(entry[key + "-data"], "%s-data of %s" % (key, what))
    if entry.get(key):
        return _path(base, entry[key]), None
    return None, None


def _true(value):
    return value is True or str(value).lower() == "true"


# -- what kubectl refuses (client-go's clientcmd validation and transport checks, in its words) ------
def proxy_problem(url):
    """kubectl's reason to refuse a proxy URL (None if it is one kubectl accepts)."""
    scheme = str(url).split("://", 1)[0].lower() if "://" in str(url) else ""
    if scheme not in PROXY_SCHEMES:
        return 'unsupported scheme "%s", must be http, https, or socks5' % scheme
    return None


def cluster_problems(name, cluster):
    """kubectl's reasons to refuse the cluster entry ``name`` of the context in use."""
    problems = []
    ca_file = cluster.get("certificate-authority")
    proxy = cluster.get("proxy-url")
    if proxy and proxy_problem(proxy):
        problems.append("invalid 'proxy-url' \"%s\" for cluster \"%s\": %s" % (proxy, name, proxy_problem(proxy)))
    if cluster.get("certificate-authority") and cluster.get("certificate-authority-data"):
        problems.append("certificate-authority-data and certificate-authority are both specified for %s. "
                        "certificate-authority-data will override." % name)
    elif _true(cluster.get("insecure-skip-tls-verify")) and (cluster.get("certificate-authority-data") or ca_file):
        problems.append("specifying a root certificates file with the insecure flag is not allowed")
    return problems


def _exec_problems(name, plugin, has_provider):
    problems = []
    if has_provider:
        problems.append("authProvider cannot be provided in combination with an exec plugin for %s" % name)
    for key in ("command", "apiVersion"):
        if not plugin.get(key):
            problems.append("%s must be specified for %s to use exec authentication plugin" % (key, name))
    if any(not (isinstance(e, dict) and e.get("name")) for e in plugin.get("env") or []):
        problems.append("env variable name must be specified for %s to use exec authentication plugin" % name)
    mode = plugin.get("interactiveMode") or ""
    if not mode and plugin.get("apiVersion") == "client.authentication.k8s.io/v1":
        problems.append("interactiveMode must be specified for %s to use exec authentication plugin" % name)
    elif mode and mode not in ("Never", "IfAvailable", "Always"):
        problems.append('invalid interactiveMode for %s: "%s"' % (name, mode))
    return problems


def user_problems(name, user):
    """kubectl's reasons to refuse the user entry ``name`` of the context in use."""
    problems = []
    if user.get("client-certificate") or user.get("client-certificate-data"):
        if user.get("client-certificate") and user.get("client-certificate-data"):
            problems.append("client-cert-data and client-cert are both specified for %s. client-cert-data will override."
                            % name)
        if user.get("client-key") and user.get("client-key-data"):
            problems.append("client-key-data and client-key are both specified for %s; client-key-data will override"
                            % name)
        if not (user.get("client-key") or user.get("client-key-data")):
            problems.append("client-key-data or client-key must be specified for %s to use the clientCert "
                            "authentication method." % name)
    if isinstance(user.get("exec"), dict):
        problems.extend(_exec_problems(name, user["exec"], bool(user.get("auth-provider"))))
    methods = (["token"] if user.get("token") else []) + (["basicAuth"] if user.get("username") or user.get("password") else [])
    if len(methods) > 1:
        problems.append("more than one authentication method found for %s; found [%s], only one is allowed"
                        % (name, " ".join(methods)))
    if (user.get("as-uid") or user.get("as-groups") or user.get("as-user-extra")) and not user.get("as"):
        problems.append("requesting uid, groups or user-extra for %s without impersonating a user" % name)
    return problems


def refuse(source, context, problems):
    """Raise the :class:`AuthError` for kubectl's ``problems`` with a kubeconfig (nothing if there are none)."""
    if problems:
        raise AuthError('Invalid kubeconfig %s (context "%s"): %s (kubectl refuses it too)'
                        % (source, context, "; ".join(problems)))


# -- a context as a ClusterConfig ------------------------------------------------------------------
def _selected(merged, context):
    """``(name, context, cluster name, cluster, cluster base, user name, user, user base)`` of ``context``."""
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
    return name, ctx, cluster_name, cluster, cluster_base, user_name, user, user_base


def config_from_kubeconfig(merged, context=None):
    """:class:`ClusterConfig` of ``context`` (default: the current-context) of a merged kubeconfig.

    Raises :class:`AuthError` for what kubectl refuses. ``tokenFile`` is only resolved (``token_file``),
    not read; an ``exec`` plugin's relative command (one with a ``/``) is resolved against its file's directory.
    """
    name, ctx, cluster_name, cluster, cluster_base, user_name, user, user_base = _selected(merged, context)
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise AuthError('Cluster "%s" of context "%s" has no server in %s' % (cluster_name, name, merged["source"]))
    refuse(merged["source"], name, cluster_problems(cluster_name, cluster) + user_problems(user_name or "", user))
    cfg = ClusterConfig(server)
    cfg.namespace = ctx.get("namespace") or None
    cfg.verify_ssl = not _true(cluster.get("insecure-skip-tls-verify"))
    cfg.ca_file, cfg.ca_data = _file_or_data(cluster, cluster_base, "certificate-authority", 'cluster "%s"' % cluster_name)
    cfg.tls_server_name = cluster.get("tls-server-name") or None
    cfg.proxy = cluster.get("proxy-url") or None
    who = 'user "%s"' % user_name
    cfg.user_name = user_name
    cfg.cert_file, cfg.cert_data = _file_or_data(user, user_base, "client-certificate", who)
    cfg.key_file, cfg.key_data = _file_or_data(user, user_base, "client-key", who)
    cfg.token = user.get("token") or None
    cfg.token_file = _path(user_base, user["tokenFile"]) if user.get("tokenFile") else None
    cfg.username = user.get("username")
    cfg.password = user.get("password")
    cfg.impersonate = dict(user=user.get("as") or None, uid=user.get("as-uid") or None,
                           groups=[str(g) for g in user.get("as-groups") or []],
                           extra=dict((str(k), [str(v) for v in (vs if isinstance(vs, list) else [vs])])
                                      for k, vs in (user.get("as-user-extra") or {}).items()))
    if isinstance(user.get("exec"), dict):
        cfg.exec = _exec_entry(user["exec"], user_base, user_name, cluster, cluster_base)
    elif user.get("auth-provider"):
        cfg.auth_provider = user["auth-provider"]
    return cfg


def _exec_entry(plugin, base, user_name, cluster, cluster_base):
    """The exec plugin of a user: its settings, the command resolved, and the cluster it is for."""
    command = str(plugin["command"])
    if os.sep in command:
        command = _path(base, command)
    ca_file, ca_data = _file_or_data(cluster, cluster_base, "certificate-authority", "the cluster")
    return dict(plugin, command=command, user=user_name,
                cluster=dict(server=cluster.get("server"), tls_server_name=cluster.get("tls-server-name"),
                             insecure=_true(cluster.get("insecure-skip-tls-verify")), ca_file=ca_file, ca_data=ca_data,
                             proxy_url=cluster.get("proxy-url"), disable_compression=_true(cluster.get("disable-compression")),
                             extensions=cluster.get("extensions") or []))


def impersonation(cfg, user=None, groups=None):
    """The impersonation a request carries: the kubeconfig's, with ``user`` / ``groups`` (the module's
    ``impersonate_*`` options) replacing its ``as`` / ``as-groups`` as kubectl's ``--as`` / ``--as-group``
    do (its ``as-uid`` and ``as-user-extra`` stay). Raises :class:`AuthError` as kubectl does for
    groups, uid or extra without a user."""
    imp = dict(cfg.impersonate)
    if user:
        imp["user"] = user
    if groups:
        imp["groups"] = list(groups)
    if not imp["user"] and (imp["groups"] or imp["uid"] or imp["extra"]):
        raise AuthError("requesting uid, groups or user-extra for %s without impersonating a user"
                        % (cfg.user_name or "the connection"))
    return imp if imp["user"] else None


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


def has_static_credentials(cfg):
    """True when a token, basic credentials or a client certificate authenticate: an exec plugin is not run
    then (as client-go: "the intention is to use the provided token")."""
    return bool(cfg.token or cfg.token_file or (cfg.username and cfg.password is not None)
                or cfg.cert_file or cfg.cert_data)


def static_authorization(cfg):
    """The ``Authorization`` header value of a bearer token or basic credentials (None if neither)."""
    if cfg.token:
        return "Bearer " + cfg.token
    if cfg.username and cfg.password is not None:
        return urllib3.util.make_headers(basic_auth="%s:%s" % (cfg.username, cfg.password)).get("authorization")
    return None
