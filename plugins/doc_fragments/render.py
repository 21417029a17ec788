# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Option ``render`` of the modules that take ``src`` (stack, stack_info): the manifests lookup's options."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  render:
    description:
      - How O(src) is rendered; the options of the C(stacksync.k8s.manifests) lookup, with its defaults.
    type: dict
    suboptions:
      root:
        description: The checkout O(src) belongs to; nothing that resolves outside it is read (default O(src) itself).
        type: path
      include:
        description: Glob patterns, relative to O(src), of the files to read (default all).
        type: list
        elements: str
      exclude:
        description: Glob patterns, relative to O(src), of files and directories to skip.
        type: list
        elements: str
      recursive:
        description: Descend into subdirectories (default V(true)).
        type: bool
      template_vars:
        description:
          - Variables for C(*.j2) templates. Sandboxed templates (the default) get these and C(inventory_hostname)
            only; with O(render.trusted=true), they are added to the task's variables.
        type: dict
      trusted:
        description:
          - Render C(*.j2) templates with full Ansible templating (the task's variables, every filter, test and
            lookup) and decrypt vault data with every vault secret of the play (unless O(render.vault_id) is set),
            instead of in the sandbox (default V(false)). B(A template can then run commands on the controller and
            copy any variable, credentials included, into a manifest), so it is only for a repository whose authors
            are as trusted as the playbook's. See the C(stacksync.k8s.manifests) lookup's O(stacksync.k8s.manifests#lookup:trusted)
            for what the sandbox allows.
        type: bool
      vault_id:
        description:
          - The vault ids (labels of C(--vault-id label@source); C(default) for C(--vault-password-file)) whose
            secrets may decrypt the vault data of O(src). Default none (with O(render.trusted=true), all of them).
        type: list
        elements: str
      kustomize_remote:
        description:
          - Let kustomizations refer to remote bases, resources and files, which kustomize fetches from the
            network (default V(false), refused before kustomize runs).
          - Never allowed - a C(file:) URL (the controller's own files), a query value git would read as an option
            (C(?ref=--upload-pack=...)).
        type: bool
      max_file_size:
        description: Refuse manifest files larger than this many bytes (default 10 MiB). C(0) disables the limit.
        type: int
      kustomize_command:
        description: Command that renders a kustomization directory (the directory is appended).
        type: list
        elements: str
      kustomize_timeout:
        description: Seconds to wait for kustomize to render one directory (default 300).
        type: int
"""
