# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Exec credential plugins (a kubeconfig user's ``exec``), run as client-go runs them for kubectl.

The ``client.authentication.k8s.io/v1`` and ``v1beta1`` ExecCredential protocol: the plugin gets the
process environment plus the entry's ``env``, and ``KUBERNETES_EXEC_INFO`` (``spec.interactive`` --
always false here, no terminal: ``interactiveMode: Always`` fails as kubectl fails without one -- and
``spec.cluster`` with ``provideClusterInfo``); it prints an ExecCredential whose ``status`` holds a
token or a client certificate and key. A credential is reused until its ``expirationTimestamp``
(per process, as client-go caches it). A plugin that is missing, fails, or answers anything else
fails the run before any request, with kubectl's words (``getting credentials: exec: ...``), the
plugin's ``installHint`` and its own error output -- never its standard output, which holds the
credential.

Why not the ``kubernetes`` package's ``ExecProvider``: it logs these failures and goes on without
credentials (the requests are then sent as ``system:anonymous``), and importing the package costs
more than running the plugin (see docs/architecture.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import json
import os
import subprocess
import threading
import time

from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.kubeconfig import AuthError

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INSTALL_HELP = ("\n\nIt looks like you are trying to use a client-go credential plugin that is not installed.\n\n"
                "To learn more about this feature, consult the documentation available at:\n"
                "      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins")
STDERR_LIMIT = 500  # characters of the plugin's error output quoted in a message

_CACHE = {}
_CACHE_LOCK = threading.Lock()


class Credential(object):
    """What a plugin answered: ``token`` or ``cert_data`` + ``key_data`` (PEM bytes); ``expiry`` (epoch) or None."""

    def __init__(self, token=None, cert_data=None, key_data=None, expiry=None):
        self.token, self.cert_data, self.key_data, self.expiry = token, cert_data, key_data, expiry

    def expired(self, now):
        return self.expiry is not None and now > self.expiry


def _cluster_info(plugin):
    """``spec.cluster`` of KUBERNETES_EXEC_INFO (``provideClusterInfo``), as client-go fills it."""
    cluster = plugin["cluster"]
    out = {"server": cluster.get("server") or ""}
    for key, value in (("tls-server-name", cluster.get("tls_server_name")), ("insecure-skip-tls-verify", cluster.get("insecure")),
                       ("certificate-authority-data", cluster.get("ca_data")), ("proxy-url", cluster.get("proxy_url")),
                       ("disable-compression", cluster.get("disable_compression"))):
        if value:
            out[key] = base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, dict) and extension.get("name") == "client.authentication.k8s.io/exec":
            out["config"] = extension.get("extension")
    return out


def exec_info(plugin):
    """The ExecCredential sent in ``KUBERNETES_EXEC_INFO`` (raises :class:`AuthError` as kubectl does)."""
    if plugin.get("apiVersion") not in API_VERSIONS:
        raise AuthError('exec plugin: invalid apiVersion "%s"' % plugin.get("apiVersion"))
    if plugin.get("interactiveMode") == "Always":
        raise AuthError("getting credentials: exec plugin cannot support interactive mode: standard input is not a terminal")
    spec = {"interactive": False}
    if plugin.get("provideClusterInfo"):
        spec["cluster"] = _cluster_info(plugin)
    return {"apiVersion": plugin["apiVersion"], "kind": "ExecCredential", "spec": spec}


def plugin_env(plugin, environ, info):
    """The plugin's environment: ours, then the entry's ``env`` (which wins), then ``KUBERNETES_EXEC_INFO``."""
    env = dict(environ)
    for item in plugin.get("env") or []:
        env[str(item["name"])] = "" if item.get("value") is None else str(item["value"])
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info, separators=(",", ":"))
    return env


def _timestamp(text):
    """Epoch seconds of an RFC 3339 time (``2026-01-02T03:04:05Z``, fractions and offsets allowed)."""
    value = str(text).strip().replace("z", "Z")
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    date, sep, rest = value.partition(".")
    if sep:  # Python 3.9 reads at most 6 digits of a fraction
        digits = len(rest) - len(rest.lstrip("0123456789"))
        value = date + "." + (rest[:digits] + "000000")[:6] + rest[digits:]
    try:
        return datetime.datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise AuthError("getting credentials: exec plugin returned an invalid expirationTimestamp %r" % text) from None


