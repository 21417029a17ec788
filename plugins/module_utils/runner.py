# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run of the ``stacksync.k8s.stack`` module, shared by the module and by its action plugin.

The module runs it in its own process (on the target); the action plugin runs it in the
controller's process when the task would run the module there anyway with the same Python
(``plugins/plugin_utils/execution.py`` decides), which saves building, starting and feeding a
module process. Both validate their parameters with :data:`ARGUMENT_SPEC` first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile
import traceback

from ansible_collections.stacksync.k8s.plugins.module_utils.base.stack_spec import stack_spec
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.common import missing_requirement
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import POLICY_SPEC
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.diff import readable
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import OptionError, options_from_params
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import prune_limit
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan_file import document, stack_entry
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prefetch import Prefetch
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import HAS_JMESPATH, JMESPATH_IMPORT_ERROR
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import (
    AUTH_ARG_SPEC,
    CLIENT_REQUIREMENTS,
    AuthError,
    build_client,
    resolve_auth_params,
)

#: the module's options: its own (one table, :data:`.stack_spec.OPTIONS`), the connection's, the confinement's
ARGUMENT_SPEC = stack_spec()
ARGUMENT_SPEC.update(AUTH_ARG_SPEC)
ARGUMENT_SPEC.update(POLICY_SPEC)

MUTUALLY_EXCLUSIVE = [("resources", "src", "resources_file")]


class RunFailed(Exception):
    """The run failed: ``msg`` for the user, ``result`` the return values to report with it."""

    def __init__(self, msg, result):
        super(RunFailed, self).__init__(msg)
        self.msg = msg
        self.result = result


def _report(changeset, client, warn, unchanged):
    """Emit the run's warnings; its return values (none if it failed before any) and API request counts;
    ``unchanged``: ``applied`` lists the unchanged objects too (``report_unchanged``)."""
    result = {}
    if changeset is not None:
        for warning in changeset.warnings:
            warn(warning)
        result = changeset.result(unchanged=unchanged)
    result["api_requests"] = dict(client.counts)
    return result


def read_resources_file(path):
    """The manifests in the JSON file ``path`` (a list of mappings); raises :class:`RunFailed` otherwise."""
    try:
        with open(path, "rb") as f:
            resources = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as e:
        raise RunFailed("resources_file %s: %s" % (path, e), {}) from None
    if not isinstance(resources, list) or not all(isinstance(r, dict) for r in resources):
        raise RunFailed("resources_file %s: not a JSON list of mappings" % (path,), {})
    return resources


