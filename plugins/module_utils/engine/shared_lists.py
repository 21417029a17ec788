# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stacks of one ``stacksync.k8s.sources`` task list each kind once: :class:`SharedLists`.

Each stack run reads its live objects with one label-selected list per kind (``stacksync.io/stack=<stack>``): a
sources task of 200 stacks sends 200 lists of ConfigMaps, and the server reads every ConfigMap for each of them. The
task instead lists each kind once for all its stacks (``stacksync.io/stack in (<its stacks>)``, per connection: a
list is only ever handed to a run that reaches the server with the same credentials) and each run's read ahead
(:mod:`.prefetch`) takes its own part of it, the objects labelled with its stack. It decides nothing:

* a run takes its part as its first observation's answer (the read ahead is offered once); a run that writes objects
  observes again under its Lease, from the server;
* any write of the task's runs drops every list held, but one to the writing stack's own record, key and Lease (a
  new commit of a no-op writes those), a dry run and a review (a question to the authorizer): what a run wrote,
  deleted, or deleted by cascade is never answered from before it; a later run lists again (its part of a new
  shared list);
* a failed list is not kept. A kind the credentials may not list, or one no longer served, is told to the run that
  asked as its own list would be (it is unverified, or listed in its namespaces); any other failure (a proxy that
  refuses a long selector, a server error) sends the run to list on its own. The next run asks again;
* a list is used for :data:`MAX_AGE` seconds at most (a change someone else makes meanwhile is seen by a later run,
  as one made just after a run's own list would be; what a run deletes it decides on its fresh lists);
* a task of many stacks lists them in groups, each group's selector at most :data:`MAX_SELECTOR` characters.

The objects handed to a stack are its own (no other stack gets them); handed to the same stack again (its apply and
its prune runs), they are copies.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LeaseLock
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import StackKey, StackRecord
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

#: longest label selector of one shared list: the request line stays well under the 8 KB a proxy in front of the
#: server may allow (nginx's default); more stacks are split into groups, one list per group and kind
MAX_SELECTOR = 3000
#: seconds a shared list answers the task's runs after it was read
MAX_AGE = 30.0
#: the APIs of reviews (``SelfSubjectAccessReview`` and the like): a POST there asks a question, it stores nothing
REVIEW_APIS = ("/apis/authorization.k8s.io/", "/apis/authentication.k8s.io/")


def shared_selector(stacks):
    """The label selector of the objects of any of ``stacks``."""
    return "%s in (%s)" % (STACK_LABEL, ",".join(sorted(set(stacks))))


def groups_of(stacks, limit=MAX_SELECTOR):
    """``stacks`` (sorted) in groups whose :func:`shared_selector` is at most ``limit`` characters long."""
    groups, current = [], []
    for stack in sorted(set(stacks)):
        if current and len(shared_selector([*current, stack])) > limit:
            groups.append(current)
            current = []
        current.append(stack)
    if current:
        groups.append(current)
    return groups


class SharedListFault(Exception):
    """The shared list failed in a way the run's own list might not (a proxy refusing a long selector, a server
    error): the run lists on its own (:meth:`.client.KubeClient.offer`: a fault of the read ahead is asked again)."""


def state_paths(stack, record_namespace):
    """The paths of ``stack``'s own record, key and Lease (their writes change no object of a stack)."""
    return frozenset((StackRecord(None, record_namespace, stack, None).path,
                      StackKey(None, record_namespace, stack, None).path,
                      LeaseLock(None, record_namespace, stack).path))


def written_path(method, path, body):
    """The path of the object a write changes (a POST names it in its body)."""
    path = path.split("?", 1)[0]
    if method == "POST" and isinstance(body, dict):
        name = (body.get("metadata") or {}).get("name")
        if name:
            return "%s/%s" % (path.rstrip("/"), name)
    return path


def part_of(items, stack):
    """The objects of ``items`` labelled with ``stack``."""
    out = []
    for obj in items:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if labels.get(STACK_LABEL) == stack:
            out.append(obj)
    return out


class _List:
    __slots__ = ("items", "lock", "read_at")

    def __init__(self):
        self.lock = threading.Lock()
        self.items = None
        self.read_at = None


class SharedLists:
    """The lists of one task whose runs are the stacks ``stacks`` (see the module's documentation)."""

    def __init__(self, stacks, clock=time.monotonic, max_age=MAX_AGE):
        self.stacks = frozenset(stacks)
        self.clock = clock
        self.max_age = max_age
        self.selectors = {}  # stack -> the selector of its group
        for group in groups_of(self.stacks):
            selector = shared_selector(group)
            self.selectors.update((stack, selector) for stack in group)
        self._lock = threading.Lock()
        self._lists = {}  # (connection, path, page size) -> _List
        self._given = set()  # (connection, path, stack): handed out once already
        self.listed = 0  # lists sent
        self.dropped = 0  # times the lists held were dropped after a write

    def serves(self, stack):
        return stack in self.stacks

    def watch(self, client, stack, record_namespace):
        """Be told of ``client``'s writes (the client of one run of ``stack``)."""
        own = state_paths(stack, record_namespace)

        def on_write(method, path, params, body):
            if params and params.get("dryRun"):
                return
            if path.startswith(REVIEW_APIS) or written_path(method, path, body) in own:
                return
            self.drop()

        client.on_write = on_write

    def drop(self):
        """Forget every list held (a run wrote)."""
        with self._lock:
            if self._lists:
                self.dropped += 1
            self._lists.clear()
            self._given.clear()

    def items(self, client, connection, stack, path, limit):
        """``stack``'s objects of the collection ``path`` (all namespaces), from the task's list of it with
        ``connection`` (the run's client reaches the server with it); raises the list's ApiError."""
        selector = self.selectors[stack]
        key = (connection, path, limit, selector)
        with self._lock:
            entry = self._lists.get(key)
            if entry is None:
                entry = self._lists[key] = _List()
        with entry.lock:
            if entry.items is None or self.clock() - entry.read_at > self.max_age:
                try:  # an error is not kept: the next run asks again
                    items = client.list_now(path, selector, limit)
                except ApiError as e:
                    if e.is_forbidden or e.is_not_found:  # the run's own list of the kind would be told the same
                        raise
                    raise SharedListFault(str(e)) from None
                with self._lock:
                    self.listed += 1
                entry.items, entry.read_at = items, self.clock()
                with self._lock:  # a new list: what was handed out before was another one
                    self._given = set(g for g in self._given if g[:2] != (connection, path))
        part = part_of(entry.items, stack)
        with self._lock:
            again = (connection, path, stack) in self._given
            self._given.add((connection, path, stack))
        return json.loads(json.dumps(part)) if again else part
