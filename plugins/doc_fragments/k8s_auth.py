# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection options shared by stacksync.k8s modules (same names and variables as kubernetes.core)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  host:
    description:
      - URL of the Kubernetes API server. Can also be specified via the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token used to authenticate with the API. Can also be specified via the E(K8S_AUTH_API_KEY)
        environment variable.
    type: str
  kubeconfig:
    description:
      - Path to an existing Kubernetes config file, or the configuration as a dictionary. If not provided, and
        no other connection options are provided, the in-cluster service account is tried, then the files listed
        in E(KUBECONFIG) (merged like C(kubectl) does), else C(~/.kube/config).
        Can also be specified via the E(K8S_AUTH_KUBECONFIG) environment variable.
      - A path may list several files separated by C(:) (C(;) on Windows), merged like E(KUBECONFIG) (the first
        file to define a name wins), as kubernetes.core does; C(kubectl --kubeconfig) takes one file.
      - A kubeconfig means what it means to C(kubectl). Relative file paths in a kubeconfig file are relative to
        the directory of that file. A kubeconfig that C(kubectl) refuses as contradictory (C(insecure-skip-tls-verify)
        together with a CA, a field together with its C(-data) twin, a token together with a username and password)
        is refused with C(kubectl)'s reason.
      - The impersonation of the user entry (C(as), C(as-uid), C(as-groups), C(as-user-extra)) is honoured, for token,
        certificate and C(exec) users alike; O(impersonate_user) and O(impersonate_groups) replace its C(as) and
        C(as-groups) as C(kubectl)'s C(--as) and C(--as-group) do.
      - An C(exec) credential plugin (C(client.authentication.k8s.io/v1) or C(v1beta1)) is run by the module as
        C(kubectl) runs it, once before the first request and again when its credential expires; a plugin that is
        missing, fails or answers no credentials fails the task, before any request, with its error and its
        C(installHint). A token, a username and password or a client certificate of the same user wins over the
        plugin, as in C(kubectl). Users with an C(auth-provider) (C(oidc), C(gcp)), and the in-cluster service
        account, are loaded with the C(kubernetes) Python package; a provider that gives no token fails the task.
    type: raw
  context:
    description:
      - The name of a context found in the config file. Can also be specified via the E(K8S_AUTH_CONTEXT)
        environment variable.
    type: str
  username:
    description:
      - Username for HTTP basic authentication (only for clusters configured to accept it). Can also be specified
        via the E(K8S_AUTH_USERNAME) environment variable.
    type: str
  password:
    description:
      - Password for HTTP basic authentication. Can also be specified via the E(K8S_AUTH_PASSWORD) environment
        variable.
    type: str
  client_cert:
    description:
      - Path to a certificate used to authenticate with the API. Can also be specified via the
        E(K8S_AUTH_CERT_FILE) environment variable.
    type: path
    aliases: [ cert_file ]
  client_key:
    description:
      - Path to a key file used to authenticate with the API. Can also be specified via the E(K8S_AUTH_KEY_FILE)
        environment variable.
    type: path
    aliases: [ key_file ]
  ca_cert:
    description:
      - Path to a CA certificate (full chain) used to verify the API server. Can also be specified via the
        E(K8S_AUTH_SSL_CA_CERT) environment variable.
    type: path
    aliases: [ ssl_ca_cert ]
  validate_certs:
    description:
      - Whether or not to verify the API server's TLS certificate. Can also be specified via the
        E(K8S_AUTH_VERIFY_SSL) environment variable.
      - Verification is on unless the kubeconfig or this option turns it off.
    type: bool
    aliases: [ verify_ssl ]
  proxy:
    description:
      - URL of a proxy to use for the connection (C(http://), C(https://) or C(socks5://); a SOCKS5 proxy needs the
        Python package PySocks). Can also be specified via the E(K8S_AUTH_PROXY) environment variable.
      - Without it the kubeconfig's C(proxy-url) is used, else, as by C(kubectl), E(HTTPS_PROXY) (E(HTTP_PROXY) for an
        C(http://) server) unless E(NO_PROXY) excludes the server; a server on a loopback address is never reached
        through a proxy from the environment.
    type: str
  no_proxy:
    description:
      - Comma separated list of hosts/domains that must not go through O(proxy) (or any proxy), with E(NO_PROXY)'s
        rules (C(example.com) also matches its subdomains, C(.example.com) only them, IP addresses and CIDR ranges,
        an optional C(:port), C(*) for all). Can also be specified via the E(K8S_AUTH_NO_PROXY) environment variable.
    type: str
  proxy_headers:
    description:
      - Headers sent to the HTTP proxy.
    type: dict
    suboptions:
      proxy_basic_auth:
        type: str
        description:
          - Colon-separated username:password for proxy basic authentication. Can also be specified via the
            E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH) environment variable.
      basic_auth:
        type: str
        description:
          - Colon-separated username:password for basic authentication header. Can also be specified via the
            E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH) environment variable.
      user_agent:
        type: str
        description:
          - User agent sent to the proxy. Can also be specified via the E(K8S_AUTH_PROXY_HEADERS_USER_AGENT)
            environment variable.
  persist_config:
    description:
      - Whether to save refreshed kubeconfig tokens (OIDC, gcloud) back to the kubeconfig file. Can also be
        specified via the E(K8S_AUTH_PERSIST_CONFIG) environment variable.
    type: bool
  impersonate_user:
    description:
      - Username to impersonate for the operation. Can also be specified via the E(K8S_AUTH_IMPERSONATE_USER)
        environment variable.
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate for the operation. Can also be specified via the E(K8S_AUTH_IMPERSONATE_GROUPS)
        environment variable (comma separated).
    type: list
    elements: str
  request_timeout:
    description:
      - Seconds to wait for the API server to accept a connection and, separately, to answer a request.
      - A request that fails (connection refused or dropped, 429, 5xx) is retried with backoff, but no new attempt
        starts once 20 seconds have passed since its first attempt; a server that accepts connections and never
        answers therefore fails the task after about O(request_timeout) seconds.
      - Defaults to 30 seconds, which covers the slowest admission webhook (30 seconds at most). Can also be
        specified via the E(K8S_AUTH_REQUEST_TIMEOUT) environment variable.
    type: float
  k8s_auth_env:
    description:
      - Whether connection options that are not given fall back to their E(K8S_AUTH_*) environment variables (as in
        kubernetes.core). With V(false) no E(K8S_AUTH_*) variable is read (nor handed to an C(exec) credential
        plugin), only the options given and the kubeconfig count.
      - M(stacksync.k8s.sources) sets it to V(false) for a source with its own O(stacksync.k8s.sources#module:sources[].kubeconfig)
        or O(stacksync.k8s.sources#module:sources[].context), so that the job's credentials (such as those AWX's
        Kubernetes credential injects) never apply to it and are never sent to its cluster.
      - Defaults to V(true).
    type: bool
notes:
  - To avoid TLS verification errors when O(validate_certs=true), the full certificate chain of the API server must
    be provided through O(ca_cert) or the kubeconfig file.
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - PyYAML >= 5.4
  - urllib3
  - orjson (optional, a faster decoder of the API server's answers)
"""
