# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""API discovery: (group, kind) -> resource name, scope, verbs, served versions.

Read once per run: aggregated discovery (``apidiscovery.k8s.io/v2``, two requests) when the server
offers it, else ``/api``, ``/apis`` and every group-version (in parallel). Optionally cached on
disk like kubectl's discovery cache (``discovery_cache_dir``); the cache is dropped on a miss and
after CRDs are applied (:meth:`Discovery.refresh`).

Namespaced-or-not always comes from here, never from the manifest: that is what keeps a
cluster-scoped object from being given a namespace (the Flux bug).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import difflib
import hashlib
import json
import os
import tempfile
import time
from collections import namedtuple

from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError, quote_name

AGGREGATED_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                     "application/json")
CACHE_TTL = 600


class ResourceInfo(namedtuple("ResourceInfo", ["group", "version", "kind", "plural", "namespaced", "verbs"])):
    """One API resource in one version."""

    __slots__ = ()

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def group_kind(self):
        return (self.group, self.kind)

    def base(self):
        return "/apis/%s/%s" % (self.group, self.version) if self.group else "/api/" + self.version

    def collection_path(self, namespace=None):
        """List path; ``namespace=None`` on a namespaced kind lists all namespaces."""
        if self.namespaced and namespace:
            return "%s/namespaces/%s/%s" % (self.base(), quote_name(namespace), self.plural)
        return "%s/%s" % (self.base(), self.plural)

    def object_path(self, namespace, name):
        return "%s/%s" % (self.collection_path(namespace if self.namespaced else None), quote_name(name))

    def can(self, verb):
        return verb in self.verbs


class UnknownKind(Exception):
    pass


def parse_aggregated(doc, failed=None):
    """Resources from an ``APIGroupDiscoveryList``: ``[ResourceInfo]`` (versions in preference order).

    Group-versions the server marks ``freshness: Stale`` (an aggregated API server that did not
    answer) are added to the set ``failed`` as ``group/version``, if given.
    """
    out = []
    for group_doc in doc.get("items") or []:
        group = (group_doc.get("metadata") or {}).get("name") or ""
        for ver in group_doc.get("versions") or []:
            version = ver.get("version")
            if failed is not None and ver.get("freshness") == "Stale":
                failed.add("%s/%s" % (group, version) if group else version)
            for res in ver.get("resources") or []:
                kind = (res.get("responseKind") or {}).get("kind")
                if not kind or "/" in (res.get("resource") or "/"):
                    continue
                out.append(ResourceInfo(group, version, kind, res["resource"], res.get("scope") == "Namespaced",
                                        tuple(res.get("verbs") or ())))
    return out


def parse_resource_list(group, version, doc):
    """Resources from an ``APIResourceList`` (legacy per group-version discovery)."""
    out = []
    for res in doc.get("resources") or []:
        name = res.get("name") or ""
        if "/" in name or not res.get("kind"):
            continue
        out.append(ResourceInfo(group, version, res["kind"], name, bool(res.get("namespaced")),
                                tuple(res.get("verbs") or ())))
    return out


class DiscoveryIndex:
    """Pure index over a list of :class:`ResourceInfo` (in preference order per group)."""

    def __init__(self, resources, failed=()):
        self.resources = list(resources)
        #: group-versions discovery could not read (unavailable aggregated APIs): their kinds are unknown
        self.failed = frozenset(failed)
        self._by_gk = {}
        for info in self.resources:
            versions = self._by_gk.setdefault((info.group, info.kind), [])
            # keep the first resource seen per version (a kind served by two resources is rare)
            if not any(v.version == info.version for v in versions):
                versions.append(info)

    def lookup(self, group, kind, version=None):
        """The resource for ``group``/``kind`` in ``version`` (or the preferred one); ``None`` if unknown."""
        versions = self._by_gk.get((group, kind))
        if not versions:
            return None
        if version is None:
            return versions[0]
        for info in versions:
            if info.version == version:
                return info
        return None

    def has_kind(self, group, kind):
        return (group, kind) in self._by_gk

    def unknown(self, group, kind, version=None):
        """Why ``group``/``kind`` (in ``version``) cannot be applied, with the apiVersions the cluster serves
        it in: a kind's version removed from Kubernetes, or a kind that moved to another group
        (``extensions/v1beta1`` Ingress)."""
        gk = kind + ("." + group if group else "")
        versions = self._by_gk.get((group, kind))
        if versions:
            return "%s is not served in version %s by this cluster (it serves apiVersion %s)" % (
                gk, version, ", ".join(v.api_version for v in versions))
        elsewhere = sorted(set(v[0].api_version for (g, k), v in self._by_gk.items() if k == kind and g != group))
        if elsewhere:
            hint = "; %s is served as apiVersion %s" % (kind, ", ".join(elsewhere))
        else:
            near = difflib.get_close_matches(kind, sorted(set(k for (g, k) in self._by_gk if g == group)), n=1,
                                             cutoff=0.75)
            hint = "; did you mean %s?" % near[0] if near else ""
        return "kind %s is not known to this cluster (no such API group/kind in discovery%s)" % (gk, hint)

    def listable(self):
        """Preferred-version resource for every (group, kind) that can be listed and deleted."""
        out = []
        for versions in self._by_gk.values():
            info = versions[0]
            if info.can("list") and info.can("delete"):
                out.append(info)
        return out

    def to_json(self):
        return [[*r[:5], list(r.verbs)] for r in self.resources]

    @classmethod
    def from_json(cls, data, failed=()):
        return cls((ResourceInfo(r[0], r[1], r[2], r[3], bool(r[4]), tuple(r[5])) for r in data), failed)

    def same_as(self, other):
        """True if ``other`` knows exactly the same resources (and the same failures)."""
        return other is not None and self.to_json() == other.to_json() and self.failed == other.failed


