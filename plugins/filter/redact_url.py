# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: redact_url
author: stacksync.k8s contributors (@stacksync)
version_added: "0.1.0"
short_description: Remove credentials from a git URL, or from every URL in a text
description:
  - Drops the C(user:token@) part and the query string and fragment (C(?access_token=...), C(?private_token=...))
    of C(scheme://) URLs, and the C(user@) of an scp-like address (C(git@github.com:acme/infra.git) becomes
    C(github.com:acme/infra.git)).
  - Applied to a longer text (an error message, say), removes the credentials of every C(scheme://) URL in it.
options:
  _input:
    description: A URL, or a text containing URLs.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: "https://github.com/acme/infra.git"
  ansible.builtin.debug:
    msg: "{{ 'https://user:tok@github.com/acme/infra.git' | stacksync.k8s.redact_url }}"

- name: "https://gitlab.example.com/acme/infra.git"
  ansible.builtin.debug:
    msg: "{{ 'https://gitlab.example.com/acme/infra.git?private_token=glpat-x' | stacksync.k8s.redact_url }}"
"""

RETURN = r"""
_value:
  description: The input without credentials.
  type: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import redact_url  # noqa: E402


def redact_url_filter(text):
    try:
        return redact_url(text)
    except TypeError as exc:
        raise AnsibleFilterError("stacksync.k8s.redact_url: %s" % exc) from exc


class FilterModule(object):

    def filters(self):
        return {"redact_url": redact_url_filter}
