# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the other sources of the same ``stacksync.k8s.sources`` run declare (option ``other_sources``). Pure.

The sources action passes every stack run the identities each *other* source of the run rendered (whatever became
of its apply). They serve two rules:

* **declared elsewhere**: the prune plan never deletes what another source of the run declares; it releases it to
  that source's stack (:meth:`RunSources.declared`, merged with the other stacks' records). A move between two
  sources is a move in check mode too, and a stack prunes although another stack's apply failed.
* **two sources, one object**: an object two sources of the run declare stays with the stack that owns it (its
  label); when neither does, with the first of them in the run's order. The other one leaves it alone (a skipped
  entry and a warning naming both sources) until the owner stops declaring it, then takes it over
  (:meth:`RunSources.split`). No flip between them from run to run. A source of the run that could not be rendered
  is listed without objects (``objects: null``): what carries its stack's label stays with it.

A source confined to namespaces or kinds (its ``policy``, the confinement options) claims nothing outside them: a
tenant that declares a neighbour's object neither keeps it from that neighbour nor saves it from the neighbour's
prune. An identity is the manifest's group, kind, namespace and name. The namespace of a manifest that names none is the
other source's ``namespace``, else this run's default: both scopes are matched (an object is namespaced or not by
its kind, so the wrong one matches nothing).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, group_of, identity_digest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import compile_policy, object_problem

#: keys of one ``other_sources`` entry
ENTRY_KEYS = ("stack", "source", "namespace", "earlier", "objects", "policy")
#: why an object is left to a source whose declared set is unknown this run
NOT_RENDERED = "whose source could not be rendered in this run"


class Claim:
    """One other source's claim on an identity."""

    __slots__ = ("earlier", "source", "stack")

    def __init__(self, stack, source, earlier):
        self.stack = stack
        self.source = source
        self.earlier = earlier

    def named(self):
        return "%s (stack %r)" % (self.source or "?", self.stack)


def _identities(obj, namespace):
    """The identities a declared ``[apiVersion, kind, namespace, name]`` may stand for (namespaced and not)."""
    if not isinstance(obj, (list, tuple)) or len(obj) != 4 or not all(isinstance(x, str) for x in obj):
        raise ValueError("other_sources: each object is [apiVersion, kind, namespace, name], got %r" % (obj,))
    api_version, kind, ns, name = obj
    group = group_of(api_version)
    return ObjectId(group, kind, ns or namespace, name), ObjectId(group, kind, "", name)


class _Declared:
    """One other source's declarations, parsed once: the identities it may stand for (both scopes) inside its
    confinement, and their digests (made when first asked for)."""

    __slots__ = ("_digests", "ids")

    def __init__(self, objects, namespace, policy):
        ids = set()
        for obj in objects:
            for oid, namespaced in zip(_identities(obj, namespace), (True, False)):
                if not object_problem(oid, namespaced, policy):  # outside its confinement: no claim
                    ids.add(oid)
        self.ids = ids
        self._digests = None

    def digests(self):
        if self._digests is None:
            self._digests = frozenset(identity_digest(oid) for oid in self.ids)
        return self._digests


#: ``id(objects) -> (objects, its length, (namespace, policy), _Declared)``: a sources task runs every stack with the same lists of
#: what the others declare (one list per source, never changed), twice (apply, prune); each is parsed once, not once
#: per run (200 stacks of 50 objects: 400 runs x 10,000 identities). The list is held, so its id is not reused.
_PARSED = {}
_PARSED_MAX = 4096


def _declared(objects, namespace, policy):
    """The :class:`_Declared` of one entry's ``objects``, parsed once per list (see :data:`_PARSED`)."""
    key = id(objects)
    hit = _PARSED.get(key)
    if hit is not None and hit[0] is objects and hit[1] == len(objects) and hit[2] == (namespace, policy):
        return hit[3]
    parsed = _Declared(objects, namespace, compile_policy(policy))
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[key] = (objects, len(objects), (namespace, policy), parsed)
    return parsed


class DeclaredElsewhere:
    """``{identity digest: [stack]}`` of what the run's other sources declare, then what the other stacks' records
    declare, looked up per digest (nothing is merged up front: a sources run of 200 stacks asks this 400 times)."""

    def __init__(self, sources, records):
        self._sources = sources  # [(Claim, _Declared)] with claims, in the run's order
        self._records = records or {}

    def __getitem__(self, digest):
        stacks = [claim.stack for claim, declared in self._sources if digest in declared.digests()]
        stacks.extend(s for s in self._records.get(digest) or () if s not in stacks)
        if not stacks:
            raise KeyError(digest)
        return stacks

    def __contains__(self, digest):
        return digest in self._records or any(digest in declared.digests() for _c, declared in self._sources)

    def _keys(self):
        keys = set(self._records)
        for _claim, declared in self._sources:
            keys.update(declared.digests())
        return keys

    def get(self, digest, default=None):
        try:
            return self[digest]
        except KeyError:
            return default

    def keys(self):
        return self._keys()

    def items(self):
        return [(digest, self[digest]) for digest in self._keys()]

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())

    def __bool__(self):
        return bool(self._records) or any(declared.ids for _c, declared in self._sources)

    __nonzero__ = __bool__


