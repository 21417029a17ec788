# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection options (same names, defaults and ``K8S_AUTH_*`` variables as kubernetes.core).

Precedence, like kubernetes.core: module option, then ``K8S_AUTH_<OPTION>`` (or the legacy
``K8S_AUTH_<ALIAS>``), then kubeconfig / in-cluster defaults. Requests go through
:class:`.client.KubeClient`.

Kubeconfig files (or a dict) are read here, without the ``kubernetes`` package (importing it costs
about a second per module run): ``KUBECONFIG`` lists are merged like kubectl does (the first file
to define a cluster, user, context or the current-context wins), relative file paths are resolved
against the directory of the file that holds them, and ``*-data`` certificates and keys are loaded
into an ``ssl.SSLContext`` (a client key only passes through a 0600 temporary file that is removed
at once). The ``kubernetes`` package is imported only when it is really needed: a kubeconfig user
with an ``exec`` or ``auth-provider`` plugin, and the in-cluster service account (tried first when
neither ``kubeconfig`` nor ``context`` is given); its ``Configuration`` is then asked for the
``Authorization`` header on every request, so refreshed tokens are used.
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

from ansible_collections.stacksync.k8s.plugins.module_utils.client import DEFAULT_REQUEST_TIMEOUT, KubeClient
from ansible_collections.stacksync.k8s.plugins.module_utils.kubeconfig import (
    AuthError,
    ClusterConfig,
    apply_auth_options,
    config_from_kubeconfig,
    kubeconfig_paths,
    merge_kubeconfigs,
    static_authorization,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.transport import bypass_proxy, tls_pool_kwargs
from ansible_collections.stacksync.k8s.plugins.module_utils.vocabulary import option


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
)

#: option name -> legacy alias also accepted as ``K8S_AUTH_<ALIAS>`` (as kubernetes.core does).
_ENV_ALIASES = dict(validate_certs="verify_ssl", ca_cert="ssl_ca_cert", client_cert="cert_file", client_key="key_file")

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
KUBERNETES_REQUIREMENT = "kubernetes>=24.2.0"


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
                elif spec.get("type") == "float":
                    try:
                        value = float(env)
                    except ValueError:
                        raise AuthError("K8S_AUTH_%s must be a number, got %r" % (name.upper(), env)) from None
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
                doc = yaml.safe_load(f)
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


def _in_cluster(environ):
    """True when a service account is mounted (what ``load_incluster_config`` needs)."""
    return bool(environ.get("KUBERNETES_SERVICE_HOST") and environ.get("KUBERNETES_SERVICE_PORT")
                and os.path.isfile(os.path.join(SA_DIR, "token")))


def _kubernetes_config(kubeconfig=None, context=None, persist_config=None, in_cluster=False):
    """Load credentials with the ``kubernetes`` package (exec / auth-provider plugins, in-cluster).

    Returns a :class:`ClusterConfig` whose ``authorization`` asks the package's ``Configuration``
    for the header on every request (tokens refreshed by the package are used), or None when the
    in-cluster configuration is not usable.
    """
    try:
        from kubernetes import config as kube_config  # pylint: disable=import-outside-toplevel
        from kubernetes.client import Configuration  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        what = "The in-cluster configuration" if in_cluster else "This kubeconfig's credential plugin"
        raise AuthError("%s needs the Python package %s: %s" % (what, KUBERNETES_REQUIREMENT, e)) from None
    kcfg = Configuration()
    try:
        if in_cluster:
            try:
                kube_config.load_incluster_config(client_configuration=kcfg)
            except kube_config.ConfigException:
                return None
        else:
            opts = dict(context=context, client_configuration=kcfg)
            if persist_config is not None:
                opts["persist_config"] = persist_config
            if isinstance(kubeconfig, dict):
                kube_config.load_kube_config_from_dict(config_dict=kubeconfig, **opts)
            else:
                kube_config.load_kube_config(config_file=kubeconfig, **opts)
    except Exception as e:
        raise AuthError("Could not load Kubernetes credentials: %s" % (e,)) from None

    cfg = ClusterConfig(kcfg.host)
    cfg.verify_ssl = kcfg.verify_ssl
    cfg.ca_file, cfg.cert_file, cfg.key_file = kcfg.ssl_ca_cert, kcfg.cert_file, kcfg.key_file
    cfg.tls_server_name = getattr(kcfg, "tls_server_name", None)
    cfg.assert_hostname = getattr(kcfg, "assert_hostname", None)
    # not kcfg.proxy: recent versions of the package fill it from HTTPS_PROXY, which we do not use

    def authorization():
        return kcfg.get_api_key_with_prefix("authorization") or kcfg.get_api_key_with_prefix("BearerToken")

    cfg.authorization = authorization
    return cfg