class Discovery:
    """Discovery for one run (thread-safe for reads once loaded)."""

    def __init__(self, client, cache_dir=None, ttl=CACHE_TTL, executor_map=map):
        self.client = client
        self.cache_dir = cache_dir
        self.ttl = ttl
        self._map = executor_map
        self._index = None
        self._failure = None  # an error of reading the index, raised by the next read (failed_with)
        self.fetches = 0
        self.from_cache = False  # the index in use was read from the disk cache

    # -- loading ----------------------------------------------------------------------------
    def _cache_file(self):
        if not self.cache_dir:
            return None
        key = hashlib.sha256(self.client.server.encode("utf-8")).hexdigest()[:16]
        return os.path.join(os.path.expanduser(self.cache_dir), "stacksync-discovery-%s.json" % key)

    def _load_cache(self):
        path = self._cache_file()
        if not path:
            return None
        try:
            with open(path) as f:
                data = json.load(f)
            if time.time() - data.get("time", 0) > self.ttl:
                return None
            return DiscoveryIndex.from_json(data["resources"], data.get("failed") or ())
        except (IOError, OSError, ValueError, KeyError, TypeError, IndexError):
            return None

    def _save_cache(self, index):
        path = self._cache_file()
        if not path:
            return
        try:
            directory = os.path.dirname(path)
            if not os.path.isdir(directory):
                os.makedirs(directory)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".stacksync-discovery")
            with os.fdopen(fd, "w") as f:
                json.dump({"time": time.time(), "server": self.client.server, "resources": index.to_json(),
                           "failed": sorted(index.failed)}, f)
            os.rename(tmp, path)
        except (IOError, OSError):
            pass

    def _drop_cache(self):
        path = self._cache_file()
        if path:
            with contextlib.suppress(OSError):
                os.remove(path)

    def _fetch(self):
        self.fetches += 1
        resources = []
        failed = set()
        aggregated = True
        for path in ("/api", "/apis"):
            status, headers, data = self.client.request("GET", path, accept=AGGREGATED_ACCEPT, raw=True)
            if status != 200:
                raise ApiError.from_response(status, data, "GET", path)
            ctype = headers.get("Content-Type") or ""
            doc = json.loads(data.decode("utf-8"))
            if "apidiscovery.k8s.io" not in ctype or doc.get("kind") not in (None, "APIGroupDiscoveryList"):
                aggregated = False
                break
            resources.extend(parse_aggregated(doc, failed))
        if aggregated:
            return DiscoveryIndex(resources, failed)
        return self._fetch_legacy()

    def _fetch_legacy(self):
        group_versions = [("", v) for v in (self.client.get("/api").get("versions") or [])]
        for group in self.client.get("/apis").get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("version")
            versions = [v.get("version") for v in group.get("versions") or []]
            versions.sort(key=lambda v: v != preferred)  # preferred first, stable otherwise
            group_versions.extend((group["name"], v) for v in versions)

        def fetch(gv):
            group, version = gv
            path = "/apis/%s/%s" % (group, version) if group else "/api/" + version
            try:
                return parse_resource_list(group, version, self.client.get(path)), None
            except ApiError as e:
                if e.status in (404, 503):  # an unavailable aggregated API: its kinds are unknown, like kubectl
                    return [], "%s/%s" % (group, version) if group else version
                raise

        resources = []
        failed = set()
        for chunk, problem in self._map(fetch, group_versions):
            resources.extend(chunk)
            if problem:
                failed.add(problem)
        return DiscoveryIndex(resources, failed)

    def failed_with(self, error):
        """Reading the index failed with ``error`` (:mod:`.prefetch`): the next read of :attr:`index` raises it again
        instead of asking the server, so a server that does not answer fails the run once, not twice."""
        self._failure = error

    @property
    def index(self):
        if self._index is None and self._failure is not None:
            error, self._failure = self._failure, None
            raise error
        if self._index is None:
            self._index = self._load_cache()
            self.from_cache = self._index is not None
            if self._index is None:
                self._index = self._fetch()
                self._save_cache(self._index)
        return self._index

    def refresh(self):
        """Forget what we know (and the disk cache) and read discovery again."""
        self._drop_cache()
        self._index = self._fetch()
        self.from_cache = False
        self._save_cache(self._index)
        return self._index

    def server_index(self):
        """The index as the server says it now: read again if it came from the disk cache.

        Every deletion is decided on this, never on the cache: a kind created since the cache was
        written is invisible in it. Returns ``(index, changed)``: ``changed`` if the cache differed.
        """
        if not self.from_cache and self._index is not None:
            return self._index, False
        cached = self._index
        index = self.refresh()
        return index, cached is not None and not index.same_as(cached)

    def invalidate(self):
        """After a failed run that used the disk cache: drop it, so the next run reads discovery afresh."""
        if self.from_cache:
            self._drop_cache()

    def kinds_changed(self):
        """This run deleted what serves kinds (a CRD, an APIService): forget the index and drop the disk
        cache, so neither this process's next stack nor the next run looks the gone kinds up there."""
        self._drop_cache()
        self._index = None
        self.from_cache = False

    # -- queries ----------------------------------------------------------------------------
    def lookup(self, group, kind, version=None):
        """Resolve, reading discovery again once if the answer came from the disk cache."""
        info = self.index.lookup(group, kind, version)
        if info is None and self.fetches == 0:
            info = self.refresh().lookup(group, kind, version)
        return info

    def resolve(self, group, kind, version=None):
        info = self.lookup(group, kind, version)
        if info is None:
            raise UnknownKind(self.index.unknown(group, kind, version))
        return info
