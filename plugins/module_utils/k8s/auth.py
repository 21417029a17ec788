# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection options (same names, defaults and ``K8S_AUTH_*`` variables as kubernetes.core).

Precedence, like kubernetes.core: module option, then ``K8S_AUTH_<OPTION>`` (or the legacy
``K8S_AUTH_<ALIAS>``), then kubeconfig / in-cluster defaults. With ``k8s_auth_env: false`` (what
``stacksync.k8s.sources`` passes for a source with its own kubeconfig or context) no ``K8S_AUTH_*``
variable is read: only the options given and the kubeconfig count. Requests go through
:class:`.client.KubeClient`.

Kubeconfig files (or a dict) are read here, without the ``kubernetes`` package (importing it costs
more than 0.1 s per run, see docs/architecture.md), and mean what they mean to kubectl:
``KUBECONFIG`` lists merged (the first file to define a name or the current-context wins), relative
paths resolved against the file that holds them, what kubectl refuses as contradictory refused
(:mod:`.kubeconfig`), the user entry's impersonation honoured, exec plugins run as client-go runs
them (:mod:`.execcred`), ``*-data`` certificates and keys loaded into an ``ssl.SSLContext`` (a client
key only passes through a 0600 temporary file that is removed at once). The ``kubernetes`` package
is imported only for an ``auth-provider`` user and the in-cluster service account (tried first when
neither ``kubeconfig`` nor ``context`` is given): :mod:`.pkgauth`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os

try:
    import yaml

    HAS_YAML = True
except ImportError:
    HAS_YAML = False

try:
    import urllib3

    HAS_URLLIB3 = True
    URLLIB3_IMPORT_ERROR = None
except ImportError as _e:
    HAS_URLLIB3 = False
    URLLIB3_IMPORT_ERROR = _e

from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import execcred, pkgauth
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import DEFAULT_REQUEST_TIMEOUT, ApiError, KubeClient
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.kubeconfig import (
    AuthError,
    ClusterConfig,
    apply_auth_options,
    config_from_kubeconfig,
    has_static_credentials,
    impersonation,
    kubeconfig_paths,
    merge_kubeconfigs,
    static_authorization,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.transport import choose_proxy, tls_pool_kwargs
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.wire import TOKEN_CHARS


def _find_kubernetes():
    """``(installed, error)`` for the ``kubernetes`` package, found without importing it."""
    try:
        if importlib.util.find_spec("kubernetes") is not None:
            return True, None
    except (ImportError, ValueError):
        pass
    return False, ImportError("No module named 'kubernetes'")


HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR = _find_kubernetes()

#: what a client needs, for ``common.missing_requirement``: ``{package: (available, import error)}``
CLIENT_REQUIREMENTS = {"kubernetes": (HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR), "urllib3": (HAS_URLLIB3, URLLIB3_IMPORT_ERROR)}

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
    request_timeout=dict(type="float"),
    k8s_auth_env=dict(type="bool"),
)

#: option name -> legacy alias also accepted as ``K8S_AUTH_<ALIAS>`` (as kubernetes.core does).
_ENV_ALIASES = dict(validate_certs="verify_ssl", ca_cert="ssl_ca_cert", client_cert="cert_file", client_key="key_file")
#: options that never come from the environment
_NOT_FROM_ENV = ("proxy_headers", "k8s_auth_env")
KUBERNETES_REQUIREMENT = pkgauth.KUBERNETES_REQUIREMENT


def _env_bool(value):
    return value.lower() not in ("0", "false", "no", "off", "")


def _env_value(name, spec, environ):
    """The value of option ``name`` from ``K8S_AUTH_<NAME>`` (or its legacy alias), None if unset."""
    env = environ.get("K8S_AUTH_" + name.upper())
    if env is None and name in _ENV_ALIASES:
        env = environ.get("K8S_AUTH_" + _ENV_ALIASES[name].upper())
    if env is None:
        return None
    if spec.get("type") == "bool":
        return _env_bool(env)
    if spec.get("type") == "list":
        return [x for x in env.split(",") if x]
    if spec.get("type") == "float":
        try:
            return float(env)
        except ValueError:
            raise AuthError("K8S_AUTH_%s must be a number, got %r" % (name.upper(), env)) from None
    if spec.get("type") == "path":
        return os.path.expanduser(env)
    return env


