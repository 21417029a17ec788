# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sandboxed templates of a render, rendered in a process of their own, its CPU time and memory bounded.

The sandbox (:mod:`.sandbox`) refuses what it can see coming: names, attributes, includes, and the values that
repetition, widths and the methods and filters whose arguments make a value large would build. What it cannot
foresee is bounded here, by the operating system: the templates of one render (a source's, a lookup's) are
rendered in a child of the process that renders (``os.fork`` at its first template: nothing is imported or copied
again; later templates go through a pipe), with a CPU-time limit for them all (``RLIMIT_CPU``: nested loops, a
regular expression that backtracks for ever) and an address-space limit (``RLIMIT_AS``: whatever a filter builds),
no core file. A template that exceeds them fails with a :class:`.sandbox.TemplateFailure` saying which limit (the
render fails, as for any template error), and the controller goes on.

Where ``os.fork`` or the ``resource`` module is missing, templates render in this process, as before.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import select
import signal
import struct
import warnings

try:
    import resource
except ImportError:  # pragma: no cover - not on this platform: rendered in this process
    resource = None

from ansible_collections.stacksync.k8s.plugins.plugin_utils.sandbox import DEFAULT_VALUE_LIMIT, TRUST_HINT, TemplateFailure, render_template

#: CPU seconds the templates of one render may use together (a 1,000-line template renders in milliseconds)
RENDER_CPU_SECONDS = 60
#: the memory the templates' process may add to what it starts with: at least this, or 16 times the output limit
TEMPLATE_MEMORY = 1024 * 1024 * 1024

#: seconds a template's process may take to answer beyond twice its CPU limit (a process that waits, not computes)
ANSWER_GRACE = 30

_CAN_FORK = hasattr(os, "fork") and resource is not None
_SIZE = struct.Struct("!Q")


class BoundedTemplates:
    """``templates(text, path)``: :func:`.sandbox.render_template` of each template of one render, with
    ``directory``, ``variables`` and ``max_output``, in one child process whose CPU time (``cpu_seconds``, for all
    of them) and added memory (``memory`` bytes) are bounded. :meth:`close` ends the child (the render's end)."""

    def __init__(self, directory, variables, max_output, cpu_seconds=RENDER_CPU_SECONDS, memory=None):
        self.directory, self.variables, self.max_output = directory, variables, max_output
        self.cpu_seconds = cpu_seconds
        self.memory = memory or max(TEMPLATE_MEMORY, 16 * (max_output or DEFAULT_VALUE_LIMIT))
        self._child = None  # (pid, requests fd, answers fd)

    def __call__(self, text, path):
        if not _CAN_FORK:
            return self._outcome(self._rendered(text, path), 0)
        if self._child is None:
            self._child = self._fork()
        pid, requests, answers = self._child
        try:
            _send(requests, {"text": text, "path": path})
            # the child's CPU limit ends a template that computes; one that waits (never seen) is ended here
            ready = select.select([answers], [], [], self.cpu_seconds * 2 + ANSWER_GRACE)[0]
            answer = _receive(answers) if ready else None
        except OSError:  # the child is gone (a limit, a crash)
            answer = ready = None
        if answer is None:
            self._child = None
            if ready == []:
                os.kill(pid, signal.SIGKILL)
            os.close(requests)
            os.close(answers)
            _pid, status = os.waitpid(pid, 0)
            if ready == []:
                raise TemplateFailure("template error: its rendering process did not answer within %d s" % (
                    self.cpu_seconds * 2 + ANSWER_GRACE))
            return self._outcome(None, status)
        return self._outcome(answer, 0)

    def close(self):
        if self._child is not None:
            pid, requests, answers = self._child
            self._child = None
            os.close(requests)  # the child reads the end of its requests and exits
            os.close(answers)
            os.waitpid(pid, 0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the child ---------------------------------------------------------------------------------
    def _fork(self):
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        with warnings.catch_warnings():  # Python 3.12 warns of a fork while threads run: the child runs no other code
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # render what comes, answer, exit without running anything of the parent's
            code = 0
            try:
                _only_descriptors(request_r, answer_w)
                _confine(self.cpu_seconds, self.memory)
                while True:
                    request = _receive(request_r)
                    if request is None:
                        break
                    _send(answer_w, self._rendered(request["text"], request["path"]))
            except BaseException:  # pylint: disable=broad-except  # a child never returns into its parent's code
                code = 1
            finally:
                os._exit(code)  # pylint: disable=protected-access
        os.close(request_r)
        os.close(answer_w)
        return pid, request_w, answer_r

    def _rendered(self, text, path):
        try:
            return {"text": render_template(text, path, self.directory, self.variables, self.max_output)}
        except TemplateFailure as exc:
            return {"problem": exc.problem, "line": exc.line}
        except MemoryError:
            return {"memory": True}

    def _outcome(self, answer, status):
        """The text of ``answer``, else the :class:`TemplateFailure` it (or, for none, the child's ``status``
        from ``waitpid``) says."""
        if isinstance(answer, dict) and isinstance(answer.get("text"), str):
            return answer["text"]
        if isinstance(answer, dict) and isinstance(answer.get("problem"), str):
            raise TemplateFailure(answer["problem"], answer.get("line"))
        if (isinstance(answer, dict) and answer.get("memory")) or (answer is None and status == 0):
            raise TemplateFailure("template refused: it needed more than %d MB of memory; %s"
                                  % (self.memory // 2 ** 20, TRUST_HINT))
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
            raise TemplateFailure("template refused: the templates of this render used more than %d s of CPU (a loop "
                                  "or a regular expression that does not end?); %s" % (self.cpu_seconds, TRUST_HINT))
        raise TemplateFailure("template error: its rendering process ended without an answer (%s)" % (
            "signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exit status %d" % os.WEXITSTATUS(status)))


def _only_descriptors(*keep):
    """Close every file descriptor of this process but ``keep`` (its pipes), its standard ones on ``/dev/null``:
    the templates' process holds none of its parent's files, sockets or connections."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd not in keep:
            os.dup2(null, fd)
    low = 3
    for fd in sorted({*keep, null}):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, max(os.sysconf("SC_OPEN_MAX"), low))  # past the highest descriptor it may have open
    if null > 2:
        os.close(null)


def _confine(cpu_seconds, memory):
    """This process's limits: CPU time (a forked child starts with none of its own), address space (what it has
    now plus ``memory``), no core file."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _lower(resource.RLIMIT_CPU, cpu_seconds, 5)
    size = _address_space()
    if size is not None:
        _lower(resource.RLIMIT_AS, size + memory)


def _lower(which, limit, grace=0):
    """Lower the soft limit ``which`` to ``limit`` (never above the hard one), and the hard one to
    ``limit + grace`` when there is none (the kernel kills at the hard limit)."""
    _soft, hard = resource.getrlimit(which)
    if hard == resource.RLIM_INFINITY:
        resource.setrlimit(which, (limit, limit + grace))
    else:
        resource.setrlimit(which, (min(limit, hard), hard))


def _address_space():
    """This process's address space in bytes (Linux's ``/proc``), or None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _send(fd, message):
    try:
        data = json.dumps(message).encode("utf-8")
    except MemoryError:
        data = b'{"memory": true}'
    view = memoryview(_SIZE.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd):
    """The next message on ``fd``, or None at its end."""
    head = _read(fd, _SIZE.size)
    if head is None:
        return None
    data = _read(fd, _SIZE.unpack(head)[0])
    return None if data is None else json.loads(data.decode("utf-8"))


def _read(fd, size):
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
