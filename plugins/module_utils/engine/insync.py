# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The objects the last run found in sync, remembered by their ``uid`` and ``resourceVersion``.

Whether an object whose checksum matches git drifted is a walk of its ``managedFields`` against the manifest
(:func:`.plan.in_sync_by_ownership`): a tenth of a 10,000-object no-op. Its answer depends only on the live object
and on the desired one: the server gives a changed object (any field, ``managedFields`` included) a new
``resourceVersion``, and a deleted and re-created one a new ``uid``; the desired object is its checksum (with the
stack, record namespace, field manager and takeover patterns of the memo's file). So an object with the same uid,
resourceVersion, checksum and take-over as when a run found it in sync is in sync: it is not walked again. Any
change by anyone, and any change in git, walks it again; nothing is remembered of an object that was not in sync,
nor of one without a ``uid`` and ``resourceVersion``. (Every API of kube-apiserver, custom resources included, gives a
changed object a new ``resourceVersion``; the API conventions ask the same of an aggregated API server.)

The memo is kept in ``<discovery_cache_dir>/insync/`` (a directory private to the controller user, next to the
discovery cache), one file per server, stack and options, and under the code that decides (:func:`code_digest`):
another version of the collection starts from nothing. Without a cache directory, or when the file cannot be read
or written, every object is walked. Pure but for :func:`load` and :func:`save`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import hashlib
import json
import os
import tempfile

FORMAT = 1


class Verified:
    """The objects found in sync: ``known`` (by an earlier run: ``{uid: [resourceVersion, checksum, take_over]}``)
    and ``now`` (by this run's last plan, the same form). An object an earlier plan of this run walked (the plan made
    again under the Lease) is not walked again either."""

    def __init__(self, known=None):
        self.known = known if isinstance(known, dict) else {}
        self.now = {}
        self._walked = {}

    def start(self):
        """A new plan: what it finds in sync replaces what an earlier plan of the run found."""
        self.now = {}

    @staticmethod
    def _entry(live, checksum, take_over):
        meta = live.get("metadata") or {}
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        if not (isinstance(uid, str) and uid and isinstance(version, str) and version and isinstance(checksum, str)):
            return None, None
        return uid, [version, checksum, bool(take_over)]

    def seen(self, live, checksum, take_over):
        """True if ``live`` is the very object an earlier run found in sync with ``checksum`` and ``take_over``
        (then this run found it too)."""
        uid, entry = self._entry(live, checksum, take_over)
        if uid is None or (self.known.get(uid) != entry and self._walked.get(uid) != entry):
            return False
        self.now[uid] = entry
        return True

    def note(self, live, checksum, take_over):
        """This run found ``live`` in sync."""
        uid, entry = self._entry(live, checksum, take_over)
        if uid is not None:
            self.now[uid] = self._walked[uid] = entry

    @property
    def changed(self):
        return self.now != self.known


def code_digest(modules):
    """A digest of the source of ``modules`` as their loaders give it (ansible-core's collection loader keeps the
    source it compiled; a module process's zip holds it), or None when one cannot be read (nothing is remembered)."""
    digest = hashlib.sha256()
    for module in modules:
        try:
            source = module.__loader__.get_source(module.__name__)
        except Exception:  # pylint: disable=broad-except
            return None
        if source is None:
            return None
        digest.update(source.encode("utf-8") if isinstance(source, str) else source)
    return digest.hexdigest()[:16]


def memo_path(cache_dir, server, stack, record_namespace, field_manager, takeover_managers, code):
    """The file of a stack's memo on ``server``, or None (no cache directory, no server URL, or no digest of the
    code)."""
    if not cache_dir or not server or not code:
        return None
    text = json.dumps([FORMAT, server, stack, record_namespace, field_manager, takeover_managers, code],
                      sort_keys=True, default=str)
    name = "stacksync-insync-%s.json" % hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
    return os.path.join(os.path.expanduser(cache_dir), "insync", name)


def load(path):
    """:class:`Verified` with what the file ``path`` remembers (nothing when there is none, or it is not ours)."""
    if path:
        with contextlib.suppress(IOError, OSError, ValueError):
            with open(path) as f:
                data = json.load(f)
            if isinstance(data, dict) and data.get("format") == FORMAT:
                return Verified(data.get("objects"))
    return Verified()


def save(path, verified):
    """Keep what this run found in sync at ``path`` (atomically; nothing when it did not change or cannot be
    written)."""
    if not path or not verified.changed:
        return
    directory = os.path.dirname(path)
    with contextlib.suppress(IOError, OSError):
        os.makedirs(directory, 0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".stacksync-insync-")
        try:
            with os.fdopen(fd, "w") as f:  # dumps: json's C encoder (dump encodes in Python)
                f.write(json.dumps({"format": FORMAT, "objects": verified.now}, separators=(",", ":")))
            os.rename(tmp, path)
        except (IOError, OSError):
            os.remove(tmp)