def resolve_auth_params(params, environ=None):
    """Merge module options with ``K8S_AUTH_*`` environment variables (options win; none with ``k8s_auth_env: false``)."""
    environ = os.environ if environ is None else environ
    use_env = params.get("k8s_auth_env") is not False
    out = {}
    for name, spec in AUTH_ARG_SPEC.items():
        value = params.get(name)
        if value is None and use_env and name not in _NOT_FROM_ENV:
            value = _env_value(name, spec, environ)
        if name == "proxy_headers":
            headers = dict(value or {})
            for key in AUTH_PROXY_HEADERS_SPEC:
                env = environ.get("K8S_AUTH_PROXY_HEADERS_" + key.upper()) if use_env else None
                if headers.get(key) is None and env is not None:
                    headers[key] = env
            value = dict((k, v) for k, v in headers.items() if v is not None) or None
        out[name] = value
    out["k8s_auth_env"] = use_env
    return out


# -- kubeconfig: I/O ------------------------------------------------------------------------------
def read_kubeconfigs(paths, explicit):
    """``[(path, dict)]`` of the existing, non-empty files (all of ``paths`` must exist if ``explicit``)."""
    if not HAS_YAML:
        raise AuthError("Reading a kubeconfig needs PyYAML (and %s)" % KUBERNETES_REQUIREMENT)
    docs = []
    for path in paths:
        if not os.path.exists(path):
            if explicit and len(paths) == 1:
                raise AuthError("Kubeconfig file not found: %s (check %s)" % (path, option("kubeconfig")))
            continue
        try:
            with open(path) as f:
                # libyaml's safe loader where PyYAML has it (a sources run reads the kubeconfig once per stack run)
                doc = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # a safe loader, C or Python
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark else ""
            raise AuthError("Kubeconfig %s is not valid YAML%s" % (path, where)) from None
        except OSError as e:
            raise AuthError("Could not read kubeconfig %s: %s" % (path, e.strerror or e)) from None
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise AuthError("Kubeconfig %s is not a mapping" % path)
        docs.append((path, doc))
    if not docs:
        if explicit:
            raise AuthError("None of the kubeconfig files exist: %s" % os.pathsep.join(paths))
        raise AuthError("No Kubernetes credentials found: no kubeconfig at %s and not running in a cluster; "
                        "set %s (or %s and %s), or the K8S_AUTH_* environment variables"
                        % (os.pathsep.join(paths), option("kubeconfig"), option("host"), option("api_key")))
    return docs


def _read_token_file(cfg):
    """Read ``cfg.token_file`` into ``cfg.token`` (it wins over ``token`` when readable, like client-go)."""
    if not cfg.token_file:
        return
    try:
        with open(cfg.token_file) as f:
            token = f.read().strip()
    except OSError as e:
        token = None
        if not cfg.token:
            raise AuthError("Could not read tokenFile %s: %s" % (cfg.token_file, e.strerror or e)) from None
    cfg.token = token or cfg.token


def _from_kubeconfig(auth, environ):
    """``(ClusterConfig, kubeconfig for the package, context)`` from the ``kubeconfig`` option (path(s) or
    dict), ``KUBECONFIG`` or ``~/.kube/config``."""
    kubeconfig = auth.get("kubeconfig")
    if isinstance(kubeconfig, dict):
        docs = [(None, kubeconfig)]
    else:
        paths = kubeconfig_paths(kubeconfig, environ)
        docs = read_kubeconfigs(paths, explicit=bool(kubeconfig))
        kubeconfig = os.pathsep.join(paths)
    merged = merge_kubeconfigs(docs)
    context = auth.get("context") or merged["current-context"]
    cfg = config_from_kubeconfig(merged, context)
    _read_token_file(cfg)
    return cfg, kubeconfig, context


def _self_sufficient(auth):
    def have(*names):
        return all(auth.get(n) for n in names)

    return auth.get("host") and (have("api_key") or have("username", "password") or have("client_cert", "client_key"))


def _plugin_credentials(cfg, auth, environ, kubeconfig, context):
    """Run the user's credential plugin now -- before any request -- unless other credentials win."""
    if has_static_credentials(cfg):
        return
    if cfg.auth_provider:
        cfg.authorization = pkgauth.provider_authorization(cfg, kubeconfig, context, auth.get("persist_config"))
    elif cfg.exec:
        plugin = cfg.exec
        if not auth.get("k8s_auth_env", True):  # the job's K8S_AUTH_* credentials never reach this plugin either
            environ = dict((k, v) for k, v in environ.items() if not k.startswith("K8S_AUTH_"))
        try:
            first = execcred.credential(plugin, environ)
        except AuthError as e:
            raise execcred.user_error(plugin, e) from None
        cfg.cert_data, cfg.key_data = first.cert_data, first.key_data
        if first.token:
            cfg.authorization = _exec_header(plugin, environ)


