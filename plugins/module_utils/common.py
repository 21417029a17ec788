# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Glue between AnsibleModule and the engine: dependency checks, Secret-safe invocation logging."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import sys

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import redact_url, url_userinfo

#: (import flag module attribute, pip requirement) checked before anything else runs.
REQUIREMENTS = (
    ("kubernetes", "kubernetes>=24.2.0"),
    ("urllib3", "urllib3"),
    ("jmespath", "jmespath"),
)


def summarize_resources(resources):
    """What ``resources`` held, for the logged and returned invocation: one ``apiVersion kind
    namespace/name`` line per manifest instead of the manifests themselves.

    The manifests can be thousands of objects (megabytes that Ansible would scan for no_log values,
    send to syslog and carry back in the result) and may hold Secret data; their outcome is
    reported per object in ``applied`` / ``pruned`` anyway.
    """
    if not isinstance(resources, list):
        return resources
    out = []
    for item in resources:
        if not isinstance(item, dict):
            out.append("(%s)" % type(item).__name__)
            continue
        meta = item.get("metadata")
        namespace, name = (meta.get("namespace"), meta.get("name")) if isinstance(meta, dict) else (None, None)
        where = "%s/%s" % (namespace, name) if namespace and name else str(namespace or name or "")
        out.append(" ".join([str(x) for x in (item.get("apiVersion"), item.get("kind"), where) if x]))
    return out


URL_OPTIONS = ("host", "proxy")
MASK_TEXT = "********"


def redact_url_credentials(value):
    """``value`` with the ``user:password@`` part of a URL replaced by ``********@``."""
    if not isinstance(value, str):
        return value
    return redact_url(value, mask=MASK_TEXT)


def url_credentials(params):
    """The ``user:password`` parts of the URL options (``host``, ``proxy``): masked like no_log values."""
    found = set()
    for name in URL_OPTIONS:
        found |= url_userinfo(params.get(name) or "")
    return found


#: keys of a kubeconfig (given as a mapping) whose values are credentials
KUBECONFIG_SECRET_KEYS = frozenset(["token", "password", "client-key-data", "access-token", "refresh-token",
                                    "id-token", "client-secret", "idp-certificate-authority-data", "secret"])
MASK = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def kubeconfig_secrets(value):
    """The credentials inside a kubeconfig given as a mapping (tokens, passwords, keys, auth-provider
    tokens, ``exec`` environment values): masked like no_log values wherever they would appear."""
    found = set()

    def walk(node, secret_env=False):
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, str) and v and (k in KUBECONFIG_SECRET_KEYS or (secret_env and k == "value")):
                    found.add(v)
                else:
                    walk(v, secret_env or k == "env")
        elif isinstance(node, list):
            for item in node:
                walk(item, secret_env)

    if isinstance(value, dict):
        walk(value)
    return found


def _mask_kubeconfig(value):
    """A copy of a kubeconfig mapping with its credentials replaced by the no_log marker."""
    secrets = kubeconfig_secrets(value)

    def mask(node):
        if isinstance(node, dict):
            return dict((k, mask(v)) for k, v in node.items())
        if isinstance(node, list):
            return [mask(v) for v in node]
        return MASK if isinstance(node, str) and node in secrets else node

    return mask(value)


def credential_values(params):
    """Every credential inside the options that are not no_log themselves: URL user info
    (``host``, ``proxy``) and the secrets of a kubeconfig given as a mapping."""
    return url_credentials(params) | kubeconfig_secrets(params.get("kubeconfig"))


def safe_params(params, argument_spec):
    """``params`` as logged and returned under ``invocation``: manifests summarized
    (:func:`summarize_resources`), URL credentials and no_log options masked."""
    params = copy.copy(params)
    if "resources" in params:
        params["resources"] = summarize_resources(params["resources"])
    plan = params.get("approved_plan")
    if isinstance(plan, dict) and isinstance(plan.get("stacks"), dict):  # thousands of objects: named, not listed
        params["approved_plan"] = dict((k, plan.get(k)) for k in ("format", "host", "digest") if k in plan)
        params["approved_plan"]["stacks"] = sorted(plan["stacks"])
    for name in URL_OPTIONS:
        if name in params:
            params[name] = redact_url_credentials(params[name])
    if isinstance(params.get("kubeconfig"), dict):
        params["kubeconfig"] = _mask_kubeconfig(params["kubeconfig"])
    for name, spec in argument_spec.items():
        if spec.get("no_log") and params.get(name) is not None:
            params[name] = MASK
    return params


class StackModule(AnsibleModule):
    """AnsibleModule that never logs or echoes the manifests passed in ``resources``.

    ``resources`` cannot be ``no_log`` (Ansible would then mask every string in it -- namespaces,
    kinds -- throughout the result), so the invocation logged to syslog and returned as
    ``invocation`` lists the objects by identity instead (:func:`summarize_resources`).
    """

    def __init__(self, *args, **kwargs):
        super(StackModule, self).__init__(*args, **kwargs)
        # URL and kubeconfig credentials are masked wherever they would appear (messages, results), like no_log values.
        self.no_log_values.update(credential_values(self.params))

    def _safe_params(self):
        return safe_params(self.params, self.argument_spec)

    def _log_invocation(self):
        real = self.params
        self.params = self._safe_params()
        try:
            super(StackModule, self)._log_invocation()
        finally:
            self.params = real

    def exit_json(self, **kwargs):
        kwargs.setdefault("invocation", {"module_args": self._safe_params()})
        super(StackModule, self).exit_json(**kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs.setdefault("invocation", {"module_args": self._safe_params()})
        super(StackModule, self).fail_json(msg, **kwargs)


def missing_requirement(flags):
    """``(message, error)`` for the first missing package (flags: ``{name: (ok, import error)}``), else None."""
    for name, requirement in REQUIREMENTS:
        ok, error = flags.get(name, (True, None))
        if not ok:
            return ("%s Install %s in the Python at %s." % (missing_required_lib(requirement), requirement, sys.executable),
                    str(error))
    return None
