# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection options (same names, defaults and ``K8S_AUTH_*`` variables as kubernetes.core).

The ``kubernetes`` package is used only to *load* a ``kubernetes.client.Configuration`` (kubeconfig
files or dicts, contexts, exec/auth plugins, in-cluster service account); requests then go through
:class:`.client.KubeClient`. Precedence, like kubernetes.core: module option, then
``K8S_AUTH_<OPTION>`` (or the legacy ``K8S_AUTH_<ALIAS>``), then kubeconfig / in-cluster defaults.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

try:
    from kubernetes import config as kube_config
    from kubernetes.client import Configuration

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError as _e:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = _e

try:
    import urllib3

    HAS_URLLIB3 = True
    URLLIB3_IMPORT_ERROR = None
except ImportError as _e:
    HAS_URLLIB3 = False
    URLLIB3_IMPORT_ERROR = _e

from ansible_collections.stacksync.k8s.plugins.module_utils.client import KubeClient

AUTH_PROXY_HEADERS_SPEC = dict(
    proxy_basic_auth=dict(type="str", no_log=True),
    basic_auth=dict(type="str", no_log=True),
    user_agent=dict(type="str"),
)

AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type="raw"),
    context=dict(type="str"),
    host=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    username=dict(type="str"),
    password=dict(type="str", no_log=True),
    validate_certs=dict(type="bool", aliases=["verify_ssl"]),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
    client_cert=dict(type="path", aliases=["cert_file"]),
    client_key=dict(type="path", aliases=["key_file"], no_log=False),
    proxy=dict(type="str"),
    no_proxy=dict(type="str"),
    proxy_headers=dict(type="dict", options=AUTH_PROXY_HEADERS_SPEC),
    persist_config=dict(type="bool"),
    impersonate_user=dict(type="str"),
    impersonate_groups=dict(type="list", elements="str"),
)

#: option name -> legacy alias also accepted as ``K8S_AUTH_<ALIAS>`` (as kubernetes.core does).
_ENV_ALIASES = dict(validate_certs="verify_ssl", ca_cert="ssl_ca_cert", client_cert="cert_file", client_key="key_file")

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class AuthError(Exception):
    pass


def _env_bool(value):
    return value.lower() not in ("0", "false", "no", "off", "")


def resolve_auth_params(params, environ=None):
    """Merge module options with ``K8S_AUTH_*`` environment variables (options win)."""
    environ = os.environ if environ is None else environ
    out = {}
    for name, spec in AUTH_ARG_SPEC.items():
        value = params.get(name)
        if value is None and name != "proxy_headers":
            env = environ.get("K8S_AUTH_" + name.upper())
            if env is None and name in _ENV_ALIASES:
                env = environ.get("K8S_AUTH_" + _ENV_ALIASES[name].upper())
            if env is not None:
                if spec.get("type") == "bool":
                    value = _env_bool(env)
                elif spec.get("type") == "list":
                    value = [x for x in env.split(",") if x]
                elif spec.get("type") == "path":
                    value = os.path.expanduser(env)
                else:
                    value = env
        if name == "proxy_headers":
            headers = dict(value or {})
            for key in AUTH_PROXY_HEADERS_SPEC:
                if headers.get(key) is None:
                    env = environ.get("K8S_AUTH_PROXY_HEADERS_" + key.upper())
                    if env is not None:
                        headers[key] = env
            value = dict((k, v) for k, v in headers.items() if v is not None) or None
        out[name] = value
    return out


def _context_namespace_from_kubeconfig(kubeconfig, context):
    try:
        if isinstance(kubeconfig, dict):
            contexts = kubeconfig.get("contexts") or []
            name = context or kubeconfig.get("current-context")
            for ctx in contexts:
                if ctx.get("name") == name:
                    return (ctx.get("context") or {}).get("namespace")
            return None
        contexts, active = kube_config.list_kube_config_contexts(config_file=kubeconfig)
        if context:
            for ctx in contexts:
                if ctx.get("name") == context:
                    return (ctx.get("context") or {}).get("namespace")
            return None
        return ((active or {}).get("context") or {}).get("namespace")
    except Exception:
        return None