def _exec_header(plugin, environ):
    """The per-request ``Authorization`` of an exec plugin's token (the plugin runs again once it expires)."""
    def header():
        try:
            return "Bearer " + execcred.credential(plugin, environ).token
        except AuthError as e:
            raise ApiError(0, "CredentialError", str(execcred.user_error(plugin, e))) from None
    return header


def load_configuration(auth, environ=None):
    """``(ClusterConfig, context_namespace_or_None)`` for resolved auth params (see :func:`resolve_auth_params`).

    Credential plugins run here (exec, auth-provider): one that fails raises :class:`AuthError`."""
    environ = os.environ if environ is None else environ
    cfg, kubeconfig, context = None, None, None
    if _self_sufficient(auth):
        cfg = ClusterConfig()
    elif auth.get("kubeconfig") or auth.get("context"):
        cfg, kubeconfig, context = _from_kubeconfig(auth, environ)
    else:
        if pkgauth.in_cluster(environ):
            cfg = pkgauth.in_cluster_config()
        if cfg is None:
            cfg, kubeconfig, context = _from_kubeconfig(auth, environ)
    apply_auth_options(cfg, auth)
    if not cfg.host:
        raise AuthError("No Kubernetes API server found: set %s or %s, or the K8S_AUTH_* environment variables"
                        % (option("kubeconfig"), option("host")))
    _plugin_credentials(cfg, auth, environ, kubeconfig, context)
    return cfg, cfg.namespace


# -- client ---------------------------------------------------------------------------------------
#: what client-go leaves as it is in an ``Impersonate-Extra-`` key: a header name's characters but the escape's ``%``
_EXTRA_KEY_CHARS = frozenset(TOKEN_CHARS) - {"%"}


def _header_key(key):
    """An ``Impersonate-Extra-`` key as client-go escapes it (``%XX`` for what a header name cannot hold)."""
    return "".join(c if c in _EXTRA_KEY_CHARS else "".join("%%%02X" % b for b in c.encode("utf-8")) for c in key)


def impersonation_headers(imp):
    """``[(header, value)]`` of an impersonation (see :func:`.kubeconfig.impersonation`), as client-go sends them."""
    if not imp:
        return []
    headers = [("Impersonate-User", imp["user"])]
    if imp.get("uid"):
        headers.append(("Impersonate-Uid", imp["uid"]))
    headers += [("Impersonate-Group", g) for g in imp.get("groups") or []]
    for key in sorted(imp.get("extra") or {}):
        headers += [("Impersonate-Extra-" + _header_key(key), v) for v in imp["extra"][key]]
    return headers


def client_from_configuration(cfg, impersonate_user=None, impersonate_groups=None, maxsize=8,
                              request_timeout=DEFAULT_REQUEST_TIMEOUT, environ=None):
    """Build a :class:`KubeClient` from a :class:`ClusterConfig` (TLS, proxy, auth header, impersonation)."""
    pool = tls_pool_kwargs(cfg) if cfg.host.startswith("https") else {}
    if not cfg.verify_ssl:
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    dynamic = cfg.authorization
    header = static_authorization(cfg)

    def auth():
        value = dynamic() if dynamic is not None else header
        return {"Authorization": value} if value else {}

    headers = [("User-Agent", "stacksync.k8s"), *impersonation_headers(impersonation(cfg, impersonate_user, impersonate_groups))]
    return KubeClient(cfg.host, auth=auth, headers=headers, pool_kwargs=pool, proxy=choose_proxy(cfg, environ),
                      proxy_headers=cfg.proxy_headers, maxsize=maxsize, timeout=request_timeout)


def build_client(params, maxsize=8, environ=None):
    """``(KubeClient, context_namespace)`` from module params (+ environment)."""
    auth = resolve_auth_params(params, environ)
    timeout = auth.get("request_timeout") or DEFAULT_REQUEST_TIMEOUT
    if timeout <= 0:
        raise AuthError("request_timeout must be a positive number of seconds, got %s" % timeout)
    cfg, namespace = load_configuration(auth, environ)
    client = client_from_configuration(cfg, auth.get("impersonate_user"), auth.get("impersonate_groups"), maxsize,
                                       request_timeout=timeout, environ=environ)
    return client, namespace
