# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a failed sync points: the user's task that called the collection, not the collection's own code.

ansible-core 2.19 and later print, under a failed task's error, its ``Origin`` (file, line) and the lines of
YAML there. For a task of the ``stacksync.k8s.sync`` role that is the collection's own task file, which tells the
reader nothing about what they wrote. The task that brought the role in (an ``include_role`` / ``import_role``
task of their play, else their play itself) is where they look: :func:`caller_ds` finds it, and the sources
action points the failure there. A task outside the collection (the ``stacksync.k8s.sources`` module called
from a playbook) keeps its own origin: it is the user's already.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

#: a path under this collection (installed, or the development checkout linked as a collection)
COLLECTION_PART = os.sep + os.path.join("ansible_collections", "stacksync", "k8s") + os.sep


def in_collection(path, root=None):
    """Whether the ``path`` of a playbook object (``file:line``, or "" when unknown) is the collection's own file.

    ``root``: the collection's directory as this process imported it (a development checkout has no
    ``ansible_collections`` in its real path)."""
    if not path:
        return False
    return COLLECTION_PART in path or bool(root and os.path.realpath(path.rsplit(":", 1)[0]).startswith(root + os.sep))


def _path(obj):
    try:
        return obj.get_path()
    except Exception:  # pylint: disable=broad-except  # an object of another ansible-core: no path, no change
        return ""


def _candidates(task):
    """The playbook objects above ``task``, nearest first: its parent tasks (``include_role`` / ``import_role``), then
    the play."""
    obj = getattr(task, "_parent", None)
    while obj is not None:
        if hasattr(obj, "action"):  # a task (blocks have no action)
            yield obj
        play = getattr(obj, "_play", None)
        obj = getattr(obj, "_parent", None)
        if obj is None and play is not None:
            yield play


def caller_ds(task, root=None):
    """The data structure (``get_ds()``) the failure of ``task`` is best shown at: the nearest task up its parents
    (an ``include_role`` / ``import_role``) or play outside the collection; else (the collection's own
    ``stacksync.k8s.sync`` playbook) the nearest outside its roles; None to leave the failure where it is (``task``
    is outside the collection, or nothing better is known)."""
    if not in_collection(_path(task), root):
        return None
    known = [(obj, _path(obj)) for obj in _candidates(task)]
    known = [(obj, path) for obj, path in known if path]
    for obj, path in known:
        if not in_collection(path, root):
            return obj.get_ds()
    for obj, path in known:
        if (os.sep + "roles" + os.sep) not in path:
            return obj.get_ds()
    return None
