# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a ``stacksync.k8s.stack`` task runs: in the controller's process or as a module process.

A module normally runs in a process of its own on the task's host. When that host is the controller
(connection ``local``) with the very Python running ``ansible-playbook``, and nothing about the task
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


def module_process_reasons(transport, become=False, async_val=0, delegate_to=None, environment=None, interpreter=None,
                           controller_python=None, enabled=True):
    """Why the task must run as a module process; an empty list means it may run in the controller's process.

    :param transport: the connection plugin's ``transport`` (``local`` for ``ansible.builtin.local``).
    :param become: whether privilege escalation is on for the task.
    :param async_val: the task's ``async`` seconds.
    :param delegate_to: the task's ``delegate_to``.
    :param environment: the task's ``environment`` (a list of mappings, as on ``Task.environment``).
    :param interpreter: the host's ``ansible_python_interpreter`` (templated), if set.
    :param controller_python: ``sys.executable`` of the controller.
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
    if not same_python(interpreter, controller_python):
        reasons.append("ansible_python_interpreter %s is not the controller's Python %s" % (
            interpreter if interpreter else "(not set: interpreter discovery)", controller_python))
    return reasons
