# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TLS and proxy settings of the connection pool, from a :class:`.kubeconfig.ClusterConfig`.

Certificates given as data are written to private temporary files only as long as loading them
takes; messages never carry key material.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import ssl
import tempfile

try:
    import urllib3
    from urllib3.util.ssl_ import create_urllib3_context
except ImportError:  # pragma: no cover - checked with CLIENT_REQUIREMENTS before anything runs
    urllib3 = create_urllib3_context = None

from ansible_collections.stacksync.k8s.plugins.module_utils.kubeconfig import AuthError


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


def bypass_proxy(host, no_proxy):
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
