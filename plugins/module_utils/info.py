# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run of the ``stacksync.k8s.stack_info`` module, shared by the module and by its action plugin.

As for ``stack`` (:mod:`.runner`): the module runs it in its own process, the action plugin in the
controller's process when the task would run the module there with the same Python anyway. Both
validate their parameters with :data:`ARGUMENT_SPEC` (and :data:`MUTUALLY_EXCLUSIVE`) first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible_collections.stacksync.k8s.plugins.module_utils.base.stack_spec import info_spec
from ansible_collections.stacksync.k8s.plugins.module_utils.common import missing_requirement
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import POLICY_SPEC
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import OptionError, options_from_params
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import (
    AUTH_ARG_SPEC,
    CLIENT_REQUIREMENTS,
    AuthError,
    build_client,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed, plan_of

#: ``name``, ``resources``, ``src``, ``render`` and the options that change what the next sync would do
#: mean what they mean for ``stack``, with the same defaults (one table, :data:`.stack_spec.OPTIONS`), except that
#: ``resources`` has none: without a desired set, the stack's live objects are reported as they are.
ARGUMENT_SPEC = info_spec()
ARGUMENT_SPEC.update(AUTH_ARG_SPEC)
ARGUMENT_SPEC.update(POLICY_SPEC)

MUTUALLY_EXCLUSIVE = [("resources", "src")]

SRC_WITHOUT_ACTION = ("src is rendered on the controller by the stacksync.k8s.stack_info action plugin; "
                      "this module was run without it (pass the manifests in resources instead)")


def run_stack_info(params, warn=None):
    """The report on the stack described by validated ``params`` (the module's return values).

    ``warn(message)`` receives each warning (``module.warn`` in the module). Raises :class:`.runner.RunFailed`
    when the report cannot be made.
    """
    warn = warn or (lambda message: None)
    problem = missing_requirement(dict(CLIENT_REQUIREMENTS))
    if problem:
        raise RunFailed(problem[0], dict(exception=problem[1]))
    if params.get("src") is not None:
        raise RunFailed(SRC_WITHOUT_ACTION, {})
    try:
        client, context_namespace = build_client(params, maxsize=max(params["concurrency"], 1))
    except AuthError as e:
        raise RunFailed(str(e), {}) from None
    params["emit_plan"] = bool(params.get("emit_plan") or params.get("plan_file"))
    try:
        opts = options_from_params(params, context_namespace, check_mode=True)
        manager = StackManager(client, params["name"], opts=opts)
        report = manager.inspect(params["resources"])
        plan = plan_of(manager, opts, params, warn) if params["resources"] is not None else None
    except (StackError, OptionError) as e:
        raise RunFailed(str(e), {}) from None
    except Exception as e:  # an unexpected bug: say what failed, never dump objects
        raise RunFailed("stack %r: unexpected error: %s" % (params["name"], e),
                        dict(exception=traceback.format_exc())) from None
    finally:
        client.close()
    for warning in report.pop("warnings"):
        warn(warning)
    if plan is not None:
        report["plan"] = plan
    return dict(report, changed=False)
