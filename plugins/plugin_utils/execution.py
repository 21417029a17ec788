# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a ``stacksync.k8s.stack`` task runs: in the controller's process or as a module process.

A module normally runs in a process of its own on the task's host. When that host is the controller
(connection ``local``) and the interpreter Ansible would run the module with (however it is set:
host variable, ``ANSIBLE_PYTHON_INTERPRETER``, ``interpreter_python`` in ansible.cfg, the implicit
localhost, or interpreter discovery) is the very Python running ``ansible-playbook``, and nothing about the task
asks for a separate process (``become`` to another user, ``async``, a task ``environment``,
delegation), the action plugin runs the same code in its own process instead: the same result,
without building, starting and feeding a module process (about half a second per task). Pure
functions, unit-tested; the action plugin gathers the facts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


def same_python(interpreter, controller_python):
    """Whether the ``ansible_python_interpreter`` value names the controller's own Python.

    Same path, or the same file reached from the same directory (``python`` / ``python3`` in one
    virtualenv, or the virtualenv through a symbolic link). Not the same when only the resolved file
    is: every virtualenv's ``python`` is a link to a base interpreter, but its packages are its own.
    ``auto`` (interpreter discovery) and commands with arguments (``/usr/bin/env python3``) are not
    taken as the same.
    """
    if not isinstance(interpreter, str) or not interpreter or not controller_python:
        return False
    if not os.path.isabs(os.path.expanduser(interpreter)):
        return False
    wanted = os.path.abspath(os.path.expanduser(interpreter))
    own = os.path.abspath(controller_python)
    if wanted == own:
        return True
    same_dir = os.path.realpath(os.path.dirname(wanted)) == os.path.realpath(os.path.dirname(own))
    return same_dir and os.path.realpath(wanted) == os.path.realpath(own)


#: ``interpreter_python`` values that ask for interpreter discovery (an empty value does too), up to ansible-core 2.20.
DISCOVERY_MODES = ("auto", "auto_legacy", "auto_silent", "auto_legacy_silent")
#: ansible-core 2.21 removed the ``auto_legacy`` modes: it takes such a value as an interpreter's path since.
CURRENT_DISCOVERY_MODES = ("auto", "auto_silent")


def discovery_modes(core_version):
    """The discovery modes of ansible-core ``core_version`` (its ``ansible.release.__version__``)."""
    try:
        major_minor = tuple(int(part) for part in str(core_version).split(".")[:2])
    except ValueError:
        return CURRENT_DISCOVERY_MODES
    return DISCOVERY_MODES if major_minor < (2, 21) else CURRENT_DISCOVERY_MODES


def describe_origin(origin):
    """Where a configuration value came from, in words, from the origin ansible-core's config manager reports
    (``var: NAME``, ``env: NAME``, the path of the ansible.cfg that set it, ``default``)."""
    if not origin or origin == "default":
        return "the default"
    for prefix, words in (("var: ", "variable "), ("env: ", "environment variable "), ("cli: ", "option "),
                          ("keyword: ", "keyword ")):
        if origin.startswith(prefix):
            return words + origin[len(prefix):]
    return "interpreter_python in " + origin


def effective_interpreter(configured, origin=None, discovered=None, remote_is_local=False, playbook_python=None,
                          modes=DISCOVERY_MODES):
    """The Python a module process would run under, as ansible-core resolves it, and how it was set.

    Mirrors ``ansible.executor.module_common._get_shebang``: a connection that runs modules on the
    controller itself (``_remote_is_local``) uses ``ansible_playbook_python``; otherwise the
    ``INTERPRETER_PYTHON`` setting (``ansible_python_interpreter`` variable, then
    ``ANSIBLE_PYTHON_INTERPRETER``, then ``interpreter_python`` in ansible.cfg, then ``auto``); a
    discovery mode (or an empty value) means the host's ``discovered_interpreter_python`` fact.

    :param configured: the templated ``INTERPRETER_PYTHON`` value for the task's variables.
    :param origin: where it came from, as ``C.config.get_config_value_and_origin`` reports it.
    :param discovered: the host's ``discovered_interpreter_python`` fact, if discovery has run.
    :param modes: the values that ask for discovery (:func:`discovery_modes` of the ansible-core running).
    :returns: ``(interpreter, how)``; ``interpreter`` is None when discovery is needed and has not run
        for the host yet (the action plugin then runs it, as a module run would).
    """
    if remote_is_local:
        return playbook_python, "ansible_playbook_python (the connection runs modules on the controller)"
    value = configured.strip() if isinstance(configured, str) else configured
    if value and value not in modes:
        return value, describe_origin(origin)
    return discovered or None, "interpreter discovery (%s, from %s)" % (value or "auto", describe_origin(origin))


def task_reasons(transport, become=False, async_val=0, delegate_to=None, environment=None, enabled=True):
    """Why the task must run as a module process whatever the interpreter; an empty list if nothing does.

    :param transport: the connection plugin's ``transport`` (``local`` for ``ansible.builtin.local``).
    :param become: whether privilege escalation is on for the task.
    :param async_val: the task's ``async`` seconds.
    :param delegate_to: the task's ``delegate_to``.
    :param environment: the task's ``environment`` (a list of mappings, as on ``Task.environment``).
    :param enabled: the ``stacksync_in_process`` variable.
    """
    reasons = []
    if not enabled:
        reasons.append("stacksync_in_process is false")
    if transport != "local":
        reasons.append("connection %s is not local" % (transport,))
    if become:
        reasons.append("become is on")
    if async_val:
        reasons.append("async task")
    if delegate_to:
        reasons.append("delegated to %s" % (delegate_to,))
    if any(environment or ()):
        reasons.append("the task sets environment variables")
    return reasons


def interpreter_reason(interpreter, controller_python, how=None):
    """Why the effective interpreter rules out the controller's process, or None when it is the controller's Python."""
    if same_python(interpreter, controller_python):
        return None
    if how:
        return "the Python interpreter %s (%s) is not the controller's Python %s" % (
            interpreter if interpreter else "(not known)", how, controller_python)
    return "ansible_python_interpreter %s is not the controller's Python %s" % (
        interpreter if interpreter else "(not set: interpreter discovery)", controller_python)
