# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Option ``discovery_cache_dir`` of the modules that read API discovery (stack, stack_info)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  discovery_cache_dir:
    description:
      - Directory for a discovery cache shared between runs (like kubectl's C(~/.kube/cache/discovery)), one file
        per API server URL, kept for 10 minutes. It is read again on a miss (a kind not in the cache) and after CRDs
        are applied, and dropped after a failed run and after a run that deleted a CRD or an APIService. Prune
        decisions never rest on it; they read discovery from the API server.
      - The action of C(stacksync.k8s.stack) also keeps here (in C(renders/), private to the controller user) the
        render of a C(src) whose files cannot depend on the host (no C(*.j2) template, kustomization or Ansible vault
        content under it, no link out of it), and reads it again while the names and bytes of its files are the same
        (read and hashed again when the stat of one of them changed - device, inode, size, modification or change
        time, as git's index keeps them - or one was added, removed or renamed). The checksums of the manifests of a
        render read from there are kept beside it (a Secret's, keyed by the stack, never).
      - Also kept here (in C(insync/), private to the controller user) are the objects each stack's last run found in
        sync or left in sync (the server's answer to its apply), by C(uid), C(resourceVersion) and checksum. An object
        that no one changed since (the API server gives any change, of its fields or of their owners, a new
        C(resourceVersion)) and whose manifest is the same is not checked for drift field by field again; any change
        is.
      - Set to an empty string to read discovery from the API server on every run (and keep no render, and nothing
        found in sync).
    type: path
    default: ~/.kube/cache/stacksync
"""