def read_plan(value):
    """An approved plan given as a file path: its JSON (what ``plan_file`` writes); any other value as it is."""
    if not isinstance(value, str):
        return value
    try:
        with open(os.path.expanduser(value), "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as e:
        raise RunFailed("approved_plan %s: %s" % (value, e), {}) from None


def write_plan(path, plan):
    """Write ``plan`` as JSON to ``path`` (whole or not at all: a temporary file renamed)."""
    path = os.path.expanduser(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".plan-", dir=os.path.dirname(os.path.abspath(path)))
        with os.fdopen(fd, "w") as f:
            json.dump(plan, f, sort_keys=True, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise RunFailed("plan_file %s: %s" % (path, e.strerror or e), {}) from None


def plan_of(manager, opts, params, warn):
    """The plan of a check (``emit_plan`` / ``plan_file``): a plan document with this stack's entry, written to
    ``plan_file`` if given; None when no plan was asked for."""
    if not params.get("emit_plan") or manager.last_plan is None:
        return None
    plan = manager.last_plan
    over = False
    if plan.prune is not None and manager.pruning and plan.prune.candidates:
        limit = prune_limit(opts.max_prune, plan.prune.owned)
        over = len(plan.prune.candidates) > limit
        if over:
            warn("stack %r: the plan deletes %d of the stack's %d objects, more than max_prune allows (%d): a run "
                 "deletes them only with this plan approved" % (opts.stack, len(plan.prune.candidates),
                                                                plan.prune.owned, limit))
    doc = document({opts.stack: stack_entry(plan, opts.source, opts.commit, opts.record_namespace, manager.pruning,
                                            over)})
    if params.get("plan_file"):
        write_plan(params["plan_file"], doc)
    return doc


def connection_key(params):
    """What identifies the connection of ``params`` (its options and ``K8S_AUTH_*`` variables): runs with the same
    key reach the same server with the same credentials (:mod:`.shared_lists` hands a list only to those)."""
    return json.dumps(resolve_auth_params(params), sort_keys=True, default=str)


def _prefetch(client, context_namespace, params, shared=None):
    if shared is not None:
        shared.watch(client, params["name"], params["record_namespace"])
    prefetch = Prefetch(client, params["name"], params["record_namespace"], params.get("discovery_cache_dir"),
                        params["concurrency"], shared=shared,
                        connection=connection_key(params) if shared is not None else None)
    prefetch.context_namespace = context_namespace
    return prefetch


def start_prefetch(params):
    """The reads ahead (:class:`.prefetch.Prefetch`) of the run of validated ``params``, started now (before the
    manifests are rendered, :meth:`run_stack` takes them); None when there is nothing to read ahead or no client
    can be built (the run then says why)."""
    if params.get("state") == "absent" or (params.get("concurrency") or 0) < 1:
        return None
    try:
        client, context_namespace = build_client(params, maxsize=params["concurrency"])
    except Exception:  # pylint: disable=broad-except
        return None
    return _prefetch(client, context_namespace, params)


def run_stack(params, check_mode=False, diff=False, warn=None, verbosity=0, progress=None, prefetch=None, shared=None):
    """Converge the stack described by validated ``params``; its return values.

    ``warn(message)`` receives each warning (``module.warn`` in the module); ``verbosity`` is Ansible's
    (with 2 or more, diffs show created and pruned objects whole); ``progress(verb, done, total)`` is
    called as objects are applied, pruned and waited for (see :mod:`.progress`); ``prefetch`` the reads
    ahead of :func:`start_prefetch` (else they start here, while the manifests are read and prepared); ``shared`` the
    lists of the ``stacksync.k8s.sources`` task the run is part of (:class:`.shared_lists.SharedLists`: the run reads
    ahead from them and tells them of its writes).
    Raises :class:`RunFailed` (with the return values known so far) when the run fails. Its messages name the
    options in the words the caller set (:func:`.vocabulary.spoken`), else as the module's options.
    """
    try:
        warn = warn or (lambda message: None)
        flags = dict(CLIENT_REQUIREMENTS)
        if params["wait_condition"]:
            flags["jmespath"] = (HAS_JMESPATH, JMESPATH_IMPORT_ERROR)
        problem = missing_requirement(flags)
        if problem:
            raise RunFailed(problem[0], dict(exception=problem[1]))
        if params.get("src"):
            raise RunFailed("src is rendered on the controller by the stacksync.k8s.stack action plugin; "
                            "this module was run without it (pass the manifests in resources instead)", {})
        if params["concurrency"] < 1:
            raise RunFailed("%s must be at least 1" % option("concurrency"), {})
        if prefetch is None:
            try:
                client, context_namespace = build_client(params, maxsize=params["concurrency"])
            except AuthError as e:
                raise RunFailed(str(e), {}) from None
            if params["state"] != "absent":  # read ahead while the manifests are read and prepared
                prefetch = _prefetch(client, context_namespace, params, shared)
            elif shared is not None:
                shared.watch(client, params["name"], params["record_namespace"])
        else:
            client, context_namespace = prefetch.client, prefetch.context_namespace
            if shared is not None and client.on_write is None:
                shared.watch(client, params["name"], params["record_namespace"])
        return _converge(params, client, context_namespace, prefetch, check_mode, diff, warn, verbosity, progress)
    finally:
        if prefetch is not None:
            prefetch.close()


def _converge(params, client, context_namespace, prefetch, check_mode, diff, warn, verbosity, progress):
    """:func:`run_stack` once the client is built."""
    if params.get("resources_file") and params["state"] != "absent":
        # set by the action plugin for a module process (or by the user); the invocation then lists them
        params["resources"] = read_resources_file(params["resources_file"])
    params["approved_plan"] = read_plan(params.get("approved_plan"))
    params["emit_plan"] = bool(check_mode and (params.get("emit_plan") or params.get("plan_file")))
    unchanged = bool(params.get("report_unchanged"))  # applied lists the unchanged objects too
    try:
        # whole bodies of created and pruned objects in diffs only with -vv
        opts = options_from_params(params, context_namespace, check_mode=check_mode, diff=diff, diff_full=verbosity >= 2)
        discovery = None
        if prefetch is not None:
            prefetch.ready()  # from here on the engine may use its discovery
            discovery = prefetch.discovery
        manager = StackManager(client, params["name"], opts=opts, progress=progress, discovery=discovery)
        changeset = manager.delete_all() if params["state"] == "absent" else manager.sync(params["resources"])
    except (StackError, OptionError) as e:
        changeset = getattr(e, "changeset", None)
        result = _report(changeset, client, warn, unchanged)
        if getattr(e, "phase", None):
            result["failed_phase"] = e.phase
        if changeset is not None and diff and changeset.diff:
            result["diff"] = readable(changeset.diff)
        raise RunFailed(str(e), result) from None
    except Exception as e:  # an unexpected bug: say what failed, never dump objects
        raise RunFailed("stack %r: unexpected error: %s" % (params["name"], e),
                        dict(exception=traceback.format_exc(), api_requests=dict(client.counts))) from None
    result = _report(changeset, client, warn, unchanged)
    if diff:
        result["diff"] = readable(changeset.diff)
    plan = plan_of(manager, opts, params, warn)
    if plan is not None:
        result["plan"] = plan
    return result
