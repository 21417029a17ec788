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
    path) plus an optional path inside the repository into the default stack name (the C(stacksync.io/stack)
    label) that M(stacksync.k8s.sources), M(stacksync.k8s.checkout) and role C(stacksync.k8s.source) use.
  - "The name is the repository's last path segment and the path, lower-cased (every run of characters other
    than C(a-z), C(0-9) and C(.) becomes C(-)), then C(-) and 10 hex digits of a SHA-256 of the source's identity:
    C(infra-clusters-prod-3f0c9a1b2d). At most 63 characters; a long readable part is cut."
  - "The identity is the repository URL normalised (scheme, credentials, a default port, query string, fragment,
    a trailing C(.git) or C(/) dropped, the host lower-cased) plus the path: the spellings of one repository
    (C(https://host/x.git), C(https://host/x), C(git@host:x.git), C(ssh://git@host/x)) give one name, and distinct
    sources distinct names (C(acme/apps) with path C(prod) and C(acme/apps-prod) no longer share one)."
  - Credentials never appear in the result.
  - With O(legacy=true), the name releases before 0.2.0 derived (C(github.com-acme-infra-clusters-prod)). Set it
    as the source's C(stack) to keep a stack under its old name.
options:
  _input:
    description: The repository URL or local path.
    type: str
    required: true
  path:
    description: Directory inside the repository holding the manifests.
    type: str
    default: ""
  legacy:
    description:
      - Give the name of releases before 0.2.0 (the whole URL without scheme and credentials, plus the path,
        lower-cased; a hash only when longer than 63 characters). Two sources can share such a name.
    type: bool
    default: false
    version_added: "0.2.0"
"""

EXAMPLES = r"""
- name: "infra-clusters-prod- and 10 hex digits"
  ansible.builtin.debug:
    msg: "{{ 'https://user:tok@github.com/acme/infra.git' | stacksync.k8s.stack_name(path='clusters/prod') }}"

- name: "the same name: one repository, another spelling"
  ansible.builtin.debug:
    msg: "{{ 'git@github.com:acme/infra.git' | stacksync.k8s.stack_name(path='clusters/prod') }}"

- name: "github.com-acme-infra-clusters-prod: the name before 0.2.0"
  ansible.builtin.debug:
    msg: "{{ 'https://github.com/acme/infra.git' | stacksync.k8s.stack_name(path='clusters/prod', legacy=true) }}"
"""

RETURN = r"""
_value:
  description: A valid label value of at most 63 characters (lowercase letters, digits, C(-) and C(.), starting and ending with a letter or digit).
  type: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible.module_utils.parsing.convert_bool import boolean  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import legacy_stack_name, stack_name  # noqa: E402


def stack_name_filter(url, path="", legacy=False):
    try:
        return (legacy_stack_name if boolean(legacy, strict=True) else stack_name)(url, path)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("stacksync.k8s.stack_name: %s" % exc) from exc


class FilterModule(object):

    def filters(self):
        return {
            "stack_name": stack_name_filter,
        }
