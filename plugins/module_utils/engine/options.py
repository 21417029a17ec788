# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of one run, validated once and shared by every step (and by ``stack`` and ``stack_info``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.stack_spec import BY_NAME, OPTIONS, engine_defaults
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import approval
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import POLICY_OPTIONS, compile_policy
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.drift import compile_patterns
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.grace import duration_seconds, parse_duration
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import prune_limit
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.run_sources import RunSources
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.validation import valid_label_value
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import compile_conditions

#: every option with its default: those of the module's parameters (:data:`.stack_spec.OPTIONS`, under the engine's
#: names), and the engine's own; see the ``stack`` module's documentation for their meaning
DEFAULTS = dict(
    engine_defaults(), check_mode=False, diff=False, diff_full=True, confinement=None,
    lock_timeout=BY_NAME["wait_timeout"].default, lease_duration=60, crd_timeout=60, poll_interval=1.0,
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
            self.grace = parse_duration(values["prune_grace"], option("prune_grace"))  # seconds, None: no grace period
            # a number of seconds or a duration (5m), as prune_grace (the module's type is raw)
            self.wait_timeout = duration_seconds(values["wait_timeout"], option("wait_timeout"))
            self.lock_timeout = duration_seconds(values["lock_timeout"], option("wait_timeout"))
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
    options = dict((o.attr, params[o.name]) for o in OPTIONS if o.attr and params.get(o.name) is not None)
    if params.get("wait_timeout") is not None:
        options["lock_timeout"] = params["wait_timeout"]  # the Lease is waited for as long as the objects
    options["namespace"] = params.get("namespace") or context_namespace or "default"
    options["confinement"] = dict((k, params.get(k)) for k in POLICY_OPTIONS)
    return StackOptions(params["name"], check_mode=check_mode, diff=diff, diff_full=diff_full, **options)