def parse_output(stdout, api_version):
    """The :class:`Credential` in a plugin's standard output; :class:`AuthError` with kubectl's words otherwise.

    Messages never quote the output (it holds the credential)."""
    try:
        answer = json.loads(stdout)
    except ValueError as e:
        raise AuthError("getting credentials: decoding stdout: couldn't get version/kind; json parse error: %s" % e) from None
    if not isinstance(answer, dict):
        raise AuthError("getting credentials: decoding stdout: couldn't get version/kind; json parse error: "
                        "the output is not a JSON object")
    version, kind = answer.get("apiVersion") or "", answer.get("kind") or ""
    if not kind:
        raise AuthError("getting credentials: decoding stdout: Object 'Kind' is missing in the plugin's output")
    if kind != "ExecCredential" or version not in API_VERSIONS:
        raise AuthError('getting credentials: decoding stdout: no kind "%s" is registered for version "%s"' % (kind, version))
    if version != api_version:
        raise AuthError("getting credentials: exec plugin is configured to use API version %s, plugin returned version %s"
                        % (api_version, version))
    status = answer.get("status")
    if not isinstance(status, dict):
        raise AuthError("getting credentials: exec plugin didn't return a status field")
    token, cert, key = status.get("token"), status.get("clientCertificateData"), status.get("clientKeyData")
    if not token and not (cert or key):
        raise AuthError("getting credentials: exec plugin didn't return a token or cert/key pair")
    if not token and not (cert and key):
        raise AuthError("getting credentials: exec plugin returned only certificate or key, not both")
    expiry = _timestamp(status["expirationTimestamp"]) if status.get("expirationTimestamp") else None
    if token:
        return Credential(token=str(token), expiry=expiry)
    return Credential(cert_data=str(cert).encode("utf-8"), key_data=str(key).encode("utf-8"), expiry=expiry)


def _stderr(text):
    text = (text or "").strip()
    if not text:
        return ""
    if len(text) > STDERR_LIMIT:
        text = "..." + text[-STDERR_LIMIT:]
    return "; its error output: %s" % text


def failure(command, error=None, code=None, stderr="", hint=None):
    """kubectl's message for a plugin that could not run (``error``: the OSError) or exited with ``code``."""
    if isinstance(error, FileNotFoundError):
        text = "getting credentials: exec: executable %s not found%s" % (command, INSTALL_HELP)
        return text + ("\n\n%s" % hint if hint else "")
    if error is not None:
        return "getting credentials: exec: fork/exec %s: %s" % (command, (error.strerror or str(error)).lower())
    return "getting credentials: exec: executable %s failed with exit code %d%s" % (command, code, _stderr(stderr))


def run_plugin(plugin, environ=None, run=subprocess.run):
    """Run the exec plugin once; its :class:`Credential`. Raises :class:`AuthError` (see :func:`failure`)."""
    info = exec_info(plugin)
    env = plugin_env(plugin, os.environ if environ is None else environ, info)
    argv = [plugin["command"]] + [str(a) for a in plugin.get("args") or []]
    try:
        # not AnsibleModule.run_command: this also runs in the controller's process, where there is no module, and
        # the plugin gets exactly kubectl's environment (the K8S_AUTH_* variables removed for a tenant's source)
        done = run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                   stderr=subprocess.PIPE, universal_newlines=True, check=False)
    except OSError as e:
        raise AuthError(failure(plugin["command"], error=e, hint=plugin.get("installHint"))) from None
    if done.returncode != 0:
        raise AuthError(failure(plugin["command"], code=done.returncode, stderr=done.stderr))
    return parse_output(done.stdout, plugin["apiVersion"])


def _key(plugin, environ):
    """The cache key of a plugin: everything that goes into running it (secrets stay in memory only)."""
    fields = dict((k, v) for k, v in plugin.items() if k != "cluster")
    return json.dumps([fields, exec_info(plugin), sorted((environ or {}).items())], sort_keys=True, default=str)


def credential(plugin, environ=None, now=time.time, run=run_plugin):
    """The plugin's current credential: cached in this process until it expires, else the plugin is run."""
    environ = os.environ if environ is None else environ
    key = _key(plugin, environ)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None and not cached.expired(now()):
            return cached
        fresh = run(plugin, environ)
        _CACHE[key] = fresh
        return fresh


def user_error(plugin, error):
    """``error`` (an :class:`AuthError`) prefixed with the kubeconfig user whose plugin failed."""
    return AuthError('kubeconfig user "%s": %s' % (plugin.get("user") or "", error))
