# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Option names in messages, in the words of whoever called.

A message names an option through :func:`option`: ``"set %s: true" % option("allow_empty")``. A task of
module ``stacksync.k8s.stack`` reads ``set allow_empty: true``; the same run made by role
``stacksync.k8s.sync`` reads ``set stacksync_allow_empty: true``, the role's variable. The role tells module
``stacksync.k8s.sources`` who called (the task variable :data:`CALLER_VAR`), the sources action builds each
stack run's names (:func:`stack_names`) and hands them to the stack action it runs, and the run speaks them
while it lasts (:func:`spoken`). A stack run in a module process (a remote host, ``become``) speaks the
module's words.

The names of a run are set for the whole process (the controller's worker process of a task, which runs
one stack at a time); the engine's threads build messages in the same run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib

from ansible_collections.stacksync.k8s.plugins.module_utils.base.stack_spec import role_variables

#: the options of module stacksync.k8s.sources that role stacksync.k8s.sync sets from a variable
#: ``stacksync_<option>``: the stack options the role passes through (:func:`.stack_spec.role_variables`), the
#: connection (through module_defaults) and the options of sources alone (tests/unit checks this list against the
#: role's meta/argument_specs.yml)
ROLE_OPTIONS = tuple(sorted(set(role_variables()) | {
    "api_key", "ca_cert", "client_cert", "client_key", "context", "host", "impersonate_groups", "impersonate_user",
    "kubeconfig", "proxy", "request_timeout", "validate_certs",  # the connection
    "cache_dir", "path", "sources", "summary", "version",  # module sources' own
}))
#: options of a source that the shorthand of the role (``stacksync_repo``) sets from a variable of its own
SHORTHAND = {"repo": "stacksync_repo", "stack": "stacksync_stack", "version": "stacksync_version",
             "path": "stacksync_path"}
#: who calls module stacksync.k8s.sources: a task of one's own, the role with stacksync_sources, or with
#: its single-source shorthand stacksync_repo
CALLERS = ("module", "role", "role_repo")
#: the task variable that says who calls module stacksync.k8s.sources (set by role stacksync.k8s.sync)
CALLER_VAR = "__stacksync_caller"
#: the options of a source that a stack run gets as options of its own (the rest come from the task)
SOURCE_TO_STACK = {"kubeconfig": "kubeconfig", "context": "context", "impersonate_user": "impersonate_user",
                   "impersonate_groups": "impersonate_groups", "record_namespace": "record_namespace",
                   "namespace": "namespace", "stack": "name", "prune_grace": "prune_grace",
                   "fail_on_shared": "fail_on_shared",
                   "allowed_namespaces": "allowed_namespaces", "allowed_kinds": "allowed_kinds",
                   "denied_kinds": "denied_kinds", "allow_cluster_scoped": "allow_cluster_scoped"}

_names = {}


def option(name):
    """How the caller names option ``name`` (itself unless a run speaks other words, :func:`spoken`)."""
    return _names.get(name, name)


@contextlib.contextmanager
def spoken(names):
    """Within the block, :func:`option` says ``names[option]`` for each option named in ``names``."""
    global _names
    before = _names
    _names = dict(names or {})
    try:
        yield
    finally:
        _names = before


def task_option(caller, name):
    """The caller's name of the task's option ``name`` (``stacksync_max_prune`` for the role)."""
    if caller in ("role", "role_repo") and name in ROLE_OPTIONS:
        return "stacksync_" + name
    return name


def source_option(caller, index, name):
    """The caller's name of option ``name`` of the source at ``index`` of the task's list (0 for the first)."""
    if caller == "role_repo" and name in SHORTHAND:
        return SHORTHAND[name]
    if caller == "role_repo":
        return "stacksync_sources[0].%s" % name  # not settable with the shorthand: say what would set it
    return "%s[%d].%s" % ("stacksync_sources" if caller == "role" else "sources", index, name)


def stack_names(caller, index, stack_options, source_set):
    """The names a stack run of the source at ``index`` speaks: its options (``stack_options``, and those the
    caller could have set) named as the caller does, those in ``source_set`` (set by the source) as the source's."""
    names = dict((k, task_option(caller, k)) for k in set(stack_options) | set(ROLE_OPTIONS))
    for source_key, stack_key in SOURCE_TO_STACK.items():
        if source_key in source_set:
            names[stack_key] = source_option(caller, index, source_key)
    return dict((k, v) for k, v in names.items() if v != k)
