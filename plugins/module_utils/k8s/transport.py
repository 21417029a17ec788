# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TLS and proxy settings of the connection pool, from a :class:`.kubeconfig.ClusterConfig`.

Certificates given as data are written to private temporary files only as long as loading them
takes; messages never carry key material. Proxies as kubectl chooses them: the ``proxy`` option (or
the kubeconfig's ``proxy-url``), else ``HTTPS_PROXY`` / ``HTTP_PROXY`` from the environment unless
``NO_PROXY`` (Go's rules) excludes the server; a loopback server is never proxied from the
environment. ``socks5://`` proxies need PySocks (urllib3's ``contrib.socks``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import os
import re
import ssl
import tempfile

try:
    import urllib3
    from urllib3.util.ssl_ import create_urllib3_context
except ImportError:  # pragma: no cover - checked with CLIENT_REQUIREMENTS before anything runs
    urllib3 = create_urllib3_context = None

from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import redact_url
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.kubeconfig import AuthError, proxy_problem

SOCKS_REQUIREMENT = "PySocks"


def _load_client_cert(context, cfg):
    """Load the client certificate and key; ``*-data`` only pass through a 0600 temporary file."""
    if not (cfg.cert_file or cfg.cert_data):
        return
    if cfg.cert_data is None and cfg.key_data is None:
        context.load_cert_chain(cfg.cert_file, cfg.key_file)
        return
    fd, path = tempfile.mkstemp(prefix="stacksync-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            for data, name in ((cfg.cert_data, cfg.cert_file), (cfg.key_data, cfg.key_file)):
                if data is None and name:
                    with open(name, "rb") as src:
                        data = src.read()
                if data:
                    f.write(data.rstrip(b"\n") + b"\n")
        context.load_cert_chain(path)
    finally:
        os.unlink(path)


def tls_pool_kwargs(cfg):
    """urllib3 pool keyword arguments for an ``https`` server: an ``ssl_context`` with CA and client cert."""
    required = cfg.verify_ssl
    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED if required else ssl.CERT_NONE)
    pool = dict(ssl_context=context, cert_reqs="CERT_REQUIRED" if required else "CERT_NONE")
    try:
        if required and cfg.ca_data:
            text = cfg.ca_data.decode("ascii", "replace") if b"-----BEGIN" in cfg.ca_data else None
            context.load_verify_locations(cadata=text or cfg.ca_data)
        elif required and cfg.ca_file:
            context.load_verify_locations(cafile=cfg.ca_file)
        elif required:
            try:
                import certifi  # pylint: disable=import-outside-toplevel

                context.load_verify_locations(cafile=certifi.where())
            except ImportError:
                context.load_default_certs()
        _load_client_cert(context, cfg)
    except (OSError, ValueError) as e:  # ssl.SSLError is an OSError; messages carry no key material
        raise AuthError("Could not load the TLS certificates for %s: %s" % (cfg.host, e)) from None
    if cfg.assert_hostname is not None:
        pool["assert_hostname"] = cfg.assert_hostname
    if cfg.tls_server_name:
        pool["server_hostname"] = cfg.tls_server_name  # SNI and the name the certificate must match
    return pool


# -- proxies ----------------------------------------------------------------------------------------
def _host_port(url):
    parsed = urllib3.util.parse_url(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return (parsed.host or "").strip("[]").lower(), str(port)


def _ip(text):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _entry_matches(entry, host, port, ip):
    """One ``NO_PROXY`` entry against a host, as Go's httpproxy reads it (IP, CIDR, domain, with a port)."""
    if "/" in entry:
        try:
            return ip is not None and ip in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    name, want_port = entry, ""
    if entry.startswith("[") and "]" in entry:
        name, rest = entry[1:].split("]", 1)
        want_port = rest[1:] if rest.startswith(":") else ""
    elif entry.count(":") == 1:
        name, want_port = entry.split(":")
    if want_port and want_port != port:
        return False
    if _ip(name) is not None:
        return ip is not None and _ip(name) == ip
    if name.startswith("*."):
        name = name[1:]
    if not name.startswith("."):
        return host == name or host.endswith("." + name)
    return host.endswith(name)


def bypass_proxy(host, no_proxy):
    """True when ``no_proxy`` (comma separated, Go's ``NO_PROXY`` rules; ``*`` for all) excludes the server ``host``."""
    if not no_proxy:
        return False
    name, port = _host_port(host)
    ip = _ip(name)
    entries = [e.strip().lower() for e in str(no_proxy).split(",") if e.strip()]
    return "*" in entries or any(_entry_matches(e, name, port, ip) for e in entries)


def environment_proxy(host, environ):
    """The proxy kubectl takes from the environment for ``host`` (None: connect directly)."""
    https = str(host).lower().startswith("https")
    names = ("HTTPS_PROXY", "https_proxy") if https else ("HTTP_PROXY", "http_proxy")
    proxy = next((environ[n] for n in names if environ.get(n)), None)
    if not proxy:
        return None
    name = _host_port(host)[0]
    ip = _ip(name)
    if name == "localhost" or (ip is not None and ip.is_loopback):
        return None
    if bypass_proxy(host, environ.get("NO_PROXY") or environ.get("no_proxy")):
        return None
    return proxy if "://" in proxy else "http://" + proxy


def choose_proxy(cfg, environ=None):
    """The proxy URL for ``cfg.host``: its own (option or ``proxy-url``) unless ``no_proxy`` excludes the
    server, else the environment's. Raises :class:`AuthError` for a scheme kubectl refuses."""
    environ = os.environ if environ is None else environ
    if bypass_proxy(cfg.host, cfg.no_proxy):
        return None
    proxy = cfg.proxy or environment_proxy(cfg.host, environ)
    if proxy and proxy_problem(proxy):
        raise AuthError("proxy %s: %s" % (urllib3.util.parse_url(proxy).host or proxy, proxy_problem(proxy)))
    return proxy


def pool_manager(proxy, proxy_headers, kwargs):
    """A urllib3 pool manager: direct, through an HTTP(S) proxy, or through a SOCKS5 proxy (PySocks)."""
    if not proxy:
        return urllib3.PoolManager(**kwargs)
    if not proxy.lower().startswith("socks5"):
        return urllib3.ProxyManager(proxy, proxy_headers=proxy_headers, **kwargs)
    try:
        import warnings  # pylint: disable=import-outside-toplevel

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from urllib3.contrib.socks import SOCKSProxyManager  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise AuthError("proxy %s is a SOCKS5 proxy, which needs the Python package %s (pip install %s)"
                        % (urllib3.util.parse_url(proxy).host, SOCKS_REQUIREMENT, SOCKS_REQUIREMENT)) from None
    # kubectl's socks5 proxies resolve the server's name on the proxy: urllib3 calls that socks5h
    return SOCKSProxyManager("socks5h://" + proxy.split("://", 1)[1], **kwargs)


# -- connection errors in plain words ------------------------------------------------------------
def _ssl_text(error):
    """An OpenSSL error without its ``[SSL: CODE]`` prefix and ``(_ssl.c:NNN)`` suffix."""
    text = str(error)
    if text.startswith("[SSL") and "] " in text:
        text = text.split("] ", 1)[1]
    return text.split(" (_ssl.c:")[0].strip().rstrip(".")


#: urllib3 2's error for a host name that does not resolve (urllib3 1.26, which the requirements allow, has none: a
#: gaierror cause says it there)
_NAME_RESOLUTION_ERROR = getattr(getattr(urllib3, "exceptions", None), "NameResolutionError", ())


#: how :func:`connection_words` says that the server's certificate was rejected (:func:`ca_hint` follows it)
CERTIFICATE_REJECTED = "its TLS certificate was rejected: "


def ca_hint():
    """What to check when the server's certificate was rejected, the option named in the caller's words
    (:func:`.vocabulary.option`: ``stacksync_ca_cert`` for role ``stacksync.k8s.sync``)."""
    return (" (check the cluster's CA certificate: %s or the environment variable K8S_AUTH_SSL_CA_CERT, or "
            "certificate-authority in the kubeconfig)" % option("ca_cert"))


def connection_words(error):
    """What went wrong with a connection, in plain words (no urllib3 class names, hosts or ports)."""
    cause = error.__cause__ or error.__context__ or error
    if isinstance(error, urllib3.exceptions.ProxyError):
        return "cannot connect through the proxy: %s" % connection_words(cause) if cause is not error else "the proxy failed"
    if isinstance(error, _NAME_RESOLUTION_ERROR) or cause.__class__.__name__ == "gaierror":
        return "the server's host name does not resolve (DNS: %s)" % (getattr(cause, "strerror", None) or "no such host").lower()
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, urllib3.exceptions.SSLError) or cause.__class__.__name__.startswith("SSL"):
        if "certificate verify failed" in str(error).lower():
            return "%s%s" % (CERTIFICATE_REJECTED, _ssl_text(error).split("certificate verify failed: ")[-1])
        if "wrong version number" in str(error).lower():
            return "TLS handshake failed: wrong version number (is it an http:// server?)"
        if "eof" in str(error).lower():
            return "TLS handshake failed: the server closed the connection"
        return "TLS handshake failed: %s" % _ssl_text(error)
    if isinstance(error, urllib3.exceptions.ReadTimeoutError):
        seconds = re.search(r"read timeout=([0-9.]+)", str(error))
        within = "within %s s" % seconds.group(1) if seconds else "in time"
        return "the server did not answer %s (%s)" % (within, option("request_timeout"))
    if isinstance(error, urllib3.exceptions.ConnectTimeoutError) and not isinstance(error, urllib3.exceptions.NewConnectionError):
        return "connection timed out"
    # http.client's RemoteDisconnected is a ConnectionResetError: asked first, or its words are never given
    if cause.__class__.__name__ == "RemoteDisconnected":
        return "the server closed the connection without answering"
    if isinstance(cause, (ConnectionResetError, BrokenPipeError)):
        return "the server reset the connection"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror[0].lower() + cause.strerror[1:]
    return redact_url(str(cause), mask="********")[:300]


def unreachable(server, words, attempts=None, seconds=None):
    """The message of a request that could not reach ``server``: "cannot reach URL: WORDS (N tries in S s)"."""
    tries = ""
    if attempts is not None:
        tries = " (%d %s in %.0f s)" % (attempts, "try" if attempts == 1 else "tries", seconds or 0.0)
    return "cannot reach %s: %s%s" % (redact_url(server, mask="********"), words, tries)
