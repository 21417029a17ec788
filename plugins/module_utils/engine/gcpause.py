# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Python's cyclic garbage collector paused for the engine's bulk steps.

Reading, preparing and planning thousands of manifests and live objects allocates millions of
dicts and lists that stay alive until the run ends. Every few hundred allocations the collector
walks the young objects, and its full collections walk all of them: at 10,000 objects that was
half of the engine's CPU in a no-op (decoding the list pages, building identities), collecting
nothing, since these structures form no reference cycles. The collector is switched off while
such a step runs and on again after it (a nested step leaves it to the outermost one; a
collector that was already off stays off). Reference counting still frees whatever is dropped;
cyclic garbage made meanwhile waits for the next collection after the step.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import functools
import gc


@contextlib.contextmanager
def paused():
    """The garbage collector off for the ``with`` block, then as it was."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def gc_paused(fn):
    """Decorator: ``fn`` runs with the garbage collector paused (:func:`paused`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with paused():
            return fn(*args, **kwargs)
    return wrapper