def _from_kubeconfig(auth, environ):
    """ClusterConfig from the ``kubeconfig`` option (path(s) or dict), ``KUBECONFIG`` or ``~/.kube/config``."""
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
    if not cfg.needs_kubernetes:
        _read_token_file(cfg)
        return cfg
    # The package picks the current-context of the last file: name the context we selected.
    loaded = _kubernetes_config(kubeconfig, context, auth.get("persist_config"))
    loaded.namespace, loaded.proxy = cfg.namespace, cfg.proxy
    return loaded


def _sa_namespace():
    try:
        with open(os.path.join(SA_DIR, "namespace")) as f:
            return f.read().strip() or None
    except OSError:
        return None


def load_configuration(auth, environ=None):
    """``(ClusterConfig, context_namespace_or_None)`` for resolved auth params (see :func:`resolve_auth_params`)."""
    environ = os.environ if environ is None else environ

    def have(*names):
        return all(auth.get(n) for n in names)

    self_sufficient = auth.get("host") and (have("api_key") or have("username", "password") or have("client_cert", "client_key"))
    cfg = None
    if self_sufficient:
        cfg = ClusterConfig()
    elif auth.get("kubeconfig") or auth.get("context"):
        cfg = _from_kubeconfig(auth, environ)
    else:
        if _in_cluster(environ):
            cfg = _kubernetes_config(in_cluster=True)
            if cfg is not None:
                cfg.namespace = _sa_namespace()
        if cfg is None:
            cfg = _from_kubeconfig(auth, environ)
    apply_auth_options(cfg, auth)
    if not cfg.host:
        raise AuthError("No Kubernetes API server found: set %s or %s, or the K8S_AUTH_* environment variables"
                        % (option("kubeconfig"), option("host")))
    return cfg, cfg.namespace


# -- client ---------------------------------------------------------------------------------------
def client_from_configuration(cfg, impersonate_user=None, impersonate_groups=None, maxsize=8,
                              request_timeout=DEFAULT_REQUEST_TIMEOUT):
    """Build a :class:`KubeClient` from a :class:`ClusterConfig` (TLS, proxy, auth header)."""
    pool = tls_pool_kwargs(cfg) if cfg.host.startswith("https") else {}
    if not cfg.verify_ssl:
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    dynamic = cfg.authorization
    header = static_authorization(cfg)

    def auth():
        value = dynamic() if dynamic is not None else header
        return {"Authorization": value} if value else {}

    headers = {"User-Agent": "stacksync.k8s"}
    if impersonate_user:
        headers["Impersonate-User"] = impersonate_user
    groups = list(impersonate_groups or [])
    proxy = cfg.proxy if cfg.proxy and not bypass_proxy(cfg.host, cfg.no_proxy) else None
    return KubeClient(cfg.host, auth=auth, headers=headers, pool_kwargs=pool, proxy=proxy,
                      proxy_headers=cfg.proxy_headers, impersonate_groups=groups, maxsize=maxsize,
                      timeout=request_timeout)


def build_client(params, maxsize=8, environ=None):
    """``(KubeClient, context_namespace)`` from module params (+ environment)."""
    auth = resolve_auth_params(params, environ)
    cfg, namespace = load_configuration(auth, environ)
    timeout = auth.get("request_timeout") or DEFAULT_REQUEST_TIMEOUT
    if timeout <= 0:
        raise AuthError("request_timeout must be a positive number of seconds, got %s" % timeout)
    client = client_from_configuration(cfg, auth.get("impersonate_user"), auth.get("impersonate_groups"), maxsize,
                                       request_timeout=timeout)
    return client, namespace
