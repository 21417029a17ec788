# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The credentials still loaded with the ``kubernetes`` package: a kubeconfig user's ``auth-provider``
(``oidc``, ``gcp``) and the in-cluster service account. The package is imported only for them.

The package logs a failing auth-provider and goes on without credentials; here a provider that gives
no token fails the run before any request, with kubectl's words where kubectl has some (an unknown
provider, the ``azure`` provider kubectl no longer has, ``oidc`` without its issuer or client id).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.kubeconfig import AuthError, ClusterConfig

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
KUBERNETES_REQUIREMENT = "kubernetes>=24.2.0"
AZURE_REMOVED = ("The azure auth plugin has been removed.\nPlease use the https://github.com/Azure/kubelogin "
                 "kubectl/client-go credential plugin instead.\nSee https://kubernetes.io/docs/reference/"
                 "access-authn-authz/authentication/#client-go-credential-plugins for further details")


def provider_problem(provider):
    """kubectl's reason to refuse an auth-provider before running it (None if there is none)."""
    name = provider.get("name") if isinstance(provider, dict) else None
    config = (provider.get("config") if isinstance(provider, dict) else None) or {}
    if name == "azure":
        return AZURE_REMOVED
    if name not in ("oidc", "gcp"):
        return 'no Auth Provider found for name "%s"' % (name or "")
    if name == "oidc":
        for key in ("idp-issuer-url", "client-id"):
            if not config.get(key):
                return "Must provide %s" % key
    return None


def in_cluster(environ):
    """True when a service account is mounted (what ``load_incluster_config`` needs)."""
    return bool(environ.get("KUBERNETES_SERVICE_HOST") and environ.get("KUBERNETES_SERVICE_PORT")
                and os.path.isfile(os.path.join(SA_DIR, "token")))


def sa_namespace():
    try:
        with open(os.path.join(SA_DIR, "namespace")) as f:
            return f.read().strip() or None
    except OSError:
        return None


def _package():
    """``(kubernetes.config, kubernetes.client.Configuration)``, imported now (ImportError if not installed)."""
    from kubernetes import config as kube_config  # pylint: disable=import-outside-toplevel
    from kubernetes.client import Configuration  # pylint: disable=import-outside-toplevel

    return kube_config, Configuration


def _header(kcfg):
    return lambda: kcfg.get_api_key_with_prefix("authorization") or kcfg.get_api_key_with_prefix("BearerToken")


def in_cluster_config():
    """:class:`ClusterConfig` of the in-cluster service account (None when it is not usable)."""
    try:
        kube_config, configuration = _package()
    except ImportError as e:
        raise AuthError("The in-cluster configuration needs the Python package %s: %s" % (KUBERNETES_REQUIREMENT, e)) from None
    kcfg = configuration()
    try:
        kube_config.load_incluster_config(client_configuration=kcfg)
    except kube_config.ConfigException:
        return None
    except Exception as e:
        raise AuthError("Could not load the in-cluster credentials: %s" % (e,)) from None
    cfg = ClusterConfig(kcfg.host)
    cfg.verify_ssl = kcfg.verify_ssl
    cfg.ca_file = kcfg.ssl_ca_cert
    cfg.authorization = _header(kcfg)
    cfg.namespace = sa_namespace()
    return cfg


def provider_authorization(cfg, kubeconfig, context, persist_config=None):
    """The ``Authorization`` header function of ``cfg``'s auth-provider, loaded by the package; raises
    :class:`AuthError` naming the user when the provider is refused, fails or gives no token."""
    who = 'kubeconfig user "%s": ' % (cfg.user_name or "")
    problem = provider_problem(cfg.auth_provider)
    if problem:
        raise AuthError(who + problem)
    name = cfg.auth_provider["name"]
    try:
        kube_config, configuration = _package()
    except ImportError as e:
        raise AuthError("%sthe auth-provider %s needs the Python package %s: %s" % (who, name, KUBERNETES_REQUIREMENT, e)) from None
    kcfg = configuration()
    opts = dict(context=context, client_configuration=kcfg)
    if persist_config is not None:
        opts["persist_config"] = persist_config
    try:
        if isinstance(kubeconfig, dict):
            kube_config.load_kube_config_from_dict(config_dict=kubeconfig, **opts)
        else:
            kube_config.load_kube_config(config_file=kubeconfig, **opts)
    except Exception as e:
        raise AuthError("%sgetting credentials: auth-provider %s: %s" % (who, name, e)) from None
    header = _header(kcfg)
    if not header():
        raise AuthError("%sgetting credentials: auth-provider %s gave no token (an %s that is not a valid token, or that "
                        "could not be refreshed)" % (who, name, "id-token" if name == "oidc" else "access-token"))
    return header