class RunSources:
    """The other sources of the run, from the ``other_sources`` option (``None``: not a sources run)."""

    def __init__(self, entries=None, default_namespace="default"):
        #: a sources run (``entries`` given, even empty): what its other sources declare is all that the run writes
        self.known = entries is not None
        self.sources = []  # [(Claim, _Declared)] of the sources that claim something, in the run's order
        self.unknown = {}  # stack -> Claim of the sources whose declared set is unknown (not rendered)
        for entry in entries or []:
            if not isinstance(entry, dict) or not entry.get("stack") or set(entry) - set(ENTRY_KEYS):
                raise ValueError("other_sources: each entry is a mapping of %s, got %r"
                                 % (", ".join(ENTRY_KEYS), sorted(entry) if isinstance(entry, dict) else entry))
            claim = Claim(entry["stack"], entry.get("source"), bool(entry.get("earlier")))
            if entry.get("objects") is None:
                self.unknown[claim.stack] = claim
                continue
            declared = _declared(entry["objects"], entry.get("namespace") or default_namespace, entry.get("policy"))
            if declared.ids:
                self.sources.append((claim, declared))

    def __bool__(self):
        return bool(self.sources or self.unknown)

    __nonzero__ = __bool__

    def claims(self, oid):
        """The claims of the other sources on ``oid``, in the run's order."""
        return [claim for claim, declared in self.sources if oid in declared.ids]

    def namespace_made_before(self, name):
        """The claim of a source of the run applied before this one that declares Namespace ``name`` (it exists by
        this stack's apply), or None."""
        return next((claim for claim in self.claims(ObjectId("", "Namespace", "", name)) if claim.earlier), None)

    def declared(self, records=None):
        """``{identity digest: [stack]}`` (a :class:`DeclaredElsewhere`): what this run's other sources declare,
        then what the other stacks' ``records`` declare (as :meth:`.record.StackRecord.declared_elsewhere` reads
        them; None: not read)."""
        if not self.sources:
            return records
        return DeclaredElsewhere(self.sources, records)

    def split(self, to_apply, snap, stack, source):
        """``(to_apply, yielded, warnings)``: the objects this stack leaves to another source of the run
        (``[(Desired, message)]``, one warning per source they are left to), and the others.

        An object stays with the stack whose label it carries (``snap.ours``: this one; ``snap.others``: another)
        if that stack declares it in this run, or if that stack's source could not be rendered (whether it still
        declares it is unknown); else with the first of the run's sources that declare it.
        """
        if not self:
            return to_apply, [], []
        keep, yielded, by_keeper = [], [], {}
        for d in to_apply:
            keeper, why = self._keeper(d, snap)
            if keeper is None:
                keep.append(d)
                continue
            verb = "owned by" if why == NOT_RENDERED else "also declared by"
            yielded.append((d, "%s source %s, %s: left to it until it stops declaring it" % (verb, keeper.named(), why)))
            by_keeper.setdefault(keeper, (why, []))[1].append(d.named())
        return keep, yielded, [self._warning(keeper, why, names, Claim(stack, source, False))
                               for keeper, (why, names) in by_keeper.items()]

    @staticmethod
    def _warning(keeper, why, names, this):
        shown = "; ".join(names[:5]) + ("; and %d more" % (len(names) - 5) if len(names) > 5 else "")
        if why == NOT_RENDERED:
            return ("%d object(s) that %s declares belong to %s, %s: they stay with stack %r until it stops declaring "
                    "them: %s" % (len(names), this.named(), keeper.named(), why, keeper.stack, shown))
        return ("declared by two sources of this run, %s and %s: %d object(s) stay with stack %r, %s, until that "
                "source stops declaring them: %s" % (keeper.named(), this.named(), len(names), keeper.stack, why, shown))

    def _keeper(self, d, snap):
        """``(Claim, why)`` of the other source that keeps desired ``d``, or ``(None, None)`` if this stack does."""
        if d.ignored or d.oid in snap.ours:
            return None, None
        owner = snap.others.get(d.oid)
        if owner in self.unknown:
            return self.unknown[owner], NOT_RENDERED
        claims = self.claims(d.oid)
        for claim in claims:
            if claim.stack == owner:
                return claim, "which owns it"
        for claim in claims:
            if claim.earlier:
                return claim, "which comes first in the run"
        return None, None
