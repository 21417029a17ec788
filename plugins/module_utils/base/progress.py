# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress lines of a long run: ``applied 400/1000 objects (12 s)``.

The engine calls an injected ``progress(verb, done, total)`` after each object it applies, prunes or
finds ready (:data:`NO_PROGRESS` by default). :class:`Progress` is the one the module and its action
plugin inject: it turns those calls into at most one line per ``interval`` seconds, plus a last
line when a phase that printed one finishes, and hands each line to ``emit`` (``display.v`` in the
controller's process, ``module.log`` in a module process). Its clock is injectable for tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time

#: environment variable: seconds between two progress lines (default :data:`DEFAULT_INTERVAL`)
INTERVAL_ENV = "STACKSYNC_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 5.0


def _nothing(verb, done, total):
    """Report nothing."""


def note(progress, text):
    """Tell ``progress`` a line of its own (``the stack is locked by another run ...``): its ``note(text)``, if it has
    one (a plain ``progress(verb, done, total)`` callable is told nothing)."""
    told = getattr(progress, "note", None)
    if told is not None:
        told(text)


def paused(progress, seconds):
    """Tell ``progress`` that the run spent ``seconds`` waiting (for the stack's lock), not working: its
    ``paused(seconds)``, if it has one."""
    told = getattr(progress, "paused", None)
    if told is not None and seconds:
        told(seconds)


#: the default progress callable
NO_PROGRESS = _nothing


def interval_from_env(environ, default=DEFAULT_INTERVAL):
    """The interval set in ``environ`` (:data:`INTERVAL_ENV`), or ``default`` when unset or not a number >= 0."""
    try:
        value = float(environ.get(INTERVAL_ENV, default))
    except (TypeError, ValueError):
        return default
    return value if value >= 0 else default


def progress_line(prefix, verb, done, total, elapsed):
    """``stack web: applied 400/1000 objects (12 s)``."""
    return "%s%s %d/%d objects (%d s)" % (prefix, verb, done, total, int(elapsed))


class Progress:
    """Throttled progress reporting (thread-safe: the engine applies and prunes from a thread pool).

    A line is emitted when ``interval`` seconds have passed since the run started or since the last
    line; when a phase that emitted a line reaches ``done == total``, its last line is emitted too.
    """

    def __init__(self, emit, interval=DEFAULT_INTERVAL, prefix="", clock=time.monotonic):
        self.emit = emit
        self.interval = interval
        self.prefix = prefix
        self.clock = clock
        self.started = clock()
        self._last = self.started
        self._reported = set()  # (verb, total) of the phases that emitted a line
        self._finished = set()
        self._lock = threading.Lock()

    def __call__(self, verb, done, total):
        with self._lock:
            now = self.clock()
            phase = (verb, total)
            if phase in self._finished:
                return
            last_of_phase = done >= total and phase in self._reported
            if not last_of_phase and now - self._last < self.interval:
                return
            self._last = now
            self._reported.add(phase)
            if done >= total:
                self._finished.add(phase)
            self.emit(progress_line(self.prefix, verb, done, total, now - self.started))

    def note(self, text):
        """Emit ``text`` at once (not throttled)."""
        with self._lock:
            self.emit(self.prefix + text)

    def paused(self, seconds):
        """The run waited ``seconds`` (for its lock): the times of the lines leave them out."""
        with self._lock:
            self.started += seconds
            self._last = self.clock()


class _Tee:
    def __init__(self, callables):
        self.callables = callables

    def __call__(self, verb, done, total):
        for progress in self.callables:
            progress(verb, done, total)

    def note(self, text):
        for progress in self.callables:
            note(progress, text)

    def paused(self, seconds):
        for progress in self.callables:
            paused(progress, seconds)


def tee(*progresses):
    """One progress callable that calls each of ``progresses`` (``None`` ones left out) in turn (and tells each its
    :func:`note` and :func:`paused`)."""
    callables = [p for p in progresses if p is not None]
    if len(callables) == 1:
        return callables[0]
    return _Tee(callables)


class Steps:
    """One phase's count: each call is one more object done, reported as ``progress(verb, done, total)``."""

    def __init__(self, progress, verb, total):
        self.progress = progress
        self.verb = verb
        self.total = total
        self.done = 0
        self._lock = threading.Lock()

    def __call__(self):
        with self._lock:  # counts reach ``progress`` in order
            self.done += 1
            self.progress(self.verb, self.done, self.total)
