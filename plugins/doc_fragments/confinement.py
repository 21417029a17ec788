# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The confinement options of a stack (stack, stack_info; per source in sources): ``module_utils/engine/confinement.py``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  allowed_namespaces:
    description:
      - Confine the stack to these namespaces (names or shell-style globs, C(team-a-*)), like the C(destinations)
        of an Argo CD AppProject or the C(targetNamespace) of a Flux Kustomization.
      - Each namespaced object must be in one of them. The namespace checked is the object's own after
        O(namespace) filled it in, and whether a kind is namespaced comes from the API server's discovery, never
        from the manifest.
      - An object outside fails the run before any write, naming the stack, the object and the rule; a live object
        of the stack outside is never pruned (it is kept and reported as skipped, reason C(outside-confinement)).
      - Setting any of O(allowed_namespaces), O(allowed_kinds), O(denied_kinds) or O(allow_cluster_scoped)
        confines the stack; then cluster-scoped objects are refused unless O(allow_cluster_scoped=true).
      - An empty list allows no namespace. Unset, any namespace is allowed.
    type: list
    elements: str
    version_added: 0.2.0
  allowed_kinds:
    description:
      - Confine the stack to these kinds (like an AppProject's C(namespaceResourceWhitelist) /
        C(clusterResourceWhitelist)). A pattern without a C(.) matches the kind in any API group (V(ConfigMap),
        V(Cluster*)); with one it matches C(Kind.group) as kubectl writes it (V(Deployment.apps),
        V(*.cert-manager.io)). Case-sensitive shell-style globs.
      - An object of another kind fails the run before any write; a live one is never pruned.
      - Unset, every kind is allowed (except those of O(denied_kinds)).
    type: list
    elements: str
    version_added: 0.2.0
  denied_kinds:
    description:
      - Kinds the stack may not hold, whatever O(allowed_kinds) says (patterns as in O(allowed_kinds)), for example
        V(Secret) for a tenant whose secrets come from elsewhere, or V(*.rbac.authorization.k8s.io).
      - Setting it confines the stack (see O(allowed_namespaces)).
    type: list
    elements: str
    version_added: 0.2.0
  allow_cluster_scoped:
    description:
      - Whether a confined stack (one with any of these options set) may hold cluster-scoped objects (Namespaces,
        ClusterRoles, CRDs, ...), subject to O(allowed_kinds) and O(denied_kinds).
      - Unset, V(false) for a confined stack; a stack without any of these options is not confined at all.
    type: bool
    version_added: 0.2.0
"""