def load_configuration(auth):
    """Return ``(Configuration, context_namespace_or_None)`` for resolved auth params."""
    cfg = Configuration()
    namespace = None
    host = (auth.get("host") or "").rstrip("/") or None

    def have(*names):
        return all(auth.get(n) for n in names)

    self_sufficient = host and (have("api_key") or have("username", "password") or have("client_cert", "client_key"))
    kubeconfig = auth.get("kubeconfig")
    opts = dict(context=auth.get("context"), client_configuration=cfg)
    if auth.get("persist_config") is not None:
        opts["persist_config"] = auth["persist_config"]
    try:
        if self_sufficient:
            pass
        elif kubeconfig or auth.get("context"):
            if isinstance(kubeconfig, dict):
                kube_config.load_kube_config_from_dict(config_dict=kubeconfig, **opts)
            else:
                kube_config.load_kube_config(config_file=kubeconfig and os.path.expanduser(kubeconfig), **opts)
            namespace = _context_namespace_from_kubeconfig(kubeconfig or None, auth.get("context"))
        else:
            try:
                kube_config.load_incluster_config(client_configuration=cfg)
                try:
                    with open(os.path.join(SA_DIR, "namespace")) as f:
                        namespace = f.read().strip() or None
                except (IOError, OSError):
                    namespace = None
            except kube_config.ConfigException:
                kube_config.load_kube_config(**opts)
                namespace = _context_namespace_from_kubeconfig(None, auth.get("context"))
    except Exception as e:
        raise AuthError("Could not load Kubernetes credentials: %s" % (e,)) from None

    if host:
        cfg.host = host
    if auth.get("api_key"):
        cfg.api_key = {"authorization": "Bearer " + auth["api_key"]}
        cfg.api_key_prefix = {}
        cfg.refresh_api_key_hook = None
    if auth.get("username") is not None:
        cfg.username = auth["username"]
    if auth.get("password") is not None:
        cfg.password = auth["password"]
    if auth.get("validate_certs") is not None:
        cfg.verify_ssl = auth["validate_certs"]
    if auth.get("ca_cert"):
        cfg.ssl_ca_cert = auth["ca_cert"]
    if auth.get("client_cert"):
        cfg.cert_file = auth["client_cert"]
    if auth.get("client_key"):
        cfg.key_file = auth["client_key"]
    if auth.get("proxy"):
        cfg.proxy = auth["proxy"]
    if auth.get("no_proxy"):
        cfg.no_proxy = auth["no_proxy"]
    if auth.get("proxy_headers"):
        cfg.proxy_headers = urllib3.util.make_headers(**auth["proxy_headers"])
    if not cfg.host:
        raise AuthError("No Kubernetes API server found: set host, kubeconfig or K8S_AUTH_* variables")
    return cfg, namespace


def _bypass_proxy(host, no_proxy):
    if not no_proxy:
        return False
    hostname = urllib3.util.parse_url(host).host or ""
    for entry in no_proxy.split(","):
        entry = entry.strip().lstrip("*")
        if not entry:
            continue
        if entry == "*" or hostname == entry.lstrip(".") or hostname.endswith("." + entry.lstrip(".")):
            return True
    return False


def client_from_configuration(cfg, impersonate_user=None, impersonate_groups=None, maxsize=8):
    """Build a :class:`KubeClient` from a ``Configuration`` (TLS, proxy, auth header)."""
    pool = {}
    if cfg.host.startswith("https"):
        if cfg.verify_ssl:
            pool["cert_reqs"] = "CERT_REQUIRED"
            if cfg.ssl_ca_cert:
                pool["ca_certs"] = cfg.ssl_ca_cert
            else:
                try:
                    import certifi  # pylint: disable=import-outside-toplevel

                    pool["ca_certs"] = certifi.where()
                except ImportError:
                    pass
        else:
            pool["cert_reqs"] = "CERT_NONE"
        if cfg.cert_file:
            pool["cert_file"] = cfg.cert_file
        if cfg.key_file:
            pool["key_file"] = cfg.key_file
        if getattr(cfg, "assert_hostname", None) is not None:
            pool["assert_hostname"] = cfg.assert_hostname
        if getattr(cfg, "tls_server_name", None):
            pool["server_hostname"] = cfg.tls_server_name
    if not cfg.verify_ssl:
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    basic = None
    if cfg.username is not None and cfg.password is not None and cfg.username != "":
        basic = urllib3.util.make_headers(basic_auth="%s:%s" % (cfg.username, cfg.password)).get("authorization")

    def auth():
        token = cfg.get_api_key_with_prefix("authorization") or cfg.get_api_key_with_prefix("BearerToken")
        if token:
            return {"Authorization": token}
        if basic:
            return {"Authorization": basic}
        return {}

    headers = {"User-Agent": "stacksync.k8s"}
    if impersonate_user:
        headers["Impersonate-User"] = impersonate_user
    groups = list(impersonate_groups or [])
    proxy = cfg.proxy if cfg.proxy and not _bypass_proxy(cfg.host, getattr(cfg, "no_proxy", None)) else None
    return KubeClient(cfg.host, auth=auth, headers=headers, pool_kwargs=pool, proxy=proxy,
                      proxy_headers=getattr(cfg, "proxy_headers", None), impersonate_groups=groups, maxsize=maxsize)


def build_client(params, maxsize=8, environ=None):
    """``(KubeClient, context_namespace)`` from module params (+ environment)."""
    auth = resolve_auth_params(params, environ)
    cfg, namespace = load_configuration(auth)
    client = client_from_configuration(cfg, auth.get("impersonate_user"), auth.get("impersonate_groups"), maxsize)
    return client, namespace
