# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument spec of ``stacksync.k8s.sources`` (an action plugin; its module file only documents it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import POLICY_SPEC
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import ARGUMENT_SPEC as STACK_SPEC

#: options of ``stacksync.k8s.stack`` that every source gets as they are (no default here: the
#: module's own default applies when unset)
PASSTHROUGH = tuple(sorted(set(STACK_SPEC) - {
    "name", "resources", "resources_file", "src", "render", "state", "phase", "prune", "namespace", "commit",
    "source", "other_sources",  # each source's own, set by the sources action
    "emit_plan", "plan_file", "approved_plan",  # the run's plan: one per host, each stack's part given by the action
    "report_unchanged",  # a source's entry lists the objects written and counts the unchanged ones
}))

SOURCE_SPEC = dict(
    repo=dict(type="str", required=True),
    version=dict(type="str"),
    path=dict(type="str"),
    stack=dict(type="str"),
    include=dict(type="list", elements="str"),
    exclude=dict(type="list", elements="str"),
    namespace=dict(type="str"),
    prune=dict(type="bool"),
    state=dict(type="str", choices=["present", "absent"]),
    vars=dict(type="dict"),
    trusted=dict(type="bool"),
    vault_id=dict(type="list", elements="str", no_log=False),
    kustomize_remote=dict(type="bool"),
    kubeconfig=dict(type="raw"),
    context=dict(type="str"),
    impersonate_user=dict(type="str"),
    impersonate_groups=dict(type="list", elements="str"),
    record_namespace=dict(type="str"),
    depends_on=dict(type="list", elements="str"),
    prune_grace=dict(type="str"),
    fail_on_shared=dict(type="bool"),
    **POLICY_SPEC
)


def _without_default(spec):
    return dict((k, v) for k, v in spec.items() if k != "default")


ARGUMENT_SPEC = dict(
    sources=dict(type="list", elements="dict", required=True, options=SOURCE_SPEC),
    version=dict(type="str", default="HEAD"),
    path=dict(type="str", default="."),
    prune=dict(type="bool", default=True),
    cache_dir=dict(type="path", default="~/.cache/stacksync"),
    summary=dict(type="bool", default=True),
    emit_plan=dict(type="bool", default=False),
    plan_file=dict(type="path"),
    approved_plan=dict(type="raw"),
)
ARGUMENT_SPEC.update((name, _without_default(STACK_SPEC[name])) for name in PASSTHROUGH)
