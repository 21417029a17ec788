# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of one run, validated once and shared by every step (and by ``stack`` and ``stack_info``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils import approval
from ansible_collections.stacksync.k8s.plugins.module_utils.confinement import POLICY_OPTIONS, compile_policy
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import DEFAULT_FIELD_MANAGER
from ansible_collections.stacksync.k8s.plugins.module_utils.drift import compile_patterns
from ansible_collections.stacksync.k8s.plugins.module_utils.grace import parse_duration
from ansible_collections.stacksync.k8s.plugins.module_utils.plan import prune_limit
from ansible_collections.stacksync.k8s.plugins.module_utils.run_sources import RunSources
from ansible_collections.stacksync.k8s.plugins.module_utils.validation import valid_label_value
from ansible_collections.stacksync.k8s.plugins.module_utils.wait import compile_conditions

#: every option with its default; see the ``stack`` module's documentation for their meaning
DEFAULTS = dict(
    namespace="default", field_manager=DEFAULT_FIELD_MANAGER, force_conflicts=True, prune=True,
    propagation_policy="Background", allow_empty=False, fail_on_shared=False, recreate_on_immutable=False,
    record_namespace="kube-system", commit=None, phase="all", concurrency=16, full_prune_scan=False,
    check_mode=False, diff=False, diff_full=True, wait=False, wait_timeout=300, wait_conditions=None, discovery_cache_dir=None,
    lock_timeout=300, lease_duration=60, crd_timeout=60, poll_interval=1.0, max_prune=None, takeover_managers=None,
    confinement=None, record_namespaces=None, source=None, other_sources=None,
    approved_plan=None, emit_plan=False, prune_grace=None,
)


class OptionError(ValueError):
    """An option has a value the run cannot use."""


class StackOptions:
    """Validated options of a run on stack ``stack`` (attributes named as in :data:`DEFAULTS`)."""

    def __init__(self, stack, **options):
        unknown = sorted(set(options) - set(DEFAULTS))
        if unknown:
            raise TypeError("unknown option(s): %s" % ", ".join(unknown))
        if not isinstance(stack, str) or not stack or not valid_label_value(stack):
            raise OptionError("stack name %r is not a valid label value (1-63 characters: letters, digits, '-', '_', "
                              "'.', beginning and ending with a letter or digit)" % (stack,))
        values = dict(DEFAULTS)
        values.update(options)
        self.stack = stack
        for name, value in values.items():
            setattr(self, name, value)
        self.namespace = self.namespace or "default"
        try:
            prune_limit(values["max_prune"], 0)
            self.takeover = compile_patterns(values["takeover_managers"])
            self.policy = compile_policy(values["confinement"])  # None: not confined (see .confinement)
            self.run_sources = RunSources(self.other_sources, self.namespace)
            self.grace = parse_duration(values["prune_grace"])  # seconds, None: no grace period
            # the stack's part of an approved plan (None: none given); a plan that cannot be used fails here
            self.approval = None if self.approved_plan is None else approval.for_stack(
                approval.parse(self.approved_plan), stack)
        except ValueError as e:
            raise OptionError(str(e)) from None
        self.concurrency = max(int(self.concurrency), 1)
        self.wait_rules = compile_conditions(self.wait_conditions)

    @property
    def applying(self):
        return self.phase in ("all", "apply")

    @property
    def writes_record(self):
        return self.phase in ("all", "prune")


def options_from_params(params, context_namespace=None, check_mode=False, diff=False, diff_full=True):
    """:class:`StackOptions` from validated module parameters (``stack`` and ``stack_info`` share it)."""
    names = dict(field_manager="field_manager", force_conflicts="force_conflicts", prune="prune",
                 propagation_policy="propagation_policy", allow_empty="allow_empty", fail_on_shared="fail_on_shared",
                 recreate_on_immutable="recreate_on_immutable", record_namespace="record_namespace", commit="commit",
                 phase="phase", concurrency="concurrency", full_prune_scan="full_prune_scan", wait="wait",
                 wait_timeout="wait_timeout", wait_conditions="wait_condition", discovery_cache_dir="discovery_cache_dir",
                 max_prune="max_prune", lock_timeout="wait_timeout", takeover_managers="takeover_managers",
                 record_namespaces="record_namespaces", source="source", other_sources="other_sources",
                 approved_plan="approved_plan", emit_plan="emit_plan", prune_grace="prune_grace")
    options = dict((option, params[param]) for option, param in names.items() if params.get(param) is not None)
    options["namespace"] = params.get("namespace") or context_namespace or "default"
    options["confinement"] = dict((k, params.get(k)) for k in POLICY_OPTIONS)
    return StackOptions(params["name"], check_mode=check_mode, diff=diff, diff_full=diff_full, **options)
