# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: stack_name
author: stacksync.k8s contributors (@stacksync)
version_added: "0.1.0"
short_description: Default stack name for a git repository URL and a path inside it
description:
  - Turns a repository URL (C(https://), C(ssh://), C(file://), scp-like C(git@host:org/repo.git) or a local
    path) plus an optional path inside the repository into a valid Kubernetes label value, used as the
    default stack name (the C(stacksync.io/stack) label).
  - The scheme, credentials (C(user:token@)), query string, fragment and a trailing C(.git) are dropped; the
    rest is lower-cased and every run of characters other than C(a-z), C(0-9) and C(.) becomes C(-).
  - The result is at most 63 characters and starts and ends with a letter or digit. Longer names are cut
    and end in C(-) plus 10 hex digits of a SHA-256 of the whole normalised name, so the name is stable
    and distinct long sources stay distinct.
  - Credentials never appear in the result.
  - Role C(stacksync.k8s.source) uses the same rule.
options:
  _input:
    description: The repository URL or local path.
    type: str
    required: true
  path:
    description: Directory inside the repository holding the manifests.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: "github.com-acme-infra-clusters-prod"
  ansible.builtin.debug:
    msg: "{{ 'https://user:tok@github.com/acme/infra.git' | stacksync.k8s.stack_name(path='clusters/prod') }}"

- name: "github.com-acme-infra"
  ansible.builtin.debug:
    msg: "{{ 'git@github.com:acme/infra.git' | stacksync.k8s.stack_name }}"
"""

RETURN = r"""
_value:
  description: A valid label value of at most 63 characters (lowercase letters, digits, C(-) and C(.), starting and ending with a letter or digit).
  type: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.naming import stack_name  # noqa: E402


def stack_name_filter(url, path=""):
    try:
        return stack_name(url, path)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("stacksync.k8s.stack_name: %s" % exc) from exc


class FilterModule(object):

    def filters(self):
        return {
            "stack_name": stack_name_filter,
        }
